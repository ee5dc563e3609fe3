// Tests of lib/hf/export (sg-export's folders), against transformers, HF tokenizers and tiktoken
// through tests/hf_export_reference.py: for every arm the exported folder gives sinkgate's logits
// (max |diff| <= 1e-5 in float32), attention weights and cached greedy tokens; the tokenizer files
// equal an independent conversion of the rank file and give tiktoken's ids; the folder's layout,
// and the refusals (a file for DIR, a non-empty DIR, another vocabulary) leave nothing behind.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "lib/base/error.h"
#include "lib/hf/export.h"
#include "lib/hf/hf_layout.h"
#include "lib/hf/language_model.h"
#include "lib/hf/pretrained.h"
#include "lib/io/safetensors.h"
#include "lib/model/checkpoint.h"
#include "lib/model/model.h"
#include "lib/text/tokenizer.h"
#include "lib/text/tokenizer_record.h"
#include "tests/support.h"

namespace {

constexpr int64_t kBatch = 2, kLength = 12, kPrompt = 5, kGreedy = 10;

/// GPT-2's first 1,000 ranks written to `path`: a rank file of its own (each token merges two lower
/// ranks), whose 1,001-token model (the end-of-text token last) exports and loads in a fraction of
/// GPT-2's time. Returns `path`.
std::string small_rank_file(const std::string& path) {
  std::ifstream gpt2(SG_GPT2_VOCAB);
  std::string line, ranks;
  for (int i = 0; i < 1000 && std::getline(gpt2, line); ++i) ranks += line + "\n";
  sg_test::write_bytes(path, ranks);
  return path;
}

/// A small model of the arm on GPT-2's vocabulary (or on the rank file `vocabulary`, recorded in the
/// run as sg-train records it), with every LayerNorm and arm parameter moved off its initial value
/// (so that a wrong mapping or a missing gate shows), saved as a run file.
sg::RunState small_run(const std::string& arm, const std::string& path, sg::GPT* out_model,
                       const std::string& vocabulary = "") {
  sg::RunState state;
  state.config = sg::make_run_config("tiny", arm, 3);
  sg::apply_overrides(state.config, {"n_layer=2", "n_embd=64", "n_head=4", "block_size=32"});
  if (!vocabulary.empty()) {
    const auto tokenizer = sg::Tokenizer::load(vocabulary);
    sg::apply_overrides(state.config, {"vocab_size=" + std::to_string(tokenizer.vocab_size())});
    state.tokenizer = sg::TokenizerRecord::of(tokenizer);
  }
  auto model = sg::build_model(state.config.model, 7);
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(11);
    for (auto& item : model->named_parameters()) {
      const auto& name = item.key();
      auto& p = item.value();
      if (name.find("ln_") != std::string::npos) p.add_(torch::randn_like(p) * 0.2);
      if (name.find("sink_logit") != std::string::npos) p.copy_(torch::randn_like(p) * 1.5);
      if (name.find("gate_tau") != std::string::npos) p.copy_(torch::randn_like(p) * 0.3 + 0.1);
      if (name.find("gate_w") != std::string::npos) p.copy_(torch::randn_like(p) * 2.0);
      if (name.find("gate_b") != std::string::npos) p.copy_(torch::randn_like(p));
      if (name.find("out_gate") != std::string::npos) p.copy_(torch::randn_like(p) * 0.5);
      if (name == "sink_token") p.copy_(torch::randn_like(p));
    }
  }
  sg::save_run(path, true, *model, nullptr, state, sg::Provenance{});
  if (out_model) *out_model = model;
  return state;
}

sg::ExportOptions options(bool force = false) {
  sg::ExportOptions result;
  result.force = force;
  result.vocabulary = SG_GPT2_VOCAB;
  result.provenance.version = "test";
  result.provenance.command_line = "test_export";
  return result;
}

/// sinkgate's numbers for the reference script: ids, logits (fused path), layer 0's attention
/// weights on the real keys (explicit path), and greedy tokens decoded with the key-value cache.
void write_reference(sg::GPTImpl& model, int64_t vocab_size, bool sink_token, const std::string& path) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  const auto ids = torch::randint(0, vocab_size, {kBatch, kLength}, torch::kLong);
  const auto logits = model.forward(ids).contiguous();
  std::vector<sg::AttentionTelemetry> slots;
  auto hooks = std::make_shared<sg::AttentionHooks>();
  hooks->telemetry = sg::store_telemetry(slots);
  model.set_hooks(hooks);
  model.forward(ids);
  model.set_hooks(nullptr);
  auto weights = slots.at(0).weights;  // (B, H, T, T), or (B, H, T + 1, T + 1) with the sink token
  if (sink_token) weights = weights.narrow(2, 1, kLength).narrow(3, 1, kLength);
  weights = weights.contiguous();
  const auto prompt = ids.narrow(0, 0, 1).narrow(1, 0, kPrompt).contiguous();
  sg::ModelCache cache;
  auto next = model.forward(prompt, &cache);
  std::vector<int64_t> greedy;
  for (int64_t i = 0; i < kGreedy; ++i) {
    const auto token = next.index({0, -1}).argmax().item<int64_t>();
    greedy.push_back(token);
    next = model.forward(torch::full({1, 1}, token, torch::kLong), &cache);
  }
  const auto greedy_tensor = torch::tensor(greedy, torch::kLong);
  const std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"ids", ids}, {"logits", logits}, {"weights", weights}, {"prompt", prompt}, {"greedy", greedy_tensor}};
  std::vector<sg::SafetensorsEntry> entries;
  for (const auto& [name, tensor] : tensors) {
    sg::SafetensorsEntry entry;
    entry.name = name;
    entry.dtype = tensor.scalar_type() == torch::kLong ? sg::SafetensorsDtype::I64 : sg::SafetensorsDtype::F32;
    entry.shape = tensor.sizes().vec();
    entries.push_back(entry);
  }
  sg::SafetensorsWriter writer(path, entries, {{"format", "pt"}});
  for (const auto& [name, tensor] : tensors)
    writer.write(name, tensor.data_ptr(), static_cast<uint64_t>(tensor.numel() * tensor.element_size()));
  writer.finish();
}

/// Runs the reference script; returns its standard output (REQUIREs exit status 0).
std::string reference(const std::string& arguments) {
  const std::string line = sg_test::shell_quote(SG_PYTHON) + " " +
                           sg_test::shell_quote(std::string(SG_TEST_SOURCE_DIR) + "/hf_export_reference.py") + " " +
                           arguments + " 2>&1";
  INFO("reference command: " << line);
  std::string output;
  FILE* pipe = popen(line.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  INFO(output);
  REQUIRE(status == 0);
  return output;
}

double field(const std::string& text, const std::string& name) {
  const auto at = text.find(name + "=");
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + name.size() + 1));
}

}  // namespace

TEST_CASE("export: every arm's folder gives sinkgate's logits, weights and cached greedy tokens in transformers",
          "[export][reference]") {
  sg_test::Scratch scratch;
  const std::vector<std::string> arms = {"baseline", "offbyone", "sinklogit", "sinktoken", "normgate", "renorm",
                                         "projgate", "combo", "combo2", "sinktoken+projgate", "offbyone+renorm",
                                         "sinktoken+renorm", "keygate", "outgate", "sinklogit+outgate-elem",
                                         "combo2+outgate", "sinktoken+keygate+outgate"};
  // On a vocabulary of 1,001 tokens: the logits, weights and cache do not depend on its size, and
  // the tokenizer files of GPT-2's are checked in the next test.
  const auto vocabulary = small_rank_file(scratch / "small.tiktoken");
  auto own = options();
  own.vocabulary = "";
  std::string arguments = "logits";
  for (const auto& arm : arms) {
    sg::GPT model{nullptr};
    const auto state = small_run(arm, scratch / (arm + ".h5"), &model, vocabulary);
    const auto summary = sg::export_run(scratch / (arm + ".h5"), scratch / arm, own);
    CHECK(summary.model_type == (arm == "baseline" ? "gpt2" : "sinkgate"));
    write_reference(*model, state.config.model.vocab_size, state.config.model.arm.zero == sg::ZeroOption::sinktoken,
                    scratch / (arm + ".ref"));
    arguments += " " + sg_test::shell_quote(scratch / arm) + " " + sg_test::shell_quote(scratch / (arm + ".ref"));
  }
  const auto output = reference(arguments);
  std::printf("%s", output.c_str());  // the differences, per arm, for ctest -V
  std::istringstream lines(output);
  std::string line;
  size_t checked = 0;
  while (std::getline(lines, line)) {
    if (line.find("max_abs_diff=") == std::string::npos) continue;
    INFO(arms.at(checked) << ": " << line);
    CHECK(field(line, "max_abs_diff") <= 1e-5);
    CHECK(field(line, "attention_diff") <= 1e-5);
    CHECK(line.find("generate=same") != std::string::npos);
    ++checked;
  }
  CHECK(checked == arms.size());
  INFO(output);
  // Every arm but the baseline refuses to load without trust_remote_code, in transformers' words.
  size_t refused = 0;
  for (size_t at = 0; (at = output.find("without trust_remote_code: refused", at)) != std::string::npos; ++at) ++refused;
  CHECK(refused == arms.size() - 1);
}

TEST_CASE("export: the tokenizer files are the rank file's and give tiktoken's ids", "[export][reference]") {
  sg_test::Scratch scratch;
  small_run("baseline", scratch / "run.h5", nullptr);
  sg::export_run(scratch / "run.h5", scratch / "out", options());
  CHECK_THAT(reference("tokenizer " + sg_test::shell_quote(SG_GPT2_VOCAB) + " " + sg_test::shell_quote(scratch / "out")),
             Catch::Contains("tokenizer: ok"));
  // sinkgate's own reader takes both forms and gives the rank file's ids.
  const auto ranks = sg::Tokenizer::load(SG_GPT2_VOCAB);
  const std::string text = "Héllo  world's 123 \n\t😀 naïve — ok";
  CHECK(sg::Tokenizer::load(scratch / "out/tokenizer.json").encode(text) == ranks.encode(text));
  CHECK(sg::Tokenizer::load(scratch / "out/vocab.json").encode(text) == ranks.encode(text));
}

TEST_CASE("export: a run on its own rank-file vocabulary exports files that give tiktoken's ids", "[export][reference]") {
  // GPT-2's first 1,000 ranks are a rank file of their own (each token merges two lower ranks).
  sg_test::Scratch scratch;
  std::ifstream gpt2(SG_GPT2_VOCAB);
  std::string line, ranks;
  for (int i = 0; i < 1000 && std::getline(gpt2, line); ++i) ranks += line + "\n";
  sg_test::write_bytes(scratch / "small.tiktoken", ranks);
  sg_test::write_bytes(scratch / "reference.tiktoken", ranks);
  const auto tokenizer = sg::Tokenizer::load(scratch / "small.tiktoken");
  REQUIRE(tokenizer.identity().kind == "tiktoken");
  sg::RunState state;
  state.config = sg::make_run_config("tiny", "combo2", 0);
  sg::apply_overrides(state.config, {"n_layer=1", "n_embd=16", "n_head=2", "block_size=8", "vocab_size=1001"});
  state.tokenizer = sg::TokenizerRecord::of(tokenizer);  // embedded, as sg-train records it
  auto model = sg::build_model(state.config.model, 1);
  sg::save_run(scratch / "run.h5", true, *model, nullptr, state, sg::Provenance{});
  REQUIRE(std::remove((scratch / "small.tiktoken").c_str()) == 0);  // the run file's copy alone
  auto own = options();
  own.vocabulary = "";
  const auto summary = sg::export_run(scratch / "run.h5", scratch / "out", own);
  CHECK(std::find(summary.files.begin(), summary.files.end(), "merges.txt") != summary.files.end());
  CHECK_THAT(reference("tokenizer " + sg_test::shell_quote(scratch / "reference.tiktoken") + " " +
                       sg_test::shell_quote(scratch / "out")),
             Catch::Contains("tokenizer: ok"));
  // Another vocabulary than the recorded one is refused, naming both.
  CHECK_THROWS_WITH(sg::export_run(scratch / "run.h5", scratch / "other", options()),
                    Catch::Contains("run.h5") && Catch::Contains(SG_GPT2_VOCAB));
}

TEST_CASE("export: model.safetensors holds GPT-2's names in Conv1D layout, and sinkgate reads the baseline back",
          "[export]") {
  sg_test::Scratch scratch;
  sg::GPT model{nullptr};
  small_run("baseline", scratch / "run.h5", &model);
  const auto summary = sg::export_run(scratch / "run.h5", scratch / "out", options());
  const auto file = sg::SafetensorsFile::open(scratch / "out/model.safetensors");
  CHECK(file.metadata().at("format") == "pt");
  CHECK_FALSE(file.contains("lm_head.weight"));  // tied to transformer.wte.weight
  const auto& c_attn = file.entry("transformer.h.1.attn.c_attn.weight");
  CHECK(c_attn.shape == std::vector<int64_t>{64, 192});  // (in, out)
  std::vector<float> values(static_cast<size_t>(c_attn.numel()));
  file.read("transformer.h.1.attn.c_attn.weight", values.data());
  const auto expected = model->blocks[1]->as<sg::Block>()->attn->c_attn->weight.detach().t().contiguous();
  CHECK(torch::equal(torch::from_blob(values.data(), {64, 192}).clone(), expected));
  std::vector<float> bias(192);
  file.read("transformer.h.1.attn.c_attn.bias", bias.data());
  CHECK(std::all_of(bias.begin(), bias.end(), [](float b) { return b == 0.0f; }));
  int64_t stored = 0;
  for (const auto& name : file.names()) stored += file.entry(name).numel();
  CHECK(stored == summary.parameters);
  CHECK(sg_test::exists(scratch / "out/README.md"));
  CHECK_FALSE(sg_test::exists(scratch / "out/modeling_sinkgate.py"));

  // The baseline export is a GPT-2 folder: sinkgate's pretrained reader gives the run's logits.
  const auto pretrained = sg::PretrainedModel::load(scratch / "out", torch::kCPU);
  CHECK_FALSE(pretrained.config().gelu_tanh);
  torch::NoGradGuard no_grad;
  const auto ids = torch::randint(0, 50257, {2, 20}, torch::kLong);
  CHECK((pretrained.forward(ids) - model->forward(ids)).abs().max().item<double>() <= 1e-5);

  // bfloat16: the same names, BF16 entries.
  sg::ExportOptions bf16 = options();
  bf16.dtype = "bfloat16";
  sg::export_run(scratch / "run.h5", scratch / "bf16", bf16);
  const auto half = sg::SafetensorsFile::open(scratch / "bf16/model.safetensors");
  CHECK(half.entry("transformer.wte.weight").dtype == sg::SafetensorsDtype::BF16);
  CHECK(half.names().size() == file.names().size());
}

TEST_CASE("export: refuses a file for DIR, a non-empty DIR without force and another vocabulary, leaving nothing",
          "[export]") {
  sg_test::Scratch scratch;
  // On the run's own small vocabulary (a cheaper export; the folder rules do not depend on it).
  small_run("combo2", scratch / "run.h5", nullptr, small_rank_file(scratch / "ranks.tiktoken"));
  const auto recorded = [](bool force) {
    auto result = options(force);
    result.vocabulary = "";
    return result;
  };
  sg_test::write_bytes(scratch / "file", "x");
  CHECK_THROWS_WITH(sg::export_run(scratch / "run.h5", scratch / "file", recorded(false)),
                    Catch::Contains("exists and is not a folder"));
  sg::export_run(scratch / "run.h5", scratch / "out", recorded(false));
  CHECK_THROWS_WITH(sg::export_run(scratch / "run.h5", scratch / "out", recorded(false)),
                    Catch::Contains("exists and is not empty"));
  sg_test::write_bytes(scratch / "out/extra.txt", "old");
  CHECK_NOTHROW(sg::export_run(scratch / "run.h5", scratch / "out/", recorded(/*force=*/true)));
  CHECK_FALSE(sg_test::exists(scratch / "out/extra.txt"));  // replaced whole
  CHECK(sg_test::exists(scratch / "out/modeling_sinkgate.py"));
  // An empty folder is simply filled.
  REQUIRE(mkdir((scratch / "empty").c_str(), 0777) == 0);
  CHECK_NOTHROW(sg::export_run(scratch / "run.h5", scratch / "empty", recorded(false)));
  CHECK_THROWS_AS(sg::export_run(scratch / "run.h5", scratch / "no/such/parent", recorded(false)), sg::OutputError);

  // A run of an older sinkgate (no tokenizer record) on another vocabulary than the one given:
  // refused before anything is written, naming the run and the vocabulary's size.
  sg::RunState state;
  state.config = sg::make_run_config("tiny", "baseline", 0);
  sg::apply_overrides(state.config, {"n_layer=1", "n_embd=16", "n_head=2", "block_size=8", "vocab_size=300"});
  auto small = sg::build_model(state.config.model, 1);
  sg::save_run(scratch / "small.h5", true, *small, nullptr, state, sg::Provenance{});
  CHECK_THROWS_WITH(sg::export_run(scratch / "small.h5", scratch / "small", options()),
                    Catch::Contains("small.h5") && Catch::Contains("50257"));
  sg::ExportOptions unnamed = options();
  unnamed.vocabulary = "";
  CHECK_THROWS_WITH(sg::export_run(scratch / "small.h5", scratch / "small", unnamed),
                    Catch::Contains("small.h5") && Catch::Contains("does not record which"));
  // A damaged run file: the reader's InputError; nothing is left behind in either case.
  sg_test::write_bytes(scratch / "damaged.h5", "not an HDF5 file");
  CHECK_THROWS_AS(sg::export_run(scratch / "damaged.h5", scratch / "damaged", options()), sg::InputError);
  for (const auto& name : {"small", "damaged"}) CHECK_FALSE(sg_test::exists(scratch / name));
  CHECK(std::system(("ls " + sg_test::shell_quote(scratch.dir) + " | grep -q '\\.tmp\\.'").c_str()) != 0);
}

TEST_CASE("export: a parent folder that cannot be written is refused with the reason", "[export]") {
  sg_test::Scratch scratch;
  const std::string parent = scratch / "read-only";
  REQUIRE(mkdir(parent.c_str(), 0777) == 0);
  // Root writes through a folder's mode bits: there, a read-only file system.
  const bool root = geteuid() == 0;
  if (root && std::system(("mount -t tmpfs -o ro,size=64k tmpfs " + sg_test::shell_quote(parent) + " 2>/dev/null").c_str()) != 0) {
    WARN("SKIPPED: running as root, and no read-only tmpfs can be mounted here");
    return;
  }
  if (!root) REQUIRE(chmod(parent.c_str(), 0555) == 0);
  std::string message;
  try {
    sg::check_export_folder(parent + "/export", /*force=*/false);
  } catch (const sg::OutputError& error) {
    message = error.what();
  }
  if (root) REQUIRE(std::system(("umount " + sg_test::shell_quote(parent)).c_str()) == 0);
  else chmod(parent.c_str(), 0755);
  CHECK_THAT(message, Catch::Contains(parent + ": cannot be written: ") &&
                          Catch::Contains(root ? "Read-only file system" : "Permission denied"));
}

TEST_CASE("export: the name table covers every arm's parameters, one tensor name each", "[export]") {
  // Every arm of the arm table (lib/run/arm.h): a parameter without an export name fails here by name,
  // and each arm parameter is exported under the table's export name, as sinkgate stores it.
  for (const auto& arm : sg::all_arms()) {
    auto config = sg::make_run_config("tiny", arm.name(), 0).model;
    INFO(config.arm.name());
    std::vector<sg::HfTensor> tensors;
    REQUIRE_NOTHROW(tensors = sg::hf_tensors(config));
    std::set<std::string> names, parameters;
    std::map<std::string, std::pair<std::string, std::vector<int64_t>>> exported;  // parameter -> (name, shape)
    for (const auto& tensor : tensors) {
      CHECK(names.insert(tensor.name).second);
      CHECK(tensor.name.rfind("transformer.", 0) == 0);
      if (!tensor.parameter.empty()) parameters.insert(tensor.parameter);
      if (!tensor.parameter.empty()) exported[tensor.parameter] = {tensor.name, tensor.shape};
    }
    CHECK(parameters.size() == config.parameter_shapes().size());
    for (const auto& parameter : sg::arm_parameters(config.arm))
      for (int64_t layer = 0; layer < (parameter.per_layer ? config.n_layer : 1); ++layer) {
        const auto stored = parameter.stored_name(layer);
        INFO(stored);
        REQUIRE(exported.count(stored));
        CHECK(exported.at(stored).first == (parameter.per_layer ? "transformer.h." + std::to_string(layer) + "." : std::string("transformer.")) +
                                               parameter.export_name);
        CHECK(exported.at(stored).second == parameter.shape_of(config.n_head, config.head_dim(), config.n_embd));
      }
  }
}

// (The nine arms' tiny trained runs go through sg-eval, sg-sample and sg-survey in
// tests/cli/cli_sg-export.cmake; here the baseline and two ZERO+FILTER pairs.)
TEST_CASE("export: sinkgate reads an arm's folder back as the run's model", "[export]") {
  sg_test::Scratch scratch;
  const auto vocabulary = small_rank_file(scratch / "small.tiktoken");  // 1,001 tokens: a cheaper folder
  auto own = options();
  own.vocabulary = "";
  for (const std::string arm : {"baseline", "sinktoken+projgate", "offbyone+renorm"}) {
    INFO(arm);
    sg::GPT model{nullptr};
    const auto state = small_run(arm, scratch / (arm + ".h5"), &model, vocabulary);
    sg::export_run(scratch / (arm + ".h5"), scratch / arm, own);
    const auto folder = sg::LanguageModel::load(scratch / arm, torch::kCPU);
    CHECK(folder.has_run());
    CHECK(folder.pretrained() == (arm == "baseline"));
    CHECK(folder.family() == (arm == "baseline" ? "gpt2" : "sinkgate"));
    const auto& config = folder.run_state().config;
    CHECK(config.model.arm == state.config.model.arm);
    CHECK(sg::to_fields(config) == sg::to_fields(state.config));
    torch::NoGradGuard no_grad;
    model->eval();
    const auto ids = torch::randint(0, state.config.model.vocab_size, {2, 20}, torch::kLong);
    const auto expected = model->forward(ids);
    CHECK((folder.head(folder.hidden(ids)) - expected).abs().max().item<double>() <= 1e-5);
    if (!folder.pretrained()) {
      // The same parameters, exactly (float32 both ways).
      auto read = folder.run_model().named_parameters();
      for (const auto& item : model->named_parameters()) CHECK(torch::equal(read[item.key()], item.value()));
    }
    // A folder of the first sg-export, without the run's configuration: still the run's arm and
    // model, with the tier's training settings.
    const auto config_path = scratch / (arm + "/config.json");
    auto edited = nlohmann::json::parse(sg_test::slurp(config_path));
    edited["sinkgate"].erase("config");
    sg_test::write_bytes(config_path, edited.dump(2));
    const auto older = sg::LanguageModel::load(scratch / arm, torch::kCPU);
    CHECK(older.run_state().config.model.arm == state.config.model.arm);
    CHECK(older.run_state().config.train.final_eval_batches == state.config.train.final_eval_batches);
    CHECK((older.head(older.hidden(ids)) - expected).abs().max().item<double>() <= 1e-5);
  }
}
