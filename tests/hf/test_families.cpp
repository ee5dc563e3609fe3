// Tests of the decoder families (lib/hf/families.h, pretrained.h) against transformers: for
// llama (llama3 rope, attention biases, bf16), mistral (sliding window, fp16 shards), qwen2 (q/k/v
// biases, a sliding layer), qwen3 (per-head q/k norms, head_dim ≠ width / heads, tied head),
// olmo2 (norms after each sublayer, q/k norms over all heads) and gpt_oss (learned sinks,
// alternating windows, yarn, mixture of experts in MXFP4), tiny random models made and run by
// tests/survey_modern_reference.py must give transformers' logits, per-head attention weights,
// read norms, sink share and the survey statistics computed there row by row; MXFP4 blocks
// dequantise as transformers does; bad checkpoints are refused naming the file. Each model is read
// both with its weights converted to float32 at load and kept as stored, converted block by block.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lib/base/error.h"
#include "lib/base/text.h"
#include "lib/hf/families.h"
#include "lib/hf/pretrained.h"
#include "lib/instruments/survey.h"
#include "lib/io/safetensors.h"
#include "lib/model/tensors.h"
#include "tests/support.h"

using Catch::Matchers::Contains;

namespace {

const std::vector<std::string> kModels = {"llama", "mistral", "qwen2", "qwen3", "olmo2", "gpt_oss"};
// Both ways of holding the weights: converted at load, and kept as stored (memory-mapped) and
// converted block by block while each runs (sg-survey's).
const std::vector<sg::WeightResidence> kResidences = {sg::WeightResidence::float32, sg::WeightResidence::per_block};

const std::string& fixtures() { return sg_test::families_fixtures(); }

double max_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

/// A copy of fixture `name` in `dir` with config.json's `key` set to `value` (null: removed).
void copy_with_config(const std::string& name, const std::string& dir, const std::string& key, const nlohmann::json& value) {
  const std::string source = fixtures() + "/" + name;
  REQUIRE(std::system(("cp -r '" + source + "/.' '" + dir + "'").c_str()) == 0);
  auto config = nlohmann::json::parse(sg_test::slurp(dir + "/config.json"));
  if (value.is_null()) config.erase(key);
  else config[key] = value;
  std::ofstream(dir + "/config.json") << config.dump(2);
}

}  // namespace

TEST_CASE("families: logits, attention, read norms and sinks match transformers", "[families][reference]") {
  for (const auto& name : kModels)
  for (const auto residence : kResidences) {
    INFO("model " << name << (residence == sg::WeightResidence::per_block ? ", weights per block" : ", weights in float32"));
    const auto model = sg::PretrainedModel::load(fixtures() + "/" + name, torch::kCPU, residence);
    const auto reference = sg::SafetensorsFile::open(fixtures() + "/" + name + ".reference.safetensors");
    const auto ids = sg::load_tensor(reference, "ids");
    CHECK(model.parameter_count() == std::stoll(reference.metadata().at("parameters")));
    const auto expected = sg::load_tensor(reference, "logits");
    const double fused = max_difference(model.forward(ids), expected);
    double attention = 0, norms = 0, phantom = 0;
    const auto logits = model.forward(ids, [&](int64_t layer, const sg::AttentionTelemetry& t) {
      const auto l = std::to_string(layer);
      attention = std::max(attention, max_difference(t.weights, sg::load_tensor(reference, "attention." + l)));
      norms = std::max(norms, max_difference(t.read_norms, sg::load_tensor(reference, "read_norms." + l)));
      CHECK(t.phantom_mass.defined() == model.config().sinks);
      if (t.phantom_mass.defined())
        phantom = std::max(phantom, max_difference(t.phantom_mass, sg::load_tensor(reference, "phantom." + l)));
    });
    const double explicit_error = max_difference(logits, expected);
    std::printf("%-8s %-9s max |logits - transformers| fused %.2e explicit %.2e; attention %.2e, read norms %.2e, sink %.2e\n",
                name.c_str(), residence == sg::WeightResidence::per_block ? "per-block" : "float32", fused, explicit_error,
                attention, norms, phantom);
    CHECK(fused < 1e-4);
    CHECK(explicit_error < 1e-4);
    CHECK(attention < 1e-5);
    CHECK(norms < 1e-5);
    CHECK(phantom < 1e-5);
  }
}

TEST_CASE("families: decoding with the key-value cache gives transformers' logits", "[families][reference]") {
  for (const auto& name : kModels)
  for (const auto residence : kResidences) {
    INFO("model " << name << (residence == sg::WeightResidence::per_block ? ", weights per block" : ", weights in float32"));
    const auto model = sg::PretrainedModel::load(fixtures() + "/" + name, torch::kCPU, residence);
    const auto reference = sg::SafetensorsFile::open(fixtures() + "/" + name + ".reference.safetensors");
    const auto ids = sg::load_tensor(reference, "ids");
    sg::PretrainedCache cache;
    std::vector<torch::Tensor> pieces;
    for (int64_t at = 0, take = 5; at < ids.size(1); at += take, take = take == 5 ? 3 : 5)
      pieces.push_back(model.head(model.hidden(ids.narrow(1, at, std::min(take, ids.size(1) - at)), cache)));
    CHECK(max_difference(torch::cat(pieces, 1), sg::load_tensor(reference, "logits")) < 1e-4);
  }
}

TEST_CASE("families: survey statistics match the row-by-row reference on transformers' outputs", "[families][reference]") {
  for (const auto& name : kModels)
  for (const auto residence : kResidences) {
    INFO("model " << name << (residence == sg::WeightResidence::per_block ? ", weights per block" : ", weights in float32"));
    const auto model = sg::PretrainedModel::load(fixtures() + "/" + name, torch::kCPU, residence);
    const auto reference = sg::SafetensorsFile::open(fixtures() + "/" + name + ".reference.safetensors");
    const auto& metadata = reference.metadata();
    std::vector<int64_t> windows;
    for (const auto& w : sg::split_list(metadata.at("windows"))) windows.push_back(std::stoll(w));
    CHECK(model.config().windows == windows);
    sg::SurveyOptions options;
    options.sink_positions = std::stoll(metadata.at("sink_positions"));
    options.percentiles.clear();
    for (const auto& q : sg::split_list(metadata.at("percentiles"))) options.percentiles.push_back(std::stoll(q));
    options.batch = 2;
    const auto heads = sg::survey_model(model, sg::load_tensor(reference, "ids"), options);
    const auto want = sg::load_tensor(reference, "statistics");  // (L, H, K)
    const auto names = sg::split_list(metadata.at("statistics"));
    REQUIRE(names == sg::statistic_names(options, model.config().sinks));
    double worst = 0;
    for (const auto& h : heads) {
      std::vector<double> got{h.sink_mass, h.position0_mass};
      if (model.config().sinks) got.push_back(h.zero_option_mass);
      got.push_back(h.r0_ratio);
      got.insert(got.end(), h.blind_ratio.begin(), h.blind_ratio.end());
      got.insert(got.end(), h.content_share.begin(), h.content_share.end());
      for (size_t s = 0; s < names.size(); ++s)
        worst = std::max(worst, std::abs(got[s] - want[h.layer][h.head][static_cast<int64_t>(s)].item<double>()));
    }
    std::printf("%-8s max |statistic - reference| %.2e (%s)\n", name.c_str(), worst, model.config().attention_kind().c_str());
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("families: MXFP4 blocks dequantise as transformers does", "[families][reference]") {
  const auto file = sg::SafetensorsFile::open(fixtures() + "/mxfp4.safetensors");
  const auto got = sg::dequantize_mxfp4(sg::load_tensor(file, "blocks"), sg::load_tensor(file, "scales"), "mxfp4");
  const auto want = sg::load_tensor(file, "dequantised");
  REQUIRE(got.sizes() == want.sizes());
  CHECK(torch::equal(got, want));
  CHECK_THROWS_WITH(sg::dequantize_mxfp4(sg::load_tensor(file, "blocks"), sg::load_tensor(file, "scales").narrow(2, 0, 1), "x.safetensors"),
                    Contains("x.safetensors") && Contains("disagree"));
}

TEST_CASE("families: the rotary frequencies of llama3 and yarn", "[families]") {
  sg::RopeConfig rope;
  rope.type = sg::RopeType::llama3;
  rope.factor = 8, rope.original_positions = 8192;
  const auto standard = sg::rotary_inverse_frequencies(sg::RopeConfig{}, 16);
  const auto scaled = sg::rotary_inverse_frequencies(rope, 16);
  CHECK(scaled[0].item<double>() == Approx(standard[0].item<double>()));  // a short wavelength: kept
  CHECK(scaled[7].item<double>() == Approx(standard[7].item<double>() / 8));  // a long one: divided by the factor
}

TEST_CASE("families: bad checkpoints are refused naming the file", "[families][errors]") {
  SECTION("an unknown model_type, with the list of supported ones") {
    sg_test::Scratch scratch;
    copy_with_config("llama", scratch.dir, "model_type", "gemma3");
    try {
      sg::PretrainedModel::load(scratch.dir, torch::kCPU);
      FAIL("no error");
    } catch (const sg::InputError& e) {
      CHECK_THAT(e.what(), Contains(scratch.dir + "/config.json") && Contains("'gemma3' is not supported"));
      CHECK_THAT(e.hint(), Contains("llama") && Contains("qwen3") && Contains("olmo2") && Contains("gpt_oss"));
    }
  }
  SECTION("an unknown rope type") {
    sg_test::Scratch scratch;
    copy_with_config("llama", scratch.dir, "rope_parameters", {{"rope_type", "longrope"}, {"rope_theta", 10000.0}});
    CHECK_THROWS_WITH(sg::PretrainedModel::load(scratch.dir, torch::kCPU), Contains("config.json") && Contains("longrope"));
  }
  SECTION("attention biases where the family has none") {
    sg_test::Scratch scratch;
    copy_with_config("mistral", scratch.dir, "attention_bias", true);
    CHECK_THROWS_WITH(sg::PretrainedModel::load(scratch.dir, torch::kCPU), Contains("config.json") && Contains("attention_bias"));
  }
  SECTION("a missing tensor") {
    sg_test::Scratch scratch;
    // qwen2 always has q/k/v biases: mistral's tensors lack them.
    copy_with_config("mistral", scratch.dir, "model_type", "qwen2");
    CHECK_THROWS_WITH(sg::PretrainedModel::load(scratch.dir, torch::kCPU), Contains("q_proj.bias"));
  }
  SECTION("a wrong shape") {
    sg_test::Scratch scratch;
    copy_with_config("gpt_oss", scratch.dir, "num_key_value_heads", 4);
    CHECK_THROWS_WITH(sg::PretrainedModel::load(scratch.dir, torch::kCPU), Contains("model.safetensors") && Contains("k_proj"));
  }
}
