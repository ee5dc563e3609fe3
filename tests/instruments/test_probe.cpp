// Tests of lib/instruments/probe (and the gate overrides of lib/model/attention it drives): the
// overrides on a hand-built row, the trained-gate loss against sg-eval's and sg-inject's losses,
// sinks on a model built to put every query's mass on position 0 and against telemetry recomputed
// here in float64, selectivity, token gates and kurtosis against naive float64 computations.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/instruments/injection.h"
#include "lib/instruments/probe.h"
#include "lib/model/model.h"
#include "lib/train/train.h"
#include "tests/support.h"

namespace {

constexpr int64_t kVocab = 61;

sg::RunConfig small_run(const std::string& arm, int64_t layers = 2) {
  auto config = sg::make_run_config("tiny", arm, 0);
  sg::apply_overrides(config, {"n_layer=" + std::to_string(layers), "n_embd=32", "n_head=2", "block_size=16",
                               "vocab_size=" + std::to_string(kVocab), "micro_batch=4", "final_eval_batches=2"});
  return config;
}

/// A model whose attention matters (reads and output projection scaled up), whose gates
/// discriminate (tau_h near the median read norm, w_h != 0) and whose sink logit is not zero, so
/// that every override changes the loss.
sg::GPT small_model(const sg::RunConfig& config, int64_t seed = 42) {
  auto model = sg::build_model(config.model, seed);
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed + 1);
  for (const auto& item : model->named_parameters()) {
    const auto& name = item.key();
    if (name.find("gate_w") != std::string::npos) item.value().normal_(0.0, 3.0);
    if (name.find("gate_b") != std::string::npos) item.value().fill_(0.0);
    if (name.find("gate_tau") != std::string::npos) item.value().fill_(0.55);
    if (name.find("c_attn") != std::string::npos || name.find("attn.c_proj") != std::string::npos) item.value().mul_(5.0);
    if (name.find("sink_logit") != std::string::npos) item.value().fill_(0.7);
  }
  return model;
}

struct Tokens {
  sg_test::Scratch scratch;
  std::string path = scratch / "tokens.h5";
  Tokens() { sg_test::write_random_tokens(path, kVocab, 3000, 1200); }
};

sg::ProbeOptions fast(std::vector<sg::Probe> probes) {
  sg::ProbeOptions options;
  options.probes = std::move(probes);
  options.batches = 2;
  options.batch_size = 4;
  options.seed = 5;
  return options;
}

/// sg-inject's battery on fast()'s batches and seed, without the exposure pass.
sg::InjectionOptions fast_battery(std::vector<sg::JunkType> junk, std::vector<sg::Cutoff> cutoffs,
                                  std::vector<double> doses) {
  sg::InjectionOptions options;
  options.junk = std::move(junk);
  options.cutoffs = std::move(cutoffs);
  options.doses = std::move(doses);
  options.batches = 2;
  options.batch_size = 4;
  options.seed = 5;
  options.exposure = false;
  return options;
}

double value_of(const sg::ProbeResult& result, const std::string& statistic, const std::string& override_name = "none",
                double dose = 0, const std::string& layer = "all", const std::string& head = "all") {
  for (const auto& row : result.rows)
    if (row.statistic == statistic && row.override_name == override_name && row.dose == dose && row.layer == layer &&
        row.head == head)
      return row.value;
  FAIL("no row " + statistic + " " + override_name + " " + layer + " " + head);
  return 0;
}

}  // namespace

TEST_CASE("overrides on a hand-built row: row mean, shuffle within the visible keys, reopen") {
  // One head, four queries over four keys; query i sees keys 0..i.
  const auto gates = torch::tensor({0.9, 0.2, 0.6, 0.45}, torch::kDouble).view({1, 1, 4});
  const auto allowed = torch::ones({4, 4}, torch::kBool).tril();
  auto weights = torch::tensor({1.0, 0.0, 0.0, 0.0, 0.3, 0.7, 0.0, 0.0, 0.1, 0.2, 0.5, 0.0, 0.4, 0.1, 0.1, 0.2},
                               torch::kDouble).view({1, 1, 4, 4});  // row 3 leaves 0.2 to a phantom
  const auto mean = sg::overridden_gates(sg::GateOverride::row_mean, gates, weights, allowed, 0);
  const double g[4] = {0.9, 0.2, 0.6, 0.45};
  const double w[4][4] = {{1, 0, 0, 0}, {0.3, 0.7, 0, 0}, {0.1, 0.2, 0.5, 0}, {0.4, 0.1, 0.1, 0.2}};
  for (int i = 0; i < 4; ++i) {
    double num = 0, den = 0;
    for (int j = 0; j <= i; ++j) num += w[i][j] * g[j], den += w[i][j];
    for (int j = 0; j < 4; ++j) CHECK(mean[0][0][i][j].item<double>() == Approx(num / den).epsilon(1e-12));
  }
  const auto reopened = sg::overridden_gates(sg::GateOverride::reopen, gates, weights, allowed, 0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) CHECK(reopened[0][0][i][j].item<double>() == (g[j] < 0.5 ? 1.0 : g[j]));
  bool any_moved = false;
  for (int64_t seed = 0; seed < 8; ++seed) {
    const auto shuffled = sg::overridden_gates(sg::GateOverride::shuffle, gates, weights, allowed, seed);
    for (int i = 0; i < 4; ++i) {
      std::vector<double> visible, original(g, g + i + 1);
      for (int j = 0; j <= i; ++j) visible.push_back(shuffled[0][0][i][j].item<double>());
      any_moved = any_moved || visible != original;
      std::sort(visible.begin(), visible.end());
      std::sort(original.begin(), original.end());
      CHECK(visible == original);  // exactly the visible gates, as a multiset
    }
    CHECK((sg::overridden_gates(sg::GateOverride::shuffle, gates, weights, allowed, seed) == shuffled).all().item<bool>());
  }
  CHECK(any_moved);
}

TEST_CASE("the trained-gate loss is sg-eval's loss, and under Table 8's junk sg-inject's median cell") {
  sg::log::set_level("quiet");
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  for (const char* arm : {"normgate", "combo2"}) {
    INFO(arm);
    const auto config = small_run(arm);
    auto model = small_model(config);
    auto options = fast({sg::Probe::overrides});
    const auto result = sg::probe_model(*model, config, file, options);
    // sg-eval scores final_eval_batches (2) x batch (4) windows of the same stream (eval_seed, val).
    const double eval = sg::validation_loss(*model, file, config, 2, torch::kCPU);
    CHECK(std::abs(value_of(result, "loss", "trained") - eval) < 1e-6);
    // Table 8's default corrupted column is sg-inject's structured / median / 0.2 cell: one
    // number from two tools on the same batches.
    const auto injected =
        sg::inject(*model, config, file, fast_battery({sg::JunkType::structured}, {sg::Cutoff::median}, {0.2}));
    CHECK(std::abs(value_of(result, "loss", "trained", 0.2) - injected.conditions.at(0).loss) < 1e-6);
    for (const char* how : {"row-mean", "shuffle", "reopen"}) {
      INFO(how);
      CHECK(std::abs(value_of(result, "loss_increase", how)) > 1e-4);
      CHECK(value_of(result, "loss_increase", how) ==
            Approx(value_of(result, "loss", how) - value_of(result, "loss", "trained")).margin(1e-12));
    }
    CHECK(value_of(result, "loss_increase", "trained") == 0.0);
    // Seeded: the same options give the same shuffle.
    const auto again = sg::probe_model(*model, config, file, options);
    CHECK(value_of(again, "loss", "shuffle", 0.2) == value_of(result, "loss", "shuffle", 0.2));
    CHECK(model->is_training());  // given back in the mode it came in
  }
}

TEST_CASE("Table 8's corrupted columns: one per junk type x cutoff x dose, each sg-inject's cell") {
  sg::log::set_level("quiet");
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  const auto config = small_run("combo2");
  auto model = small_model(config);
  auto options = fast({sg::Probe::overrides});
  options.junk = {sg::JunkType::structured, sg::JunkType::gaussian};
  options.cutoffs = {sg::Cutoff::q25, sg::Cutoff::median};
  options.doses = {0.0, 0.4};  // 0: the clean column, measured anyway and not twice
  const auto result = sg::probe_model(*model, config, file, options);
  const auto injected = sg::inject(*model, config, file, fast_battery(options.junk, options.cutoffs, {0.4}));
  REQUIRE(injected.conditions.size() == 4);
  size_t trained_rows = 0;
  for (const auto& row : result.rows)
    if (row.statistic == "loss" && row.override_name == "trained") ++trained_rows;
  CHECK(trained_rows == 5);  // clean + 2 junk types x 2 cutoffs
  for (const auto& condition : injected.conditions) {
    const std::string junk = sg::to_string(condition.junk), cutoff = sg::to_string(condition.cutoff);
    INFO(junk << " " << cutoff);
    bool found = false;
    for (const auto& row : result.rows)
      if (row.statistic == "loss" && row.override_name == "trained" && row.junk == junk && row.cutoff == cutoff &&
          row.dose == 0.4) {
        CHECK(std::abs(row.value - condition.loss) < 1e-6);
        found = true;
      }
    CHECK(found);
  }
}

TEST_CASE("probes that do not apply to the arm are skipped, bad options are refused") {
  sg::log::set_level("quiet");
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  const auto config = small_run("baseline");
  auto model = small_model(config);
  const auto result = sg::probe_model(*model, config, file, fast({sg::Probe::overrides, sg::Probe::kurtosis}));
  REQUIRE(result.skipped.size() == 1);
  CHECK((result.skipped[0] == sg::Probe::overrides));
  for (const auto& row : result.rows) CHECK((row.probe == sg::Probe::kurtosis));
  CHECK(!sg::probe_applies(sg::Probe::overrides, sg::parse_arm("renorm")));
  CHECK(sg::probe_applies(sg::Probe::selectivity, sg::parse_arm("renorm")));
  CHECK(sg::probe_applies(sg::Probe::overrides, sg::parse_arm("sinktoken+projgate")));
  auto bad = fast({sg::Probe::sinks});
  bad.context = 64;
  CHECK_THROWS_AS(sg::probe_model(*model, config, file, bad), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_probes("sinks,sinkz"), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_probes("sinks,sinks"), sg::UsageError);
  CHECK(sg::parse_probes("all").size() == 5);
  CHECK((sg::parse_probes("gate-tokens,sinks") == std::vector<sg::Probe>{sg::Probe::gate_tokens, sg::Probe::sinks}));
}

TEST_CASE("sinks: a model built to send every query's mass to position 0 gives share 1") {
  sg::log::set_level("quiet");
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  const auto config = small_run("baseline", /*layers=*/1);
  auto model = sg::build_model(config.model, 1);
  {
    // Inputs: wte = 0, wpe[0] = e0, wpe[j >= 1] = e1, so after ln_1 position 0 holds u and every
    // other position w. q = ones(d) (b.x) and k = ones(d) (c.x) with b.u = b.w = 1, c.u = M,
    // c.w = 0: logits sqrt(d) M on key 0 and 0 elsewhere.
    torch::NoGradGuard no_grad;
    const int64_t c = 32, d = 16;
    model->wte->weight.zero_();
    model->wpe->weight.zero_();
    model->wpe->weight.narrow(1, 1, 1).fill_(1.0);
    model->wpe->weight[0].zero_();
    model->wpe->weight[0][0] = 1.0;
    auto block = model->blocks[0]->as<sg::Block>();
    const auto u = block->ln_1(model->wpe->weight[0].unsqueeze(0)).squeeze(0).to(torch::kDouble);
    const auto w = block->ln_1(model->wpe->weight[1].unsqueeze(0)).squeeze(0).to(torch::kDouble);
    const auto gram = torch::stack({torch::stack({u.dot(u), u.dot(w)}), torch::stack({w.dot(u), w.dot(w)})});
    const auto basis = torch::stack({u, w});  // (2, C)
    auto solve = [&](double at_u, double at_w) {
      const auto coefficients = torch::linalg_solve(gram, torch::tensor({at_u, at_w}, torch::kDouble));
      return (coefficients.unsqueeze(1) * basis).sum(0);  // (C)
    };
    const auto b = solve(1.0, 1.0), k = solve(10.0, 0.0);
    auto& weight = block->attn->c_attn->weight;  // (3C, C): [Q; K; V]
    for (int64_t row = 0; row < c; ++row) {
      weight[row].copy_(b.to(torch::kFloat));
      weight[c + row].copy_(k.to(torch::kFloat));
    }
    (void)d;
  }
  const auto result = sg::probe_model(*model, config, file, fast({sg::Probe::sinks}));
  CHECK(value_of(result, "position0_mass") == Approx(1.0).margin(1e-6));
  CHECK(value_of(result, "sink_mass") == Approx(1.0).margin(1e-6));
  for (int64_t h = 0; h < 2; ++h) CHECK(value_of(result, "position0_mass", "none", 0, "0", std::to_string(h)) == Approx(1.0).margin(1e-6));
}

TEST_CASE("sinks: the output gate's mean and the rows it closes, on gates set by hand") {
  // ln_1 with weight 0 and bias c makes every position's gate input c, so each gate row r of W_theta
  // chosen as c * z_r / |c|^2 gives the logit z_r exactly: head 0 closed (sigma(-10)), head 1 open.
  sg::log::set_level("quiet");
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  const double closed = 1.0 / (1.0 + std::exp(10.0));
  for (const char* arm : {"outgate", "sinklogit+outgate-elem"}) {
    INFO(arm);
    const auto config = small_run(arm, /*layers=*/1);
    auto model = sg::build_model(config.model, 1);
    const int64_t c = 32, d = 16;
    {
      torch::NoGradGuard no_grad;
      auto block = model->blocks[0]->as<sg::Block>();
      const auto input = torch::linspace(-1.0, 1.0, c, torch::kFloat);
      block->ln_1->weight.zero_();
      block->ln_1->bias.copy_(input);
      const auto unit = input / input.dot(input);
      auto& w = block->attn->out_gate;
      if (w.size(0) == 2) {  // head-wise: one row a head
        w[0].copy_(unit * -10.0);
        w[1].copy_(unit * std::log(3.0));
      } else {  // element-wise: head 0's rows all closed; head 1's alternate sigma = 3/4 and 1/4
        for (int64_t r = 0; r < d; ++r) w[r].copy_(unit * -10.0);
        for (int64_t r = d; r < c; ++r) w[r].copy_(unit * (r % 2 == 0 ? std::log(3.0) : -std::log(3.0)));
      }
    }
    const bool headwise = std::string(arm) == "outgate";
    const double open = headwise ? 0.75 : 0.5;  // head 1's gate, averaged over its dimensions
    const auto result = sg::probe_model(*model, config, file, fast({sg::Probe::sinks}));
    CHECK(value_of(result, "output_gate_mean", "none", 0, "0", "0") == Approx(closed).margin(1e-6));
    CHECK(value_of(result, "output_gate_mean", "none", 0, "0", "1") == Approx(open).margin(1e-6));
    CHECK(value_of(result, "output_gate_mean") == Approx((closed + open) / 2).margin(1e-6));
    CHECK(value_of(result, "output_gate_closed", "none", 0, "0", "0") == 1.0);
    CHECK(value_of(result, "output_gate_closed", "none", 0, "0", "1") == 0.0);
    CHECK(value_of(result, "output_gate_closed") == 0.5);
  }
  // Arms without an output gate have no such rows.
  const auto config = small_run("combo2", 1);
  auto model = sg::build_model(config.model, 1);
  const auto result = sg::probe_model(*model, config, file, fast({sg::Probe::sinks}));
  CHECK(std::none_of(result.rows.begin(), result.rows.end(),
                     [](const sg::ProbeRow& row) { return row.statistic.rfind("output_gate", 0) == 0; }));
}

TEST_CASE("sinks and selectivity against the telemetry recomputed here in float64") {
  sg::log::set_level("quiet");
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  for (const char* arm : {"combo", "sinktoken+normgate", "projgate"}) {
    INFO(arm);
    const auto config = small_run(arm);
    auto model = small_model(config);
    const auto result = sg::probe_model(*model, config, file, fast({sg::Probe::sinks, sg::Probe::selectivity}));
    const auto batches = sg::evaluation_batches(file, config.train.eval_seed, 2, 4, 16, torch::kCPU);
    const int64_t extra = config.model.arm.zero == sg::ZeroOption::sinktoken ? 1 : 0;
    const bool zero = config.model.arm.zero != sg::ZeroOption::none;
    // Per (layer, head): sums over queries i >= 1 and sequences, by hand.
    struct HeadSums {
      double position0 = 0, zero_option = 0;  // a_i0, the zero option's weight: over query rows
      double read0 = 0, sequences = 0;        // |v_0|/sqrt(d) over sequences
      double ordinary = 0, ordinary_reads = 0;  // |v_j|/sqrt(d) over the reads j >= 1
      double sigma = 0, mu = 0, mu_squared = 0, rows = 0;  // the selectivity's row statistics
    };
    std::map<std::pair<int64_t, int64_t>, HeadSums> sums;
    std::vector<sg::AttentionTelemetry> telemetry;
    auto hooks = std::make_shared<sg::AttentionHooks>();
    hooks->telemetry = sg::store_telemetry(telemetry);
    model->set_hooks(hooks);
    torch::NoGradGuard no_grad;
    for (const auto& batch : batches) {
      telemetry.clear();
      model->hidden(batch.inputs);
      for (int64_t l = 0; l < 2; ++l) {
        const auto a_t = telemetry[l].weights.to(torch::kDouble).contiguous();
        const auto g_t = telemetry[l].gates.to(torch::kDouble).contiguous();
        const auto r_t = telemetry[l].reads.to(torch::kDouble).norm(2, -1).div(4.0).contiguous();  // |v|/sqrt(d), d = 16
        const auto a = a_t.accessor<double, 4>();
        const auto g = g_t.accessor<double, 3>();
        const auto r = r_t.accessor<double, 3>();
        for (int64_t s = 0; s < 4; ++s)
          for (int64_t h = 0; h < 2; ++h) {
            auto& sum = sums[{l, h}];
            sum.read0 += r[s][h][extra];
            sum.sequences += 1;
            for (int64_t j = extra + 1; j < extra + 16; ++j) sum.ordinary += r[s][h][j], sum.ordinary_reads += 1;
            for (int64_t i = extra + 1; i < extra + 16; ++i) {
              sum.position0 += a[s][h][i][extra];
              double real = 0, mu = 0, var = 0;
              for (int64_t j = extra; j <= i; ++j) real += a[s][h][i][j];
              if (zero) sum.zero_option += 1.0 - real;
              for (int64_t j = extra; j <= i; ++j) mu += a[s][h][i][j] * g[s][h][j] / real;
              for (int64_t j = extra; j <= i; ++j) var += a[s][h][i][j] * std::pow(g[s][h][j] - mu, 2) / real;
              sum.sigma += std::sqrt(var), sum.mu += mu, sum.mu_squared += mu * mu, sum.rows += 1;
            }
          }
      }
    }
    model->set_hooks(nullptr);
    std::vector<double> p0, zero_mass, within, between, mean;
    for (const auto& [key, sum] : sums) {
      const auto layer = std::to_string(key.first), head = std::to_string(key.second);
      const double rows = sum.rows;
      CHECK(value_of(result, "position0_mass", "none", 0, layer, head) == Approx(sum.position0 / rows).epsilon(1e-6));
      CHECK(value_of(result, "r0_ratio", "none", 0, layer, head) ==
            Approx((sum.read0 / sum.sequences) / (sum.ordinary / sum.ordinary_reads)).epsilon(1e-6));
      CHECK(value_of(result, "within_row_spread", "none", 0, layer, head) == Approx(sum.sigma / rows).epsilon(1e-6));
      CHECK(value_of(result, "mean_gate", "none", 0, layer, head) == Approx(sum.mu / rows).epsilon(1e-6));
      const double m = sum.mu / rows;
      CHECK(value_of(result, "between_row_spread", "none", 0, layer, head) ==
            Approx(std::sqrt(sum.mu_squared / rows - m * m)).epsilon(1e-5));
      p0.push_back(sum.position0 / rows);
      within.push_back(sum.sigma / rows);
      if (zero) {
        const auto name = extra ? "sink_token_mass" : "phantom_mass";
        CHECK(value_of(result, name, "none", 0, layer, head) == Approx(sum.zero_option / rows).epsilon(1e-5));
        zero_mass.push_back(sum.zero_option / rows);
      }
    }
    auto average = [](const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / x.size(); };
    CHECK(value_of(result, "position0_mass") == Approx(average(p0)).epsilon(1e-6));
    CHECK(value_of(result, "within_row_spread") == Approx(average(within)).epsilon(1e-6));
    CHECK(average(within) > 0.01);  // the gates discriminate: the check could fail
    if (zero) CHECK(value_of(result, extra ? "sink_token_mass" : "phantom_mass") == Approx(average(zero_mass)).epsilon(1e-5));
  }
}

TEST_CASE("selectivity: a gate constant within each row has no within-row spread") {
  // Gates that depend on the sequence only: every row of a sequence sees one gate value.
  sg::SelectivityAccumulator accumulator(1, 2);
  torch::manual_seed(3);
  auto weights = torch::rand({3, 2, 6, 6}, torch::kDouble).tril();
  const auto gates = torch::tensor({0.2, 0.5, 0.9}, torch::kDouble).view({3, 1, 1}).expand({3, 2, 6});
  accumulator.add(0, weights, gates, /*extra=*/0, /*sink_positions=*/1);
  const auto heads = accumulator.finish();
  REQUIRE(heads.size() == 2);
  for (const auto& h : heads) {
    CHECK(h.within_row_spread == Approx(0.0).margin(1e-12));
    CHECK(h.mean_gate == Approx((0.2 + 0.5 + 0.9) / 3).epsilon(1e-12));
    // Row means: 5 rows at each of 0.2, 0.5, 0.9 -> the population standard deviation of the three.
    const double m = (0.2 + 0.5 + 0.9) / 3;
    CHECK(h.between_row_spread ==
          Approx(std::sqrt((std::pow(0.2 - m, 2) + std::pow(0.5 - m, 2) + std::pow(0.9 - m, 2)) / 3)).epsilon(1e-12));
    CHECK(h.rows == 15);
  }
  // A hand-computed row: weights (0.5, 0.25, 0.25) over gates (1, 0, 0.5) -> mu 0.625, sd sqrt(0.171875).
  sg::SelectivityAccumulator one(1, 1);
  auto w = torch::zeros({1, 1, 3, 3}, torch::kDouble);
  w[0][0][2] = torch::tensor({0.5, 0.25, 0.25}, torch::kDouble);
  w[0][0][1] = torch::tensor({0.5, 0.5, 0.0}, torch::kDouble);
  const auto g = torch::tensor({1.0, 0.0, 0.5}, torch::kDouble).view({1, 1, 3});
  one.add(0, w, g, 0, 2);  // S = 2: row 2 only
  const auto head = one.finish().at(0);
  CHECK(head.rows == 1);
  CHECK(head.mean_gate == Approx(0.625).epsilon(1e-12));
  CHECK(head.within_row_spread == Approx(std::sqrt(0.5 * 0.375 * 0.375 + 0.25 * 0.625 * 0.625 + 0.25 * 0.125 * 0.125)).epsilon(1e-12));
  CHECK(head.between_row_spread == Approx(0.0).margin(1e-12));
}

TEST_CASE("gate tokens: a gate that is a known function of the token gives the known means and order") {
  const int64_t vocab = 7, layers = 2;
  sg::GateTokenAccumulator accumulator(layers, vocab);
  std::mt19937 rng(11);
  std::map<int64_t, int64_t> counts;
  for (int pass = 0; pass < 3; ++pass) {
    auto ids = torch::empty({2, 9}, torch::kInt64);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < 9; ++t) {
        const int64_t id = static_cast<int64_t>(rng() % 6);  // id 6 never occurs
        ids[b][t] = id;
        ++counts[id];
      }
    for (int64_t l = 0; l < layers; ++l) {
      // g = id / 10 + 0.01 * head + 0.1 * layer, with one extra (sink-token) position first.
      auto gates = torch::empty({2, 3, 10}, torch::kDouble);
      gates.narrow(2, 0, 1).fill_(0.99);
      for (int64_t h = 0; h < 3; ++h)
        gates.select(1, h).narrow(1, 1, 9).copy_(ids.to(torch::kDouble) / 10 + 0.01 * h + 0.1 * l);
      accumulator.add(l, gates, ids, /*extra=*/1);
    }
  }
  const auto n = accumulator.counts();
  for (int64_t id = 0; id < vocab; ++id) CHECK(n[id].item<int64_t>() == counts[id]);
  const auto all = accumulator.mean_gate(-1), first = accumulator.mean_gate(0);
  for (int64_t id = 0; id < 6; ++id) {
    if (counts[id] == 0) continue;
    CHECK(first[id].item<double>() == Approx(id / 10.0 + 0.01).epsilon(1e-12));
    CHECK(all[id].item<double>() == Approx(id / 10.0 + 0.01 + 0.05).epsilon(1e-12));
  }
  CHECK(std::isnan(all[6].item<double>()));
}

TEST_CASE("kurtosis against a float64 computation here, and near zero on Gaussian coordinates") {
  torch::manual_seed(17);
  // Coordinate 0: exponential (excess kurtosis 6) with a large mean; coordinate 1: Gaussian.
  const int64_t n = 40000;
  auto x = torch::empty({n, 2, 1, 2}, torch::kDouble);  // (B, H, T, d) with T = 1
  x.select(3, 0).copy_(torch::empty({n, 2, 1}, torch::kDouble).exponential_() + 1000.0);
  x.select(3, 1).copy_(torch::randn({n, 2, 1}, torch::kDouble));
  sg::KurtosisAccumulator accumulator(1);
  for (int64_t part = 0; part < 4; ++part) accumulator.add(0, x.narrow(0, part * n / 4, n / 4), 0);
  const auto excess = accumulator.excess(0);  // (H, d)
  const auto xs = x.accessor<double, 4>();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t c = 0; c < 2; ++c) {
      double mean = 0;
      for (int64_t i = 0; i < n; ++i) mean += xs[i][h][0][c];
      mean /= n;
      double m2 = 0, m4 = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double y = xs[i][h][0][c] - mean;
        m2 += y * y, m4 += y * y * y * y;
      }
      m2 /= n, m4 /= n;
      CHECK(excess[h][c].item<double>() == Approx(m4 / (m2 * m2) - 3).epsilon(1e-9));
    }
  CHECK(std::abs(excess[0][1].item<double>()) < 0.1);
  CHECK(excess[0][0].item<double>() > 5.0);
}

TEST_CASE("gate tokens: the listing keeps tokens seen often enough, in order of mean gate, at both ends") {
  // Mean gates of ids 0..6; id 2 is seen once, id 5 never (NaN), id 6 diverged (NaN, seen often).
  const auto means = torch::tensor({0.5, 0.2, 0.1, 0.9, 0.2, std::nan(""), std::nan("")}, torch::kDouble);
  const auto counts = torch::tensor({4, 3, 1, 5, 3, 0, 9}, torch::kInt64);
  const auto listed = sg::rank_tokens(means, counts, /*min_count=*/2, /*top=*/2);
  REQUIRE(listed.size() == 4);
  // Ascending: 1 (0.2), 4 (0.2, tie broken by id), 0 (0.5), 3 (0.9).
  CHECK((listed[0].end == "most-attenuated" && listed[0].rank == 1 && listed[0].id == 1));
  CHECK((listed[1].end == "most-attenuated" && listed[1].rank == 2 && listed[1].id == 4));
  CHECK((listed[2].end == "least-attenuated" && listed[2].rank == 1 && listed[2].id == 3));
  CHECK((listed[3].end == "least-attenuated" && listed[3].rank == 2 && listed[3].id == 0));
  const auto every = sg::rank_tokens(means, counts, 1, 0);
  REQUIRE(every.size() == 5);
  std::vector<int64_t> order;
  for (const auto& t : every) {
    order.push_back(t.id);
    CHECK(t.end == "all");
  }
  CHECK(order == std::vector<int64_t>{2, 1, 4, 0, 3});
}

TEST_CASE("the shuffle is the same permutation for every arm at one seed, and another at another seed") {
  // Reading the permutation off gates 0..T-1: it depends on the seed and the shape only.
  const auto allowed = torch::ones({5, 5}, torch::kBool).tril();
  const auto weights = torch::ones({1, 2, 5, 5}, torch::kDouble).tril();
  const auto index = torch::arange(5, torch::kDouble).view({1, 1, 5}).expand({1, 2, 5});
  const auto other = (torch::arange(5, torch::kDouble) * 0.1 + 0.3).view({1, 1, 5}).expand({1, 2, 5});
  const auto a = sg::overridden_gates(sg::GateOverride::shuffle, index, weights, allowed, 7);
  const auto b = sg::overridden_gates(sg::GateOverride::shuffle, other, weights * 0.5, allowed, 7);
  CHECK(((b - 0.3) / 0.1 - a).abs().max().item<double>() < 1e-9);  // the same positions moved
  bool differs = false;
  for (int64_t seed = 8; seed < 16 && !differs; ++seed)
    differs = !(sg::overridden_gates(sg::GateOverride::shuffle, index, weights, allowed, seed) == a).all().item<bool>();
  CHECK(differs);
}

namespace {

/// The direction statistics of a population written out here in float64: cos NaN where a vector has
/// no cosine; quantiles by linear interpolation between order statistics (type 7), shares and
/// means over the vectors above each threshold, 40 histogram bins of width 1/20 from −1.
std::map<std::string, double> naive_direction(const std::vector<double>& cos, const std::vector<double>& gates) {
  const double nan = std::nan("");
  std::vector<double> sorted;
  for (const double c : cos)
    if (!std::isnan(c)) sorted.push_back(c);
  std::sort(sorted.begin(), sorted.end());
  const auto n = static_cast<double>(sorted.size());
  std::map<std::string, double> out;
  const std::vector<std::pair<std::string, double>> quantiles = {{"cos_min", 0},  {"cos_q01", 0.01}, {"cos_q05", 0.05},
                                                                  {"cos_q25", 0.25}, {"cos_q50", 0.5}, {"cos_q75", 0.75},
                                                                  {"cos_q95", 0.95}, {"cos_q99", 0.99}, {"cos_max", 1}};
  for (const auto& [name, p] : quantiles) {
    if (sorted.empty()) {
      out[name] = nan;
      continue;
    }
    const double h = p * (n - 1);
    const size_t below = static_cast<size_t>(h);
    const size_t above = std::min(below + 1, sorted.size() - 1);
    out[name] = sorted[below] + (h - below) * (sorted[above] - sorted[below]);
  }
  for (const char* t : {"0.5", "0.8", "0.9"}) {
    const double threshold = std::stod(t);
    double count = 0, gate = 0;
    for (size_t j = 0; j < cos.size(); ++j)
      if (!std::isnan(cos[j]) && cos[j] > threshold) count += 1, gate += gates[j];
    out[std::string("share_cos_above_") + t] = n > 0 ? count / n : nan;
    out[std::string("mean_gate_cos_above_") + t] = count > 0 ? gate / count : nan;
  }
  double gate_sum = 0;
  for (const double g : gates) gate_sum += g;
  out["mean_gate"] = gate_sum / static_cast<double>(gates.size());
  out["reads"] = n;
  for (int k = 0; k < 40; ++k) {
    const double low = -1 + k / 20.0, high = -1 + (k + 1) / 20.0;
    double count = 0;
    for (const double c : sorted) count += (c >= low && (c < high || (k == 39 && c <= 1))) ? 1 : 0;
    char name[32];
    std::snprintf(name, sizeof name, "cos_hist_%02d", k);
    out[name] = n > 0 ? count / n : nan;
  }
  return out;
}

/// The summary's statistics by the names the table gives them.
std::map<std::string, double> named(const sg::DirectionSummary& s) {
  std::map<std::string, double> out;
  const char* q[] = {"cos_min", "cos_q01", "cos_q05", "cos_q25", "cos_q50", "cos_q75", "cos_q95", "cos_q99", "cos_max"};
  for (size_t i = 0; i < 9; ++i) out[q[i]] = s.cos[i];
  const char* t[] = {"0.5", "0.8", "0.9"};
  for (size_t i = 0; i < 3; ++i) {
    out[std::string("share_cos_above_") + t[i]] = s.share_above[i];
    out[std::string("mean_gate_cos_above_") + t[i]] = s.mean_gate_above[i];
  }
  out["mean_gate"] = s.mean_gate;
  out["reads"] = static_cast<double>(s.vectors);
  for (int k = 0; k < 40; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "cos_hist_%02d", k);
    out[name] = s.histogram[k];
  }
  return out;
}

void check_same(const std::map<std::string, double>& got, const std::map<std::string, double>& want,
                double gate_tolerance = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, value] : want) {
    INFO(name);
    REQUIRE(got.count(name) == 1);
    const double x = got.at(name);
    if (std::isnan(value)) {
      CHECK(std::isnan(x));
      continue;
    }
    const bool gate = name.find("gate") != std::string::npos;
    CHECK(x == Approx(value).margin(gate ? gate_tolerance : 1e-12));
  }
}

}  // namespace

TEST_CASE("direction: reads at known angles to w_h give the known quantiles, shares and gates") {
  // Head 0: w = (2, 0, 0, 0); reads at cosines 1, 0.93, 0.83, 0.62, 0.02, -1 (of several norms) and
  // one zero read (no cosine). Head 1: w = 0, no direction. One sequence of 7 positions.
  const std::vector<double> angles = {1, 0.93, 0.83, 0.62, 0.02, -1};
  auto reads = torch::zeros({1, 2, 7, 4}, torch::kDouble);
  for (size_t j = 0; j < angles.size(); ++j) {
    const double c = angles[j], scale = 0.5 + j;
    reads[0][0][j][0] = scale * c;
    reads[0][0][j][1] = scale * std::sqrt(1 - c * c);
    reads[0][1][j][2] = 1.0 + j;
  }
  auto direction = torch::zeros({2, 4}, torch::kDouble);
  direction[0][0] = 2.0;
  const auto gates = (torch::arange(14, torch::kDouble) / 20 + 0.1).view({1, 2, 7});  // 0.1 … 0.75
  const auto stats = sg::direction_statistics(reads, direction, gates);
  REQUIRE(stats.size() == 3);
  const auto& head = stats[0];
  CHECK(head.vectors == 6);
  CHECK(head.cos[0] == Approx(-1).margin(1e-12));
  CHECK(head.cos[8] == Approx(1).margin(1e-12));
  CHECK(head.cos[4] == Approx((0.62 + 0.83) / 2).margin(1e-12));      // the median of six
  CHECK(head.cos[3] == Approx(0.02 + 0.25 * (0.62 - 0.02)).margin(1e-12));  // h = 1.25
  CHECK(head.share_above[0] == Approx(4.0 / 6));
  CHECK(head.share_above[1] == Approx(3.0 / 6));
  CHECK(head.share_above[2] == Approx(2.0 / 6));
  CHECK(head.mean_gate_above[0] == Approx((0.1 + 0.15 + 0.2 + 0.25) / 4));
  CHECK(head.mean_gate_above[2] == Approx((0.1 + 0.15) / 2));
  CHECK(head.mean_gate == Approx((0.1 + 0.4) / 2));  // over all seven reads, the zero one too
  CHECK(head.histogram[39] == Approx(1.0 / 6));      // cos 1
  CHECK(head.histogram[38] == Approx(1.0 / 6));      // 0.93
  CHECK(head.histogram[36] == Approx(1.0 / 6));      // 0.83
  CHECK(head.histogram[0] == Approx(1.0 / 6));       // -1
  // No direction: NaN cosines, the gate still measured.
  CHECK(stats[1].vectors == 0);
  for (const double c : stats[1].cos) CHECK(std::isnan(c));
  for (const double s : stats[1].share_above) CHECK(std::isnan(s));
  CHECK(stats[1].mean_gate == Approx((0.45 + 0.75) / 2));
  // Pooled: the cosines of head 0 alone, the gates of both heads.
  CHECK(stats[2].vectors == 6);
  CHECK(stats[2].cos[4] == Approx(head.cos[4]));
  CHECK(stats[2].mean_gate == Approx((0.1 + 0.75) / 2));
  // Every statistic against the computation above.
  std::vector<double> cos0 = {1, 0.93, 0.83, 0.62, 0.02, -1, std::nan("")};
  std::vector<double> gates0, gates1;
  for (int j = 0; j < 7; ++j) gates0.push_back(0.1 + j / 20.0), gates1.push_back(0.1 + (7 + j) / 20.0);
  check_same(named(head), naive_direction(cos0, gates0));
  check_same(named(stats[1]), naive_direction(std::vector<double>(7, std::nan("")), gates1));
  auto cos_pooled = cos0;
  cos_pooled.insert(cos_pooled.end(), 7, std::nan(""));
  auto gates_pooled = gates0;
  gates_pooled.insert(gates_pooled.end(), gates1.begin(), gates1.end());
  check_same(named(stats[2]), naive_direction(cos_pooled, gates_pooled));
}

TEST_CASE("direction probe on projection- and key-gate models against the telemetry recomputed here in float64") {
  sg::log::set_level("quiet");
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  for (const char* arm : {"projgate", "sinktoken+projgate", "keygate", "sinktoken+keygate"}) {
    INFO(arm);
    const auto config = small_run(arm);
    const bool on_keys = config.model.arm.filter == sg::Filter::keygate;
    auto model = small_model(config);
    {
      torch::NoGradGuard no_grad;  // layer 1, head 0: no direction
      model->blocks[1]->as<sg::Block>()->attn->gate_w[0].zero_();
    }
    const auto result = sg::probe_model(*model, config, file, fast({sg::Probe::direction}));
    const int64_t layers = 2, heads = 2, d = 16;
    const int64_t extra = config.model.arm.zero == sg::ZeroOption::sinktoken ? 1 : 0;
    // Every (layer, head) row, each layer pooled (head all) and the model (layer all): 57 statistics each.
    CHECK(result.rows.size() == static_cast<size_t>((layers * heads + layers + 1) * 57));
    std::map<std::pair<std::string, std::string>, std::map<std::string, double>> table;
    for (const auto& row : result.rows) {
      CHECK((row.probe == sg::Probe::direction));
      table[{row.layer, row.head}][row.statistic] = row.value;
    }
    CHECK(table.size() == static_cast<size_t>(layers * heads + layers + 1));
    // The reads by hand: cos(v_j, w_h) and g_j = sigmoid(w_h . v_j + b_h) in float64; for the key
    // gate the keys: cos(k_j, w_h) and g_j = sigmoid(w_h . k_j / sqrt(d) + b_h).
    std::map<std::pair<int64_t, int64_t>, std::vector<double>> cos, gates;
    std::vector<sg::AttentionTelemetry> telemetry;
    auto hooks = std::make_shared<sg::AttentionHooks>();
    hooks->telemetry = sg::store_telemetry(telemetry);
    model->set_hooks(hooks);
    torch::NoGradGuard no_grad;
    for (const auto& batch : sg::evaluation_batches(file, config.train.eval_seed, 2, 4, 16, torch::kCPU)) {
      telemetry.clear();
      model->hidden(batch.inputs);
      for (int64_t l = 0; l < layers; ++l) {
        auto attn = model->blocks[l]->as<sg::Block>()->attn;
        const auto w_t = attn->gate_w.to(torch::kDouble).contiguous();
        const auto b_t = attn->gate_b.to(torch::kDouble).contiguous();
        const auto v_t = (on_keys ? telemetry[l].keys : telemetry[l].reads).to(torch::kDouble).contiguous();
        const auto w = w_t.accessor<double, 2>();
        const auto b = b_t.accessor<double, 1>();
        const auto v = v_t.accessor<double, 4>();
        REQUIRE(v_t.size(2) == 16 + extra);
        for (int64_t s = 0; s < 4; ++s)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t j = extra; j < 16 + extra; ++j) {
              double dot = 0, vv = 0, ww = 0;
              for (int64_t c = 0; c < d; ++c) dot += v[s][h][j][c] * w[h][c], vv += v[s][h][j][c] * v[s][h][j][c],
                                              ww += w[h][c] * w[h][c];
              cos[{l, h}].push_back(ww > 0 && vv > 0 ? dot / std::sqrt(vv * ww) : std::nan(""));
              gates[{l, h}].push_back(1.0 / (1.0 + std::exp(-((on_keys ? dot / std::sqrt(double(d)) : dot) + b[h]))));
            }
      }
    }
    model->set_hooks(nullptr);
    std::vector<double> all_cos, all_gates;
    for (int64_t l = 0; l < layers; ++l) {
      std::vector<double> layer_cos, layer_gates;
      for (int64_t h = 0; h < heads; ++h) {
        INFO("layer " << l << " head " << h);
        const auto& c = cos[{l, h}];
        const auto& g = gates[{l, h}];
        check_same(table[{std::to_string(l), std::to_string(h)}], naive_direction(c, g), 1e-6);
        layer_cos.insert(layer_cos.end(), c.begin(), c.end());
        layer_gates.insert(layer_gates.end(), g.begin(), g.end());
      }
      INFO("layer " << l << " pooled");
      check_same(table[{std::to_string(l), "all"}], naive_direction(layer_cos, layer_gates), 1e-6);
      all_cos.insert(all_cos.end(), layer_cos.begin(), layer_cos.end());
      all_gates.insert(all_gates.end(), layer_gates.begin(), layer_gates.end());
    }
    check_same(table[{"all", "all"}], naive_direction(all_cos, all_gates), 1e-6);
    // The checks could fail: the gates discriminate, and the head without a direction has NaN cosines.
    CHECK(table[{"all", "all"}]["cos_max"] - table[{"all", "all"}]["cos_min"] > 0.5);
    CHECK(std::isnan(table[{"1", "0"}]["cos_q50"]));
    CHECK(table[{"1", "0"}]["reads"] == 0);
    CHECK(table[{"0", "0"}]["reads"] == 2 * 4 * 16);
  }
}

TEST_CASE("direction: asked by name only, and refused for an arm without a projection or key gate") {
  sg::log::set_level("quiet");
  CHECK((sg::parse_probes("direction") == std::vector<sg::Probe>{sg::Probe::direction}));
  const auto all = sg::parse_probes("all");
  CHECK(std::find(all.begin(), all.end(), sg::Probe::direction) == all.end());
  for (const char* arm : {"projgate", "combo2", "sinktoken+projgate", "offbyone+projgate", "keygate", "sinklogit+keygate+outgate"})
    CHECK(sg::probe_applies(sg::Probe::direction, sg::parse_arm(arm)));
  for (const char* arm : {"baseline", "normgate", "combo", "renorm", "sinklogit", "outgate", "sinklogit+outgate-elem"})
    CHECK(!sg::probe_applies(sg::Probe::direction, sg::parse_arm(arm)));
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  for (const char* arm : {"baseline", "combo"}) {
    const auto config = small_run(arm);
    auto model = small_model(config);
    try {
      sg::probe_model(*model, config, file, fast({sg::Probe::sinks, sg::Probe::direction}));
      FAIL("no error for arm " << arm);
    } catch (const sg::UsageError& error) {
      CHECK(std::string(error.what()) ==
            std::string("the direction probe needs a projection gate (projgate, combo2, or any arm joined with projgate) "
                        "or a key gate (keygate, or any arm joined with keygate); arm is ") + arm);
    }
  }
}
