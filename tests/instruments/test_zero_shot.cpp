// test_zero_shot.cpp — lib/instruments/zero_shot against tests/zero_shot_reference.py, an
// independent Python implementation of lm-evaluation-harness's rules on transformers' float64
// forward pass (small random GPT-2 and GPT-NeoX folders with their own vocabularies, task files
// with a multi-token target, a context with a trailing space, HellaSwag's [title] and brackets,
// WikiText pages longer than the context): every request's tokens, log-likelihood (≤ 1e-4
// nats) and greedy flag, the preprocessing, and the metrics. Run files of every arm family are
// checked against a float64 copy of the model scored one request at a time here. Also: the
// rolling windows of lm-eval's docstring, the Table 11 distance on hand-made passages with the
// GPT-2 vocabulary, and the readers' errors.
#include "lib/instruments/zero_shot.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "lib/base/error.h"
#include "lib/run/config.h"
#include "lib/model/tensors.h"
#include "lib/text/python_string.h"
#include "tests/support.h"

using Catch::Matchers::Contains;

namespace {

using json = nlohmann::json;

const std::string& fixtures() { return sg_test::zero_shot_fixtures(); }

json reference(const std::string& name) { return json::parse(sg_test::slurp(fixtures() + "/" + name + ".reference.json")); }

std::vector<int32_t> ids(const json& list) { return list.get<std::vector<int32_t>>(); }

/// The example rows of one task, in order.
struct Rows {
  const sg::ResultTable& table;
  double loglik(size_t r) const { return table.column("loglik").reals[r]; }
  int64_t integer(const std::string& name, size_t r) const { return table.column(name).integers[r]; }
  std::string text(const std::string& name, size_t r) const { return table.column(name).strings[r]; }
};

const sg::Metric& metric(const sg::TaskResult& result, const std::string& name, const std::string& bin = "all") {
  for (const auto& m : result.metrics)
    if (m.metric == name && m.bin == bin) return m;
  FAIL("no metric " << name << " (" << bin << ")");
  return result.metrics.front();
}

}  // namespace

TEST_CASE("zero-shot tasks on transformers' GPT-2 and GPT-NeoX agree with the lm-eval reference", "[reference]") {
  for (const std::string name : {"gpt2", "neox"}) {
    INFO("model " << name);
    const auto expected = reference(name);
    const auto model = sg::LanguageModel::load(fixtures() + "/" + name, torch::kCPU);
    REQUIRE(model.context_length() == expected["max_length"].get<int64_t>());
    REQUIRE(model.tokenizer().eot_id() == expected["prefix_token"].get<int32_t>());
    sg::ScoringOptions scoring;
    scoring.batch_size = 5;  // batches of different lengths, right-padded
    double worst = 0;

    // LAMBADA: the requests' tokens, log-likelihoods, greedy flags, distances; then the metrics.
    const auto passages = sg::read_lambada(fixtures() + "/lambada.jsonl");
    const auto& lambada = expected["lambada"];
    REQUIRE(passages.size() == lambada.size());
    for (size_t i = 0; i < passages.size(); ++i) {
      const auto asked = sg::lambada_request(model.tokenizer(), passages[i]);
      CHECK(asked.request.context == ids(lambada[i]["context_tokens"]));
      CHECK(asked.request.continuation == ids(lambada[i]["continuation_tokens"]));
    }
    const auto result = sg::evaluate_lambada(model, passages, scoring);
    const Rows rows{result.examples};
    REQUIRE(result.examples.rows() == passages.size());
    std::vector<double> greedy, loglik;
    for (size_t i = 0; i < passages.size(); ++i) {
      INFO("passage " << i << ": " << passages[i]);
      worst = std::max(worst, std::abs(rows.loglik(i) - lambada[i]["loglik"].get<double>()));
      CHECK(rows.loglik(i) == Approx(lambada[i]["loglik"].get<double>()).margin(1e-4));
      CHECK(rows.integer("greedy", i) == (lambada[i]["greedy"].get<bool>() ? 1 : 0));
      CHECK(rows.integer("distance", i) == (lambada[i]["distance"].is_null() ? -1 : lambada[i]["distance"].get<int64_t>()));
      CHECK(rows.text("bin", i) == lambada[i]["bin"].get<std::string>());
      greedy.push_back(static_cast<double>(rows.integer("greedy", i)));
      loglik.push_back(rows.loglik(i));
    }
    const auto& lm = expected["lambada_metrics"];
    CHECK(metric(result, "acc").value == Approx(lm["acc"].get<double>()).epsilon(1e-12));
    CHECK(metric(result, "perplexity").value == Approx(lm["ppl"].get<double>()).epsilon(1e-4));
    // The aggregation itself, exactly, from our own per-example values.
    double sum = 0;
    for (const double v : loglik) sum += v;
    CHECK(metric(result, "perplexity").value == Approx(std::exp(-sum / static_cast<double>(loglik.size()))).epsilon(1e-12));
    for (const std::string bin : {"absent", "1-32", "33-96", ">96"}) {
      INFO("bin " << bin);
      CHECK(metric(result, "acc", bin).n == lm["bins"][bin]["n"].get<int64_t>());
      if (lm["bins"][bin]["n"].get<int64_t>() > 0)
        CHECK(metric(result, "acc", bin).value == Approx(lm["bins"][bin]["acc"].get<double>()).epsilon(1e-12));
    }

    // HellaSwag: the query and choices after preprocessing, each choice's tokens and
    // log-likelihood, acc and acc_norm per item.
    const auto items = sg::read_hellaswag(fixtures() + "/hellaswag.jsonl");
    const auto& hellaswag = expected["hellaswag"];
    REQUIRE(items.size() == hellaswag.size());
    for (size_t i = 0; i < items.size(); ++i) {
      CHECK(sg::hellaswag_query(items[i]) == hellaswag[i]["query"].get<std::string>());
      CHECK(sg::hellaswag_choices(items[i]) == hellaswag[i]["choices"].get<std::vector<std::string>>());
      CHECK(items[i].label == hellaswag[i]["gold"].get<int64_t>());
      const auto choices = sg::hellaswag_choices(items[i]);
      for (size_t c = 0; c < choices.size(); ++c)
        CHECK(sg::encode_pair(model.tokenizer(), sg::hellaswag_query(items[i]), " " + choices[c]).continuation ==
              ids(hellaswag[i]["continuation_tokens"][c]));
    }
    const auto hs = sg::evaluate_hellaswag(model, items, scoring);
    const Rows hs_rows{hs.examples};
    double acc = 0, acc_norm = 0;
    for (size_t i = 0, r = 0; i < items.size(); ++i) {
      INFO("item " << i);
      std::vector<double> lls, normalised;
      for (size_t c = 0; c < items[i].endings.size(); ++c, ++r) {
        const double want = hellaswag[i]["logliks"][c].get<double>();
        worst = std::max(worst, std::abs(hs_rows.loglik(r) - want));
        CHECK(hs_rows.loglik(r) == Approx(want).margin(1e-4));
        lls.push_back(hs_rows.loglik(r));
        normalised.push_back(hs_rows.loglik(r) / static_cast<double>(hs_rows.integer("characters", r)));
      }
      const auto argmax = [](const std::vector<double>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
      CHECK((argmax(lls) == items[i].label ? 1 : 0) == hellaswag[i]["acc"].get<int>());
      CHECK((argmax(normalised) == items[i].label ? 1 : 0) == hellaswag[i]["acc_norm"].get<int>());
      acc += hellaswag[i]["acc"].get<double>() / static_cast<double>(items.size());
      acc_norm += hellaswag[i]["acc_norm"].get<double>() / static_cast<double>(items.size());
    }
    CHECK(metric(hs, "acc").value == Approx(expected["hellaswag_metrics"]["acc"].get<double>()).epsilon(1e-12));
    CHECK(metric(hs, "acc_norm").value == Approx(expected["hellaswag_metrics"]["acc_norm"].get<double>()).epsilon(1e-12));
    CHECK(metric(hs, "acc").value == Approx(acc).epsilon(1e-12));
    CHECK(metric(hs, "acc_norm").value == Approx(acc_norm).epsilon(1e-12));

    // WikiText: the document split, the detokenizer, the rolling log-likelihood per page, the
    // word and byte counts, and the corpus perplexities.
    const auto pages = sg::read_wikitext(fixtures() + "/wiki.test.raw");
    const auto& wikitext = expected["wikitext"];
    REQUIRE(pages.size() == wikitext.size());
    for (size_t p = 0; p < pages.size(); ++p) {
      CHECK(pages[p] == wikitext[p]["page"].get<std::string>());
      CHECK(sg::wikitext_detokenize(pages[p]) == wikitext[p]["detokenized"].get<std::string>());
      const auto tokens = model.tokenizer().encode(sg::wikitext_detokenize(pages[p]));
      CHECK(static_cast<int64_t>(sg::rolling_windows(tokens, model.tokenizer().eot_id(), model.context_length()).size()) ==
            wikitext[p]["windows"].get<int64_t>());
    }
    const auto wt = sg::evaluate_wikitext(model, pages, scoring);
    const Rows wt_rows{wt.examples};
    for (size_t p = 0; p < pages.size(); ++p) {
      INFO("page " << p);
      const double want = wikitext[p]["loglik"].get<double>();
      worst = std::max(worst, std::abs(wt_rows.loglik(p) - want));
      CHECK(wt_rows.loglik(p) == Approx(want).margin(1e-4));
      CHECK(wt_rows.integer("continuation_tokens", p) == wikitext[p]["tokens"].get<int64_t>());
      CHECK(wt_rows.integer("words", p) == wikitext[p]["words"].get<int64_t>());
      CHECK(wt_rows.integer("bytes", p) == wikitext[p]["bytes"].get<int64_t>());
    }
    const auto& wm = expected["wikitext_metrics"];
    for (const std::string name_of : {"word_perplexity", "byte_perplexity", "bits_per_byte", "token_perplexity"})
      CHECK(metric(wt, name_of).value == Approx(wm[name_of].get<double>()).epsilon(1e-5));
    CHECK(metric(wt, "ppl").value == metric(wt, "word_perplexity").value);
    CHECK(metric(wt, "word_perplexity").n == wm["words"].get<int64_t>());
    CHECK(metric(wt, "byte_perplexity").n == wm["bytes"].get<int64_t>());
    CHECK(metric(wt, "token_perplexity").n == wm["tokens"].get<int64_t>());
    std::printf("%-5s max |loglik - reference| over every request %.2e nats\n", name.c_str(), worst);

    // Batching does not change a score.
    scoring.batch_size = 1;
    const auto one_by_one = sg::evaluate_lambada(model, passages, scoring);
    for (size_t i = 0; i < passages.size(); ++i)
      CHECK(Rows{one_by_one.examples}.loglik(i) == Approx(rows.loglik(i)).margin(1e-5));
  }
}

TEST_CASE("run files of every arm family: batched scores equal a float64 model scored request by request") {
  const std::string vocabulary = fixtures() + "/gpt2";  // its tokenizer (601 ids)
  const auto tokenizer = sg::Tokenizer::load(vocabulary);
  // Requests of every task, some longer than the context of 24 (truncated on the left).
  std::vector<sg::Request> requests;
  for (const auto& passage : sg::read_lambada(fixtures() + "/lambada.jsonl"))
    requests.push_back(sg::lambada_request(tokenizer, passage).request);
  const auto items = sg::read_hellaswag(fixtures() + "/hellaswag.jsonl");
  for (const auto& choice : sg::hellaswag_choices(items[0]))
    requests.push_back(sg::encode_pair(tokenizer, sg::hellaswag_query(items[0]), " " + choice));
  const auto page = tokenizer.encode(sg::wikitext_detokenize(sg::read_wikitext(fixtures() + "/wiki.test.raw")[0]));
  for (auto& window : sg::rolling_windows(std::vector<int32_t>(page.begin(), page.begin() + 60), tokenizer.eot_id(), 24))
    requests.push_back(window);
  for (const std::string arm : {"baseline", "offbyone", "sinklogit", "sinktoken", "normgate", "renorm", "projgate", "combo2"}) {
    INFO("arm " << arm);
    auto config = sg::make_run_config("tiny", arm, 0);
    sg::apply_overrides(config, {"n_layer=2", "n_embd=32", "n_head=2", "block_size=24", "vocab_size=601"});
    auto model = sg::build_model(config.model, 3);
    {
      torch::NoGradGuard no_grad;
      torch::manual_seed(4);
      for (const auto& item : model->named_parameters()) {
        if (item.key().find("gate_w") != std::string::npos) item.value().normal_(0.0, 3.0);
        if (item.key().find("gate_tau") != std::string::npos) item.value().fill_(0.55);
        if (item.key().find("sink_logit") != std::string::npos) item.value().fill_(1.0);
        if (item.key().find("wte") != std::string::npos) item.value().mul_(20.0);  // confident, so argmax is stable
      }
    }
    auto reference_model = sg::build_model(config.model, 3);
    {
      torch::NoGradGuard no_grad;
      auto source = model->named_parameters();
      for (auto& item : reference_model->named_parameters()) item.value().copy_(source[item.key()]);
    }
    reference_model->to(torch::kFloat64);
    reference_model->eval();
    const auto language_model = sg::LanguageModel::wrap(model, config, vocabulary, "test/" + arm);
    sg::ScoringOptions scoring;
    scoring.batch_size = 4;
    const auto scores = sg::score_requests(language_model, requests, scoring);
    double worst = 0;
    torch::NoGradGuard no_grad;
    for (size_t r = 0; r < requests.size(); ++r) {
      // The rule, here by hand: (context + continuation)[-(L + 1):][:-1] in, the last
      // len(continuation) positions scored.
      std::vector<int64_t> all(requests[r].context.begin(), requests[r].context.end());
      all.insert(all.end(), requests[r].continuation.begin(), requests[r].continuation.end());
      if (all.size() > 25) all.erase(all.begin(), all.end() - 25);
      const auto input = torch::tensor(std::vector<int64_t>(all.begin(), all.end() - 1), torch::kLong).unsqueeze(0);
      const auto log_probs = torch::log_softmax(reference_model->forward(input)[0], -1);  // (T, V) float64
      const auto length = static_cast<int64_t>(all.size()) - 1;
      const auto scored = static_cast<int64_t>(requests[r].continuation.size());
      double loglik = 0;
      bool greedy = true;
      for (int64_t t = length - scored; t < length; ++t) {
        loglik += log_probs[t][all[static_cast<size_t>(t + 1)]].item<double>();
        greedy = greedy && log_probs[t].argmax().item<int64_t>() == all[static_cast<size_t>(t + 1)];
      }
      worst = std::max(worst, std::abs(scores[r].loglik - loglik));
      CHECK(scores[r].loglik == Approx(loglik).margin(1e-4));
      CHECK(scores[r].greedy == greedy);
    }
    std::printf("%-9s max |loglik - float64 reference| %.2e nats over %zu requests\n", arm.c_str(), worst, requests.size());
  }
}

TEST_CASE("rolling windows: lm-eval's docstring example") {
  // Tokens 0..9, prefix 99, max length 4: inputs [99 0 1 2], [3 4 5 6], [5 6 7 8]; predictions
  // 0-3, 4-7, 8-9 (utils.py get_rolling_token_windows; disjoint contexts).
  std::vector<int32_t> tokens(10);
  for (int32_t i = 0; i < 10; ++i) tokens[static_cast<size_t>(i)] = i;
  const auto windows = sg::rolling_windows(tokens, 99, 4);
  REQUIRE(windows.size() == 3);
  CHECK(windows[0].context == std::vector<int32_t>{99});
  CHECK(windows[0].continuation == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(windows[1].context == std::vector<int32_t>{3});
  CHECK(windows[1].continuation == std::vector<int32_t>{4, 5, 6, 7});
  CHECK(windows[2].context == std::vector<int32_t>{5, 6, 7});
  CHECK(windows[2].continuation == std::vector<int32_t>{8, 9});
  CHECK(sg::rolling_windows({}, 99, 4).empty());
  CHECK(sg::rolling_windows({7}, 99, 4).size() == 1);
}

TEST_CASE("Table 11's distance on hand-made passages (GPT-2 vocabulary)") {
  const auto tokenizer = sg::Tokenizer::load(SG_GPT2_VOCAB);
  const auto distance = [&](const std::string& passage) {
    const auto asked = sg::lambada_request(tokenizer, passage);
    return sg::recurrence_distance(tokenizer, asked.context, asked.word, asked.request);
  };
  // " a" is one GPT-2 token: "dog" + k × " a" + " dog" puts the earlier "dog" k + 1 tokens back.
  std::string filler;
  for (int k = 0; k < 31; ++k) filler += " a";
  CHECK(distance("dog" + filler + " dog") == 32);
  CHECK(sg::distance_bin(32) == "1-32");
  CHECK(distance("dog" + filler + " a dog") == 33);
  CHECK(sg::distance_bin(33) == "33-96");
  CHECK(distance("the dog dog") == 1);                      // adjacent
  CHECK(distance("the cat sat") == -1);                     // absent
  CHECK(sg::distance_bin(-1) == "absent");
  CHECK(distance("Dog days are here, said the dog") == -1);  // case-sensitive
  CHECK(distance("he said \"dog,\" to the dog") == 4);      // punctuation stripped: tokens he, said, ' "', dog
  CHECK(distance("a dog, a dog and the dog") == 3);         // the most recent occurrence
  CHECK(sg::distance_bin(97) == ">96");
}

TEST_CASE("task files with missing fields, bad labels, no records or no file are refused, naming the file") {
  sg_test::Scratch scratch;
  const auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(scratch / name) << content;
    return scratch / name;
  };
  CHECK_THROWS_WITH(sg::read_lambada(write("empty.jsonl", "")), Contains("empty.jsonl: holds no records"));
  CHECK_THROWS_WITH(sg::read_lambada(write("nofield.jsonl", "{\"text\": \"a b\"}\n{\"passage\": \"c d\"}\n")),
                    Contains("nofield.jsonl: line 2 has no \"text\" field"));
  CHECK_THROWS_WITH(sg::read_lambada(write("bad.jsonl", "{\"text\": \"a b\"\n")), Contains("bad.jsonl: line 1: not valid JSON"));
  CHECK_THROWS_WITH(sg::read_lambada(scratch / "absent.jsonl"), Contains("absent.jsonl: cannot be read"));
  const std::string item = R"({"activity_label": "A", "ctx_a": "b", "ctx_b": "c", "endings": ["x", "y"], "label": )";
  CHECK_THROWS_WITH(sg::read_hellaswag(write("label.jsonl", item + "\"5\"}\n")),
                    Contains("label.jsonl: line 1: label 5 is not one of the 2 endings"));
  CHECK_THROWS_WITH(sg::read_hellaswag(write("test-split.jsonl", item + "\"\"}\n")), Contains("\"label\" is not an integer"));
  CHECK_THROWS_WITH(
      sg::read_hellaswag(write("noend.jsonl", R"({"activity_label": "A", "ctx_a": "b", "ctx_b": "c", "label": 0})" "\n")),
      Contains("noend.jsonl: line 1: \"endings\" is missing"));
  CHECK_THROWS_WITH(sg::read_wikitext(write("wiki.raw", "")), Contains("wiki.raw: is empty"));
  CHECK(sg::read_hellaswag(write("ok.jsonl", item + "1}\n"))[0].label == 1);
}

TEST_CASE("WikiText: a CRLF copy of the raw file and the line-level JSON Lines give the raw file's pages") {
  sg_test::Scratch scratch;
  const std::string raw = sg_test::slurp(fixtures() + "/wiki.test.raw");
  const auto pages = sg::read_wikitext(fixtures() + "/wiki.test.raw");
  std::ofstream(scratch / "crlf.raw", std::ios::binary) << sg::python_replace(raw, "\n", "\r\n");
  CHECK(sg::read_wikitext(scratch / "crlf.raw") == pages);
  // Salesforce/wikitext's rows: each line with its "\n", the blank lines " \n" stored as "".
  {
    std::ofstream out(scratch / "lines.jsonl");
    size_t start = 0;
    while (start < raw.size()) {
      const size_t end = raw.find('\n', start);
      const std::string line = raw.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
      out << nlohmann::json({{"text", line == " \n" ? std::string() : line}}).dump() << "\n";
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  CHECK(sg::read_wikitext(scratch / "lines.jsonl") == pages);
}

TEST_CASE("a model and data of different vocabularies are refused") {
  // The GPT-NeoX fixture's tokenizer (500 ids, end-of-text 0) against a token file of GPT-2 ids.
  sg_test::Scratch scratch;
  sg_test::write_random_tokens(scratch / "gpt2.h5", 50257, 4000, 2000);
  const auto model = sg::LanguageModel::load(fixtures() + "/neox", torch::kCPU);
  CHECK_THROWS_WITH(sg::window_loss(model, sg::TokenFile::open(scratch / "gpt2.h5"), 16, 2, 1234, 2),
                    Contains("gpt2.h5: its ids are not those of") && Contains("neox"));
  // A tokenizer with more ids than the model: GPT-2's 50257 for a model of 601.
  auto config = sg::make_run_config("tiny", "baseline", 0);
  sg::apply_overrides(config, {"n_layer=1", "n_embd=16", "n_head=2", "block_size=16", "vocab_size=601"});
  CHECK_THROWS_WITH(sg::LanguageModel::wrap(sg::build_model(config.model, 0), config, SG_GPT2_VOCAB, "small"),
                    Contains("more token ids than the vocabulary of 601"));
}

TEST_CASE("validation loss of a checkpoint on a token file of its own ids: the mean cross-entropy computed here") {
  // A token file of the GPT-2 fixture's ids (vocab 601, end-of-text 600), scored through
  // window_loss and by hand with the float64 forward pass of the same windows.
  sg_test::Scratch scratch;
  sg_test::write_random_tokens(scratch / "own.h5", 601, 3000, 1500);
  const auto model = sg::LanguageModel::load(fixtures() + "/gpt2", torch::kCPU);
  const auto tokens = sg::TokenFile::open(scratch / "own.h5");
  const double loss = sg::window_loss(model, tokens, 32, 6, 1234, 4);
  const auto batch = sg::sample_batch(tokens, sg::Split::val, 1234, 0, 6, 32);
  const auto logits = model.head(model.hidden(batch.inputs)).to(torch::kFloat64);  // (6, 32, V)
  const double expected =
      torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), batch.targets.reshape({-1})).item<double>();
  CHECK(loss == Approx(expected).epsilon(1e-6));
}
