// Tests of lib/instruments/injection: dose zero and the clean loss against sg-eval's validation
// loss, paired junk across arms, the whole battery against a float64 reference written here,
// exposure on a hand-built attention pattern and against the phantom-mass telemetry, and the
// fused path under corruption against the explicit one.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iomanip>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/instruments/injection.h"
#include "lib/model/model.h"
#include "lib/train/train.h"
#include "tests/support.h"

namespace {

constexpr int64_t kVocab = 61;

sg::RunConfig small_run(const std::string& arm) {
  auto config = sg::make_run_config("tiny", arm, 0);
  sg::apply_overrides(config, {"n_layer=2", "n_embd=32", "n_head=2", "block_size=16",
                               "vocab_size=" + std::to_string(kVocab), "micro_batch=4", "final_eval_batches=2"});
  return config;
}

/// A model of `config` whose arm parameters are trained-looking (a projection gate with w_h != 0,
/// a sink logit != 0), so that every arm path is exercised.
sg::GPT small_model(const sg::RunConfig& config, int64_t seed = 42) {
  auto model = sg::build_model(config.model, seed);
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed + 1);
  for (const auto& item : model->named_parameters()) {
    const auto& name = item.key();
    if (name.find("gate_w") != std::string::npos) item.value().normal_(0.0, 0.5);
    if (name.find("sink_logit") != std::string::npos) item.value().fill_(0.7);
  }
  return model;
}

sg::InjectionOptions options_for(std::vector<sg::JunkType> junk, std::vector<double> doses) {
  sg::InjectionOptions options;
  options.junk = std::move(junk);
  options.doses = std::move(doses);
  options.batches = 2;
  options.batch_size = 4;
  options.seed = 5;
  return options;
}

const sg::InjectionCondition& find(const sg::InjectionResult& result, sg::JunkType junk, sg::Cutoff cutoff, double dose) {
  for (const auto& c : result.conditions)
    if (c.junk == junk && c.cutoff == cutoff && c.dose == dose) return c;
  FAIL("no such condition");
  return result.conditions.front();
}

struct Tokens {
  sg_test::Scratch scratch;
  std::string path = scratch / "tokens.h5";
  Tokens() { sg_test::write_random_tokens(path, kVocab, 3000, 1200); }
};

}  // namespace

TEST_CASE("dose 0 gives delta_loss exactly 0, and the clean loss is sg-eval's loss on the same batches") {
  sg::log::set_level("quiet");
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  for (const char* arm : {"baseline", "combo2", "sinktoken"}) {
    INFO(arm);
    const auto config = small_run(arm);
    auto model = small_model(config);
    const auto result = sg::inject(*model, config, file, options_for({sg::JunkType::structured, sg::JunkType::gaussian}, {0.0, 0.4}));
    CHECK(result.context == 16);
    // sg-eval scores final_eval_batches (2) x batch (4) windows of the same stream (eval_seed, val).
    const double eval = sg::validation_loss(*model, file, config, 2, torch::kCPU);
    CHECK(std::abs(result.clean_loss - eval) < 1e-6);
    for (auto junk : {sg::JunkType::structured, sg::JunkType::gaussian})
      for (auto cutoff : {sg::Cutoff::q25, sg::Cutoff::median}) {
        CHECK(find(result, junk, cutoff, 0.0).loss == result.clean_loss);
        CHECK(find(result, junk, cutoff, 0.4).loss != result.clean_loss);
      }
    // Counts: q25 of 16 reads leaves 4 below (numpy's position 3.75), the median 8; per layer,
    // head, sequence and batch.
    const int64_t heads_seen = 2 * 2 * 4 * 2;  // layers x heads x sequences x batches
    CHECK(find(result, sg::JunkType::gaussian, sg::Cutoff::q25, 0.4).corrupted == heads_seen * 4);
    CHECK(find(result, sg::JunkType::gaussian, sg::Cutoff::median, 0.4).corrupted == heads_seen * 8);
    CHECK(find(result, sg::JunkType::gaussian, sg::Cutoff::median, 0.4).reads == heads_seen * 16);
  }
}

TEST_CASE("paired junk: two arms with the same shared weights receive identical corrupted reads, another seed changes them") {
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  const auto config_a = small_run("baseline"), config_b = small_run("sinklogit");
  auto a = small_model(config_a), b = small_model(config_b);
  {  // b takes every parameter a has, so the layer-0 reads agree
    torch::NoGradGuard no_grad;
    const auto from = a->named_parameters();
    for (auto& item : b->named_parameters())
      if (from.contains(item.key())) item.value().copy_(from[item.key()]);
  }
  const auto batch = sg::sample_batch(file, sg::Split::val, 0, 0, 4, 16);
  auto layer0_reads = [&](sg::GPTImpl& model, int64_t seed) {
    std::vector<sg::AttentionTelemetry> telemetry;
    sg::AttentionHooks base;
    base.telemetry = sg::store_telemetry(telemetry);
    sg::Corruptor corruptor(sg::CorruptionSpec{sg::JunkType::structured, sg::Cutoff::median, 0.8, seed});
    corruptor.set_batch(3);
    model.set_hooks(corruptor.hooks(base));
    torch::NoGradGuard no_grad;
    model.hidden(batch.inputs);
    model.set_hooks(nullptr);
    return telemetry.at(0).reads;  // after corruption, before any gate
  };
  const auto reads_a = layer0_reads(*a, 9), reads_b = layer0_reads(*b, 9);
  CHECK(torch::equal(reads_a, reads_b));
  CHECK_FALSE(torch::equal(reads_a, layer0_reads(*a, 10)));
  // … and the corruption did change them.
  std::vector<sg::AttentionTelemetry> clean;
  sg::AttentionHooks record;
  record.telemetry = sg::store_telemetry(clean);
  a->set_hooks(std::make_shared<sg::AttentionHooks>(record));
  {
    torch::NoGradGuard no_grad;
    a->hidden(batch.inputs);
  }
  a->set_hooks(nullptr);
  CHECK_FALSE(torch::equal(clean.at(0).reads, reads_a));
}

TEST_CASE("the battery agrees with a float64 reference written here (rank, cutoff, median, junk, loss difference)") {
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  // The projection gate's own direction on the reads; the key gate's on the keys, ranked by key norms.
  const std::pair<const char*, sg::JunkType> cases[] = {{"projgate", sg::JunkType::own_direction},
                                                        {"combo2", sg::JunkType::own_direction},
                                                        {"keygate", sg::JunkType::key_own_direction},
                                                        {"sinklogit+keygate+outgate", sg::JunkType::key_own_direction}};
  for (const auto& [arm, junk] : cases) {
    INFO(arm);
    auto config = small_run(arm);
    auto model = small_model(config);
    model->to(torch::kDouble);
    const double dose = 0.6;
    auto options = options_for({junk}, {dose});
    options.cutoffs = {sg::Cutoff::q25};
    options.exposure = false;
    const auto result = sg::inject(*model, config, file, options);

    // The reference: loops over sequences, heads and reads, in float64.
    auto hooks = std::make_shared<sg::AttentionHooks>();
    auto& slot = junk == sg::JunkType::key_own_direction ? hooks->corrupt_keys : hooks->corrupt;
    slot = [&](const torch::Tensor& reads, int64_t layer) {
      auto out = reads.clone();
      const auto w = model->blocks[layer]->as<sg::Block>()->attn->gate_w.detach();
      for (int64_t b = 0; b < reads.size(0); ++b)
        for (int64_t h = 0; h < reads.size(1); ++h) {
          std::vector<double> norms;
          for (int64_t t = 0; t < reads.size(2); ++t) norms.push_back(reads[b][h][t].norm().item<double>());
          auto sorted = norms;
          std::sort(sorted.begin(), sorted.end());
          auto quantile = [&](double q) {
            const double at = q * static_cast<double>(sorted.size() - 1);
            const auto low = static_cast<size_t>(at);
            const size_t high = std::min(low + 1, sorted.size() - 1);
            return sorted[low] + (sorted[high] - sorted[low]) * (at - static_cast<double>(low));
          };
          const double cutoff = quantile(0.25), median = quantile(0.5);
          const auto u = w[h] / w[h].norm();
          for (int64_t t = 0; t < reads.size(2); ++t)
            if (norms[t] < cutoff) out[b][h][t] += dose * median * u;
        }
      return out;
    };
    double clean = 0, corrupted = 0;
    {
      torch::NoGradGuard no_grad;
      for (int64_t k = 0; k < 2; ++k) {
        const auto batch = sg::sample_batch(file, sg::Split::val, config.train.eval_seed, k * 4, 4, 16);
        model->set_hooks(nullptr);
        clean += model->loss(batch.inputs, batch.targets).item<double>() / 2;
        model->set_hooks(hooks);
        corrupted += model->loss(batch.inputs, batch.targets).item<double>() / 2;
      }
      model->set_hooks(nullptr);
    }
    const auto& got = find(result, junk, sg::Cutoff::q25, dose);
    // The same loss on the same batches, but not bit for bit: MKL's float64 products are not
    // reproducible from run to run (their paths depend on the buffers' alignment; MKL_CBWR), and
    // under load (ctest -j 2) the two computations differed by more than 1e-12 in two of about
    // thirty runs on 2026-12-02. A wrong batch or configuration would differ by ~1e-2.
    INFO(std::setprecision(17) << "battery " << result.clean_loss << ", reference " << clean);
    CHECK(std::abs(result.clean_loss - clean) < 1e-10);
    CHECK(std::abs((got.loss - result.clean_loss) - (corrupted - clean)) < 1e-10);
    // The corruption did something (key junk moves the small random model's keys a little: its
    // effect is smaller, still five orders above float64 rounding).
    CHECK(std::abs(corrupted - clean) > (junk == sg::JunkType::key_own_direction ? 1e-7 : 1e-4));
  }
}

TEST_CASE("own-direction junk on an arm without a projection gate is an error naming the arm, or skipped") {
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  const auto config = small_run("sinklogit");
  auto model = small_model(config);
  auto options = options_for({sg::JunkType::own_direction, sg::JunkType::gaussian}, {0.2});
  CHECK_THROWS_WITH(sg::inject(*model, config, file, options), Catch::Contains("arm sinklogit"));
  options.skip_inapplicable = true;
  options.exposure = false;
  const auto result = sg::inject(*model, config, file, options);
  REQUIRE(result.skipped.size() == 1);
  CHECK(result.skipped[0] == sg::JunkType::own_direction);
  CHECK(result.conditions.size() == 2);  // gaussian at two cutoffs
}

TEST_CASE("a gate's own direction is where it decides: own-direction for the projection gate, key-own-direction for the key gate") {
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  struct Case {
    const char* arm;
    sg::JunkType junk;
    const char* message;  // "" when the junk is defined for the arm
  };
  const Case cases[] = {
      {"keygate", sg::JunkType::own_direction, "its key gate's own direction is key-own-direction"},
      {"projgate", sg::JunkType::key_own_direction, "key-own-direction junk needs a key gate"},
      {"outgate", sg::JunkType::own_direction, "arm outgate has none"},
      {"outgate", sg::JunkType::key_own_direction, "arm outgate has none"},
      {"keygate", sg::JunkType::key_own_direction, ""},
  };
  for (const auto& c : cases) {
    INFO(c.arm << " " << sg::to_string(c.junk));
    CHECK_THAT(sg::junk_not_defined(c.junk, sg::parse_arm(c.arm)), Catch::Contains(c.message));
    CHECK(sg::junk_not_defined(c.junk, sg::parse_arm(c.arm)).empty() == (std::string(c.message).empty()));
    const auto config = small_run(c.arm);
    auto model = small_model(config);
    model->to(torch::kDouble);
    auto options = options_for({c.junk}, {1.6});
    options.exposure = false;
    if (std::string(c.message).empty()) {
      // Key junk moves the keys: the routing and the key gate change, and the loss with them.
      const auto result = sg::inject(*model, config, file, options);
      CHECK(result.conditions.size() == 2);
      CHECK(std::abs(find(result, c.junk, sg::Cutoff::q25, 1.6).loss - result.clean_loss) > 1e-7);
    } else {
      CHECK_THROWS_WITH(sg::inject(*model, config, file, options), Catch::Contains(c.message));
    }
  }
}

TEST_CASE("exposure on a hand-built attention pattern gives the shares computed by hand") {
  // One head, four reads with norms 1, 3, 2, 4: the median is 2.5 (reads 0 and 2 quiet), the 25th
  // percentile 1.75 (read 0 quiet).
  const auto norms = torch::tensor({1.0, 3.0, 2.0, 4.0}, torch::kDouble).view({1, 1, 4});
  const auto weights = torch::tensor({1.0, 0.0, 0.0, 0.0,  //
                                      0.5, 0.5, 0.0, 0.0,  //
                                      0.2, 0.3, 0.5, 0.0,  //
                                      0.1, 0.2, 0.3, 0.4}, torch::kDouble).view({1, 1, 4, 4});
  const auto phantom = torch::tensor({0.0, 0.1, 0.2, 0.3}, torch::kDouble).view({1, 1, 4});
  auto close = [](const torch::Tensor& got, std::vector<double> want) {
    REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
    const auto flat = got.reshape({-1});
    for (size_t i = 0; i < want.size(); ++i) CHECK(std::abs(flat[i].item<double>() - want[i]) < 1e-12);
  };
  auto [quiet, with_phantom] = sg::exposure_shares(weights, phantom, norms, sg::Cutoff::median, 0);
  close(quiet, {1.0, 0.5, 0.7, 0.4});
  close(with_phantom, {0.0, 0.1, 0.2, 0.3});
  auto [quiet_q25, none] = sg::exposure_shares(weights, torch::Tensor(), norms, sg::Cutoff::q25, 0);
  close(quiet_q25, {1.0, 0.5, 0.2, 0.1});
  CHECK_FALSE(none.defined());
  // A sink token at position 0: reads 1 … 3 (norms 3, 2, 4: median 3, read 2 quiet); the sink's
  // share is the weight on position 0; its own row is not counted.
  auto [quiet_sink, sink] = sg::exposure_shares(weights, torch::Tensor(), norms, sg::Cutoff::median, 1);
  close(quiet_sink, {0.0, 0.5, 0.3});
  close(sink, {0.5, 0.2, 0.1});
}

TEST_CASE("exposure's phantom share is the phantom-mass telemetry, and a sink token's is its position's weight") {
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  for (const char* arm : {"sinklogit", "sinktoken", "baseline"}) {
    INFO(arm);
    const auto config = small_run(arm);
    auto model = small_model(config);
    auto options = options_for({}, {});
    const auto result = sg::inject(*model, config, file, options);
    // The same batches, telemetry recorded here.
    double phantom = 0;
    int64_t count = 0;
    std::vector<sg::AttentionTelemetry> telemetry;
    auto hooks = std::make_shared<sg::AttentionHooks>();
    hooks->telemetry = sg::store_telemetry(telemetry);
    model->set_hooks(hooks);
    {
      torch::NoGradGuard no_grad;
      for (int64_t k = 0; k < 2; ++k) {
        telemetry.clear();
        model->hidden(sg::sample_batch(file, sg::Split::val, config.train.eval_seed, k * 4, 4, 16).inputs);
        for (const auto& layer : telemetry) {
          const auto mass = std::string(arm) == "sinktoken" ? layer.weights.select(-1, 0).narrow(2, 1, 16)
                                                            : layer.phantom_mass;
          if (!mass.defined()) continue;
          phantom += mass.sum().item<double>();
          count += mass.numel();
        }
      }
    }
    model->set_hooks(nullptr);
    for (const auto& e : result.exposure) {
      if (e.layer >= 0) continue;
      if (std::string(arm) == "baseline") {
        CHECK(std::isnan(e.phantom_mass));
      } else {
        CHECK(std::abs(e.phantom_mass - phantom / static_cast<double>(count)) < 1e-6);
      }
      CHECK(e.quiet_mass > 0.0);
      CHECK(e.quiet_mass < 1.0);
    }
    CHECK(result.exposure.size() == 2 * 3);  // two cutoffs x (two layers + all)
  }
}

TEST_CASE("under corruption the fused path gives the loss of the explicit path") {
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  for (const char* arm : {"baseline", "combo2", "renorm"}) {
    INFO(arm);
    const auto config = small_run(arm);
    auto model = small_model(config);
    const auto batch = sg::sample_batch(file, sg::Split::val, 0, 0, 4, 16);
    sg::Corruptor corruptor(sg::CorruptionSpec{sg::JunkType::structured, sg::Cutoff::median, 0.8, 3});
    model->set_hooks(corruptor.hooks());
    torch::NoGradGuard no_grad;
    model->set_backend(sg::AttentionBackend::fused);
    const double fused = model->loss(batch.inputs, batch.targets).item<double>();
    model->set_backend(sg::AttentionBackend::explicit_math);
    const double explicit_loss = model->loss(batch.inputs, batch.targets).item<double>();
    model->set_hooks(nullptr);
    CHECK(std::abs(fused - explicit_loss) < 1e-5);
  }
}

TEST_CASE("a battery that fails midway leaves the model as it was: no hooks, its training mode") {
  Tokens tokens;
  const auto file = sg::TokenFile::open(tokens.path);
  const auto config = small_run("projgate");
  auto model = sg::build_model(config.model, 42);  // w_h = 0 at init: own-direction junk fails in the first pass
  model->train();
  const auto batch = sg::sample_batch(file, sg::Split::val, 0, 0, 4, 16);
  double before = 0;
  {
    torch::NoGradGuard no_grad;
    before = model->loss(batch.inputs, batch.targets).item<double>();
  }
  CHECK_THROWS_WITH(sg::inject(*model, config, file, options_for({sg::JunkType::own_direction}, {0.4})),
                    Catch::Contains("w_h = 0"));
  CHECK(model->is_training());
  torch::NoGradGuard no_grad;
  double after = 0;
  CHECK_NOTHROW(after = model->loss(batch.inputs, batch.targets).item<double>());  // the failing hook is gone
  CHECK(after == before);
}
