// test_generation.cpp — lib/instruments/generation: cached greedy generation equals argmax
// generation by full forward passes written here, token for token, for every arm (gates that
// discriminate, a sink logit that is not zero); the filters' distributions against the
// renormalised softmax computed here; seeds.
#include "lib/instruments/generation.h"

#include <ATen/CPUGeneratorImpl.h>

#include <map>

#include "lib/base/error.h"
#include "lib/run/arm.h"
#include "lib/run/config.h"
#include "tests/support.h"

namespace {

sg::RunConfig small_run(const std::string& arm) {
  auto config = sg::make_run_config("tiny", arm, 0);
  sg::apply_overrides(config, {"n_layer=2", "n_embd=32", "n_head=2", "block_size=24", "vocab_size=50257"});
  return config;
}

/// Gates that discriminate and a sink logit away from zero, so that a cache holding the wrong
/// (ungated) reads would change the tokens.
sg::GPT perturbed_model(const sg::RunConfig& config) {
  auto model = sg::build_model(config.model, 7);
  torch::NoGradGuard no_grad;
  torch::manual_seed(8);
  for (const auto& item : model->named_parameters()) {
    const auto& name = item.key();
    if (name.find("gate_w") != std::string::npos) item.value().normal_(0.0, 3.0);
    if (name.find("gate_b") != std::string::npos) item.value().fill_(0.0);
    if (name.find("gate_tau") != std::string::npos) item.value().fill_(0.55);
    if (name.find("sink_logit") != std::string::npos) item.value().fill_(1.5);
    if (name.find("c_attn") != std::string::npos || name.find("attn.c_proj") != std::string::npos) item.value().mul_(5.0);
  }
  return model;
}

}  // namespace

TEST_CASE("cached greedy generation equals argmax of full forward passes, every arm") {
  for (const auto& arm : sg::paper_arm_names()) {
    INFO("arm " << arm);
    const auto config = small_run(arm);
    auto model = perturbed_model(config);
    const auto language_model = sg::LanguageModel::wrap(model, config, SG_GPT2_VOCAB, "test/" + arm);
    const auto prompt = language_model.tokenizer().encode("The cat sat on");
    sg::SamplingOptions options;
    options.temperature = 0;
    options.max_tokens = 100;  // more than fit: generation stops at the context (24 positions)
    options.stop_at_end_of_text = false;
    const auto cached = sg::generate(language_model, prompt, options);
    // The reference: the whole sequence through GPTImpl::forward at every step, argmax last.
    std::vector<int64_t> sequence(prompt.begin(), prompt.end());
    std::vector<int32_t> expected;
    {
      torch::NoGradGuard no_grad;
      while (static_cast<int64_t>(sequence.size()) < config.model.block_size) {
        const auto logits = model->forward(torch::tensor(sequence, torch::kLong).unsqueeze(0));  // (1, T, V)
        const auto next = logits[0][static_cast<int64_t>(sequence.size()) - 1].argmax().item<int64_t>();
        sequence.push_back(next);
        expected.push_back(static_cast<int32_t>(next));
      }
    }
    CHECK(cached == expected);
    CHECK(static_cast<int64_t>(cached.size()) == config.model.block_size - static_cast<int64_t>(prompt.size()));
    options.use_cache = false;
    CHECK(sg::generate(language_model, prompt, options) == expected);
  }
}

TEST_CASE("seeded sampling repeats, top-k 1 and a tiny top-p are greedy") {
  const auto config = small_run("combo");
  const auto model = sg::LanguageModel::wrap(perturbed_model(config), config, SG_GPT2_VOCAB, "test/combo");
  const auto prompt = model.tokenizer().encode("Hello");
  sg::SamplingOptions options;
  options.max_tokens = 12;
  options.stop_at_end_of_text = false;
  options.temperature = 0;
  const auto greedy = sg::generate(model, prompt, options);
  options.temperature = 1.0;
  options.seed = 3;
  const auto first = sg::generate(model, prompt, options);
  CHECK(sg::generate(model, prompt, options) == first);
  options.seed = 4;
  CHECK(sg::generate(model, prompt, options) != first);
  options.top_k = 1;
  CHECK(sg::generate(model, prompt, options) == greedy);
  options.top_k = 0;
  options.top_p = 1e-9;
  CHECK(sg::generate(model, prompt, options) == greedy);
}

TEST_CASE("the filters draw from the renormalised softmax") {
  // Probabilities 0.5, 0.3, 0.15, 0.05 (logits = their logs).
  const std::vector<double> p = {0.5, 0.3, 0.15, 0.05};
  auto logits = torch::log(torch::tensor(p, torch::kFloat64));
  auto frequencies = [&](const sg::SamplingOptions& options) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(11);
    std::vector<double> counts(p.size(), 0.0);
    const int draws = 20000;
    for (int i = 0; i < draws; ++i) counts[static_cast<size_t>(sg::choose_token(logits, options, generator))] += 1.0 / draws;
    return counts;
  };
  sg::SamplingOptions options;
  SECTION("no filter") {
    const auto f = frequencies(options);
    for (size_t i = 0; i < p.size(); ++i) CHECK(f[i] == Approx(p[i]).margin(0.015));
  }
  SECTION("top-k 2: 0.5 and 0.3 renormalised") {
    options.top_k = 2;
    const auto f = frequencies(options);
    CHECK(f[0] == Approx(0.625).margin(0.015));
    CHECK(f[1] == Approx(0.375).margin(0.015));
    CHECK(f[2] == 0.0);
    CHECK(f[3] == 0.0);
  }
  SECTION("top-p 0.75: the smallest set reaching 0.75 is {0.5, 0.3}") {
    options.top_p = 0.75;
    const auto f = frequencies(options);
    CHECK(f[0] == Approx(0.625).margin(0.015));
    CHECK(f[2] == 0.0);
    CHECK(f[3] == 0.0);
  }
  SECTION("temperature 2 flattens: p^(1/2) renormalised") {
    options.temperature = 2.0;
    const auto f = frequencies(options);
    double total = 0;
    for (const double q : p) total += std::sqrt(q);
    for (size_t i = 0; i < p.size(); ++i) CHECK(f[i] == Approx(std::sqrt(p[i]) / total).margin(0.015));
  }
  SECTION("bad options") {
    options.top_p = 0;
    CHECK_THROWS_AS(options.validate(), sg::UsageError);
    options.top_p = 1;
    options.temperature = -1;
    CHECK_THROWS_AS(options.validate(), sg::UsageError);
  }
}
