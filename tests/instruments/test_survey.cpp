// Tests of lib/instruments/survey (App. F): the statistics against a brute-force, row-by-row computation on
// random causal attention (with a phantom, with a sink token), hand-computed answers, the
// behaviour the appendix states (norm-blind routing gives a blind-mass ratio of one; routing that
// avoids quiet reads gives a ratio near zero), the Python reference of tests/survey_reference.py
// on transformers' own attention and values, sinkgate models of several arms, token blocks, and
// the result table that sg-tabulate renders as Table 12.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>

#include "lib/analysis/tabulate.h"
#include "lib/base/error.h"
#include "lib/hf/pretrained.h"
#include "lib/instruments/survey.h"
#include "lib/io/provenance.h"
#include "lib/io/safetensors.h"
#include "lib/model/model.h"
#include "lib/model/tensors.h"
#include "lib/run/config.h"
#include "tests/support.h"

using Catch::Matchers::Contains;

namespace {



const std::string& fixtures() { return sg_test::survey_fixtures(); }

struct Expected {
  double sink = 0, position0 = 0, zero = 0, r0 = 0;
  std::vector<double> blind, content;
};

/// App. F computed row by row for head h: every query i >= S of every block, every key, with the
/// quiet band from a stable sort of the pooled non-sink read norms. weights (B, H, K, K) and
/// norms (B, H, K) float64, K = E + T; phantom (B, H, K) float64 or undefined.
Expected brute_force(const torch::Tensor& weights, const torch::Tensor& norms, const torch::Tensor& phantom, int64_t extra,
                     int64_t sink, const std::vector<int64_t>& percentiles, int64_t h) {
  const auto w = weights.accessor<double, 4>();
  const auto r = norms.accessor<double, 3>();
  const int64_t blocks = weights.size(0), keys = weights.size(3), first = extra + sink;
  Expected e;
  double rows = 0;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = first; i < keys; ++i) {
      const double p = phantom.defined() ? phantom[b][h][i].item<double>() : 0.0;
      double sink_row = p, zero_row = p;
      for (int64_t k = 0; k < first; ++k) sink_row += w[b][h][i][k];
      for (int64_t k = 0; k < extra; ++k) zero_row += w[b][h][i][k];
      e.sink += sink_row;
      e.zero += zero_row;
      e.position0 += w[b][h][i][extra];
      rows += 1;
    }
  e.sink /= rows, e.zero /= rows, e.position0 /= rows;
  struct Read { double norm; int64_t block, key; };
  std::vector<Read> pool;
  double r0 = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    r0 += r[b][h][extra];
    for (int64_t j = first; j < keys; ++j) pool.push_back({r[b][h][j], b, j});
  }
  const double pool_mean = std::accumulate(pool.begin(), pool.end(), 0.0, [](double s, const Read& x) { return s + x.norm; }) /
                           static_cast<double>(pool.size());
  e.r0 = (r0 / static_cast<double>(blocks)) / pool_mean;
  auto sorted = pool;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Read& a, const Read& b) { return a.norm < b.norm; });
  const auto n = static_cast<int64_t>(pool.size());
  for (auto q : percentiles) {
    const auto k = static_cast<int64_t>(std::floor(static_cast<double>(q) * n / 100.0 + 0.5));
    std::vector<std::vector<bool>> quiet(blocks, std::vector<bool>(keys, false));
    for (int64_t x = 0; x < k; ++x) quiet[sorted[x].block][sorted[x].key] = true;
    double mass = 0, mass_quiet = 0, content = 0, content_quiet = 0;
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t i = first; i < keys; ++i)
        for (int64_t j = first; j <= i; ++j) {
          mass += w[b][h][i][j];
          content += w[b][h][i][j] * r[b][h][j];
          if (quiet[b][j]) mass_quiet += w[b][h][i][j], content_quiet += w[b][h][i][j] * r[b][h][j];
        }
    e.blind.push_back(mass_quiet / mass / (static_cast<double>(k) / static_cast<double>(n)));
    e.content.push_back(content_quiet / content);
  }
  return e;
}

/// Causal softmax weights (B, H, K, K) of logits, float64, with a phantom column of logit
/// `phantom_logit` when asked (its mass returned in *phantom).
torch::Tensor causal_softmax(const torch::Tensor& logits, bool with_phantom, torch::Tensor* phantom, double phantom_logit = 0) {
  const int64_t keys = logits.size(-1);
  const auto future = torch::ones({keys, keys}, torch::kBool).triu(1);
  auto masked = logits.masked_fill(future, -INFINITY);
  if (!with_phantom) return torch::softmax(masked, -1);
  auto column = torch::full({logits.size(0), logits.size(1), keys, 1}, phantom_logit, logits.options());
  const auto probs = torch::softmax(torch::cat({masked, column}, -1), -1);
  *phantom = probs.select(-1, keys).contiguous();
  return probs.narrow(-1, 0, keys).contiguous();
}

void check_head(const sg::HeadIncidence& got, const Expected& want, bool zero_option, double tolerance) {
  CHECK(got.sink_mass == Approx(want.sink).margin(tolerance));
  CHECK(got.position0_mass == Approx(want.position0).margin(tolerance));
  if (zero_option) CHECK(got.zero_option_mass == Approx(want.zero).margin(tolerance));
  CHECK(got.r0_ratio == Approx(want.r0).margin(tolerance));
  REQUIRE(got.blind_ratio.size() == want.blind.size());
  for (size_t p = 0; p < want.blind.size(); ++p) {
    CHECK(got.blind_ratio[p] == Approx(want.blind[p]).margin(tolerance));
    CHECK(got.content_share[p] == Approx(want.content[p]).margin(tolerance));
  }
}

}  // namespace

TEST_CASE("survey: hand-computed answers on uniform causal attention", "[survey]") {
  // T = 4, S = 2: pool = positions 2, 3; q = 50 puts the quieter of them (position 3) in the band.
  sg::SurveyOptions options;
  options.sink_positions = 2;
  options.percentiles = {50};
  const auto weights = causal_softmax(torch::zeros({1, 1, 4, 4}, torch::kFloat64), false, nullptr);
  const auto norms = torch::tensor({0.5, 9.0, 2.0, 1.0}, torch::kFloat64).view({1, 1, 4});
  sg::IncidenceAccumulator survey(1, 1, options);
  survey.add(0, weights, norms, {});
  const auto heads = survey.finish(false);
  REQUIRE(heads.size() == 1);
  const auto& h = heads[0];
  CHECK(h.sink_mass == Approx((2.0 / 3 + 2.0 / 4) / 2));    // queries 2 and 3
  CHECK(h.position0_mass == Approx((1.0 / 3 + 1.0 / 4) / 2));
  CHECK(h.r0_ratio == Approx(0.5 / 1.5));
  // Key 2 receives 1/3 + 1/4, key 3 receives 1/4; band fraction 1/2.
  CHECK(h.blind_ratio[0] == Approx((3.0 / 12) / (10.0 / 12) / 0.5));
  CHECK(h.content_share[0] == Approx((3.0 / 12 * 1.0) / (7.0 / 12 * 2.0 + 3.0 / 12 * 1.0)));
  CHECK(std::isnan(h.zero_option_mass));
}

TEST_CASE("survey: the accumulator equals a row-by-row computation", "[survey]") {
  torch::manual_seed(3);
  const std::vector<int64_t> percentiles{10, 25, 30, 50};
  sg::SurveyOptions options;
  options.percentiles = percentiles;
  for (int64_t extra : {0, 1})
    for (bool with_phantom : {false, true}) {
      INFO("extra positions " << extra << ", phantom " << with_phantom);
      const int64_t batches = 3, blocks = 2, heads = 3, keys = extra + 20;
      sg::IncidenceAccumulator survey(1, heads, options);
      std::vector<torch::Tensor> all_weights, all_norms, all_phantom;
      for (int64_t step = 0; step < batches; ++step) {  // several forward passes accumulate
        torch::Tensor phantom;
        const auto weights = causal_softmax(2 * torch::randn({blocks, heads, keys, keys}, torch::kFloat64), with_phantom,
                                            &phantom, 0.5);
        const auto norms = torch::rand({blocks, heads, keys}, torch::kFloat64) + 0.1;
        survey.add(0, weights.to(torch::kFloat32), norms.to(torch::kFloat32), with_phantom ? phantom.to(torch::kFloat32) : torch::Tensor(), extra);
        all_weights.push_back(weights.to(torch::kFloat32).to(torch::kFloat64));
        all_norms.push_back(norms.to(torch::kFloat32).to(torch::kFloat64));
        if (with_phantom) all_phantom.push_back(phantom.to(torch::kFloat32).to(torch::kFloat64));
      }
      const auto weights = torch::cat(all_weights), norms = torch::cat(all_norms);
      const auto phantom = with_phantom ? torch::cat(all_phantom) : torch::Tensor();
      const auto got = survey.finish(/*zero_option=*/true);
      REQUIRE(got.size() == static_cast<size_t>(heads));
      for (int64_t h = 0; h < heads; ++h)
        check_head(got[h], brute_force(weights, norms, phantom, extra, 4, percentiles, h), true, 1e-9);
    }
}

TEST_CASE("survey: norm-blind routing gives a blind-mass ratio of one, norm-aware routing does not", "[survey]") {
  torch::manual_seed(11);
  const int64_t blocks = 16, heads = 8, length = 256;
  sg::SurveyOptions options;
  const auto norms = torch::exp(0.5 * torch::randn({blocks, heads, length}, torch::kFloat32));  // log-normal reads
  SECTION("routing independent of the reads") {
    const auto weights = causal_softmax(torch::randn({blocks, heads, length, length}, torch::kFloat32), false, nullptr);
    sg::IncidenceAccumulator survey(1, heads, options);
    survey.add(0, weights, norms, {});
    const auto got = survey.finish(false);
    for (size_t p = 0; p < options.percentiles.size(); ++p) {
      std::vector<double> ratios;
      for (const auto& h : got) ratios.push_back(h.blind_ratio[p]);
      const double mean = sg::finite_mean(ratios);
      INFO("percentile " << options.percentiles[p] << ": mean blind-mass ratio over heads " << mean);
      CHECK(mean == Approx(1.0).margin(0.05));
      for (double r : ratios) CHECK(r == Approx(1.0).margin(0.25));
    }
  }
  SECTION("routing that avoids quiet reads") {
    const auto logits = 20 * norms.unsqueeze(2).expand({blocks, heads, length, length});
    sg::IncidenceAccumulator survey(1, heads, options);
    survey.add(0, causal_softmax(logits.contiguous(), false, nullptr), norms, {});
    for (const auto& h : survey.finish(false)) {
      CHECK(h.blind_ratio[2] < 0.05);
      CHECK(h.content_share[2] < 0.05);
    }
  }
  SECTION("routing that seeks quiet reads") {
    const auto logits = -20 * norms.unsqueeze(2).expand({blocks, heads, length, length});
    sg::IncidenceAccumulator survey(1, heads, options);
    survey.add(0, causal_softmax(logits.contiguous(), false, nullptr), norms, {});
    for (const auto& h : survey.finish(false)) CHECK(h.blind_ratio[2] > 3.0);  // at most 100/30
  }
}

TEST_CASE("survey: statistics match the Python reference on transformers' attention and values", "[survey][reference]") {
  for (const std::string name : {"gpt2-tied", "gpt2-hub-bf16", "neox-parallel", "neox-sequential", "neox-fp16-sharded"}) {
    INFO("model " << name);
    const auto model = sg::PretrainedModel::load(fixtures() + "/" + name, torch::kCPU);
    const auto reference = sg::SafetensorsFile::open(fixtures() + "/" + name + ".reference.safetensors");
    sg::SurveyOptions options;
    options.sink_positions = std::stoll(reference.metadata().at("sink_positions"));
    options.percentiles.clear();
    for (const auto& q : sg::split_list(reference.metadata().at("percentiles"))) options.percentiles.push_back(std::stoll(q));
    options.batch = 2;  // 3 blocks: a batch of two and one of one
    const auto heads = sg::survey_model(model, sg::load_tensor(reference, "ids"), options);
    const auto want = sg::load_tensor(reference, "statistics");  // (L, H, K)
    const auto names = sg::split_list(reference.metadata().at("statistics"));
    REQUIRE(names == sg::statistic_names(options, false));
    REQUIRE(static_cast<int64_t>(heads.size()) == want.size(0) * want.size(1));
    double worst = 0;
    for (const auto& h : heads) {
      std::vector<double> got{h.sink_mass, h.position0_mass, h.r0_ratio};
      got.insert(got.end(), h.blind_ratio.begin(), h.blind_ratio.end());
      got.insert(got.end(), h.content_share.begin(), h.content_share.end());
      for (size_t s = 0; s < got.size(); ++s) {
        const double expected = want[h.layer][h.head][static_cast<int64_t>(s)].item<double>();
        INFO("layer " << h.layer << " head " << h.head << " " << names[s]);
        CHECK(got[s] == Approx(expected).margin(1e-5));
        worst = std::max(worst, std::abs(got[s] - expected));
      }
    }
    std::printf("%-18s max |statistic - Python reference| %.2e\n", name.c_str(), worst);
  }
}

TEST_CASE("survey: sinkgate models — the phantom and the sink token count as sink mass", "[survey]") {
  for (const std::string arm : {"baseline", "sinklogit", "sinktoken", "offbyone+normgate"}) {
    INFO("arm " << arm);
    sg::ModelConfig config;
    config.n_layer = 2;
    config.n_head = 2;
    config.n_embd = 32;
    config.block_size = 24;
    config.vocab_size = 64;
    config.arm = sg::parse_arm(arm);
    auto model = sg::build_model(config, 5);
    if (config.arm.zero == sg::ZeroOption::sinklogit) {
      torch::NoGradGuard no_grad;
      for (auto& p : model->named_parameters())
        if (p.key().find("sink_logit") != std::string::npos) p.value().fill_(1.5);  // a visible phantom share
    }
    const auto blocks = torch::randint(0, 64, {3, 24}, torch::kInt64);
    sg::SurveyOptions options;
    options.batch = 2;
    const auto got = sg::survey_model(*model, blocks, options);

    // The telemetry again, by hand, and the row-by-row computation on it.
    std::vector<sg::AttentionTelemetry> telemetry;
    auto hooks = std::make_shared<sg::AttentionHooks>();
    hooks->telemetry = sg::store_telemetry(telemetry);
    model->set_hooks(hooks);
    {
      torch::NoGradGuard no_grad;
      model->hidden(blocks);
    }
    model->set_hooks(nullptr);
    const int64_t extra = config.arm.zero == sg::ZeroOption::sinktoken ? 1 : 0;
    const bool zero_option = config.arm.zero != sg::ZeroOption::none;
    REQUIRE(got.size() == 4);
    for (const auto& h : got) {
      const auto& t = telemetry[h.layer];
      CHECK(t.weights.size(-1) == 24 + extra);
      const auto phantom = t.phantom_mass.defined() ? t.phantom_mass.to(torch::kFloat64) : torch::Tensor();
      const auto want = brute_force(t.weights.to(torch::kFloat64), t.read_norms.to(torch::kFloat64), phantom, extra, 4,
                                    options.percentiles, h.head);
      check_head(h, want, zero_option, 1e-6);
      if (zero_option) CHECK(h.zero_option_mass > 0.01);
      else CHECK(std::isnan(h.zero_option_mass));
    }
  }
}

TEST_CASE("survey: blocks are consecutive, non-overlapping chunks", "[survey]") {
  std::vector<int32_t> ids(50);
  std::iota(ids.begin(), ids.end(), 0);
  const auto blocks = sg::token_blocks(ids, 3, 16, "text");
  CHECK(blocks.sizes() == torch::IntArrayRef({3, 16}));
  CHECK(blocks[1][0].item<int64_t>() == 16);
  CHECK(blocks[2][15].item<int64_t>() == 47);
  CHECK_THROWS_WITH(sg::token_blocks(ids, 4, 16, "wiki.valid.raw"), Contains("wiki.valid.raw") && Contains("50 tokens"));
}

TEST_CASE("survey: the result table holds every head and the Table 12 summaries", "[survey]") {
  sg::SurveyOptions options;
  std::vector<sg::HeadIncidence> heads;
  const std::vector<double> r0{0.1, 0.4, 0.2, 0.9};
  for (int64_t i = 0; i < 4; ++i) {
    sg::HeadIncidence h;
    h.layer = i / 2, h.head = i % 2;
    h.sink_mass = 0.1 * (i + 1);
    h.position0_mass = 0.05;
    h.zero_option_mass = std::nan("");
    h.r0_ratio = r0[i];
    h.blind_ratio = {1, 1, 1.0 + i, 1};
    h.content_share = {0.1, 0.2, 0.3, 0.5};
    heads.push_back(h);
  }
  auto table = sg::survey_table();
  sg::SurveyedModel model{"gpt2", "gpt2", "baseline", "mha", 124439808, 2, 2, false};
  sg::append_survey(table, model, heads, options);
  const auto names = sg::statistic_names(options, false);
  CHECK(table.rows() == (heads.size() + 1) * names.size());
  const auto summary = table.where("scope", {"model"});
  auto value = [&](const std::string& statistic) {
    const auto row = summary.where("statistic", {statistic});
    REQUIRE(row.rows() == 1);
    return row.column("value").number(0);
  };
  CHECK(value("sink_mass") == Approx(0.25));              // mean over heads
  CHECK(value("r0_ratio") == Approx(0.3));                // median over heads: (0.2 + 0.4) / 2
  CHECK(value("blind_ratio_p30") == Approx(2.5));
  CHECK(value("content_share_p30") == Approx(0.3));
  CHECK(summary.column("params_m").number(0) == 124);
  CHECK(summary.column("layer").number(0) == -1);

  sg::TabulateOptions render;
  render.rows = {"model", "params_m", "layers", "heads"};
  render.cols = {"statistic"};
  render.cell = "value";
  render.se = "none";
  const auto text = sg::render(table.where("scope", {"model"}).where("statistic", {"sink_mass", "r0_ratio"}), render);
  CHECK_THAT(text, Contains("| gpt2 | 124 | 2 | 2 | 0.2500 | 0.3000 |"));
}

TEST_CASE("survey: options are checked", "[survey]") {
  sg::SurveyOptions options;
  options.percentiles = {0};
  CHECK_THROWS_AS(options.validate(), sg::UsageError);
  options.percentiles = {30};
  options.sink_positions = 0;
  CHECK_THROWS_AS(options.validate(), sg::UsageError);
  options.sink_positions = 4;
  sg::IncidenceAccumulator survey(1, 1, options);
  CHECK_THROWS_AS(survey.add(0, torch::ones({1, 1, 4, 4}), torch::ones({1, 1, 4}), {}), sg::UsageError);  // T <= S
  CHECK(sg::finite_median({3, std::nan(""), 1, 2}) == 2);
  CHECK(std::isnan(sg::finite_mean({})));
}
