// Tests of lib/instruments/runs: the measuring tools score a run with the loss plan its file
// records, and say so in the provenance's arithmetic.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "lib/base/log.h"
#include "lib/instruments/runs.h"
#include "lib/kernels/cpu_gemm.h"
#include "lib/kernels/cpu_kernels.h"
#include "lib/kernels/loss_tuning.h"
#include "lib/text/token_file.h"
#include "lib/train/train.h"

namespace {

std::string temp_name(const std::string& stem) { return stem + "." + std::to_string(::getpid()) + ".h5"; }

/// Scores a model on 200 validation sequences, one at a time, with the plan given. (Each loss is a
/// float: a plan's last bits show only where they move one across a rounding boundary, so many
/// short ones.)
double scored_with(sg::GPTImpl& model, const sg::LossPlan& plan, const sg::TokenFile& tokens, const sg::RunConfig& config) {
  model.set_loss_plan(plan);
  return sg::validation_loss(model, tokens, config, 200, torch::kCPU);
}

}  // namespace

TEST_CASE("measure_runs scores a run with the loss plan its file records, whatever this machine would choose") {
  sg::log::set_level("quiet");
  const int64_t vocab = 2000;
  const auto tokens_path = temp_name("test_runs_tokens");
  {
    sg::TokenWriter writer(tokens_path, true, 600, "test", vocab, vocab - 1);
    auto generator = at::make_generator<at::CPUGeneratorImpl>(5);
    const auto ids = torch::randint(vocab - 1, {2999}, generator, torch::kLong);
    writer.add_document(std::vector<int32_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel()));
    writer.commit();
  }
  const auto tokens = sg::TokenFile::open(tokens_path);
  auto config = sg::make_run_config("tiny", "baseline", 1);
  sg::apply_overrides(config, {"n_embd=64", "n_head=2", "block_size=16", "vocab_size=" + std::to_string(vocab),
                               "micro_batch=1", "accumulation=1"});
  auto model = sg::build_model(config.model, config.seed);
  {
    torch::NoGradGuard no_grad;  // logits of a few nats' spread, as a trained model has, not an initial model's near-zero ones
    for (auto& p : model->named_parameters())
      if (p.key().find("wte") != std::string::npos) p.value().mul_(8);
  }
  // Two plans that add up the same loss differently: torch::mm and ATen's softmax rows, and the
  // loss's own AVX-512 products and fast rows.
  const sg::LossPlan recorded{16, sg::LossProducts::plain, sg::RowKernel::portable};
  const sg::LossPlan other{7, sg::LossProducts::avx512, sg::switched_row_kernel()};
  const double own = scored_with(*model, recorded, tokens, config);
  const double elsewise = scored_with(*model, other, tokens, config);
  if (own == elsewise) {
    WARN("the two plans give the same bits on this CPU (no AVX-512F?): nothing to tell apart here");
    return;
  }

  sg::RunState state;
  state.config = config;
  state.config.train.loss_plan = recorded;
  const auto run_path = temp_name("test_runs_run");
  sg::save_run(run_path, /*force=*/true, *model, nullptr, state, sg::Provenance{});
  // The environment asks for the other plan: it chooses the plans of runs that record none.
  ::setenv("SINKGATE_LOSS_CHUNK_ROWS", "7", 1);
  ::setenv("SINKGATE_LOSS_PRODUCTS", "avx512", 1);
  CHECK(scored_with(*model, sg::LossPlan{}, tokens, config) == elsewise);

  sg::RunChecks checks;
  checks.tokens = &tokens;
  const auto runs = sg::open_runs({run_path}, checks);
  sg::ResultTable table;
  table.add_column("val_loss", sg::Role::value, sg::ColumnType::float64);
  double measured = 0;
  sg::measure_runs(runs, torch::kCPU, table, [&](const sg::MeasuredRun& run, sg::GPTImpl& loaded) {
    measured = sg::validation_loss(loaded, tokens, run.state.config, 200, torch::kCPU);
    table.append_row({measured});
  });
  CHECK(measured == own);
  const auto arithmetic = sg::runs_arithmetic(runs, torch::kCPU);
  CHECK_THAT(arithmetic, Catch::StartsWith("cpu (") &&
                             Catch::EndsWith(" thread" + std::string(at::get_num_threads() == 1 ? "" : "s") +
                                             "; loss plan 16:plain:portable, the run's own"));

  // A run that records no plan (older versions) is scored with this machine's choice, and says so.
  state.config.train.loss_plan = sg::LossPlan{};
  sg::save_run(run_path, /*force=*/true, *model, nullptr, state, sg::Provenance{});
  const auto old_runs = sg::open_runs({run_path}, checks);
  sg::ResultTable old_table;
  old_table.add_column("val_loss", sg::Role::value, sg::ColumnType::float64);
  sg::measure_runs(old_runs, torch::kCPU, old_table, [&](const sg::MeasuredRun& run, sg::GPTImpl& loaded) {
    measured = sg::validation_loss(loaded, tokens, run.state.config, 200, torch::kCPU);
    old_table.append_row({measured});
  });
  CHECK(measured == elsewise);
  CHECK_THAT(sg::runs_arithmetic(old_runs, torch::kCPU),
             Catch::EndsWith("; loss plan this machine's automatic plan (the run records none)"));
  ::unsetenv("SINKGATE_LOSS_CHUNK_ROWS");
  ::unsetenv("SINKGATE_LOSS_PRODUCTS");
  std::remove(run_path.c_str());
  std::remove(tokens_path.c_str());
}

TEST_CASE("measuring_loss_plan runs a bf16 run's plan in float32: bf16 products as plain ones, avx512bf16 as avx512") {
  auto config = sg::make_run_config("tiny", "baseline", 1);
  config.train.precision = sg::Precision::bf16;
  config.train.loss_plan = sg::parse_loss_plan("512:bf16:portable");
  auto measured = sg::measuring_loss_plan(config, torch::kCPU);
  CHECK(measured.plan.products == sg::LossProducts::plain);
  CHECK(measured.plan.chunk_rows == 512);
  CHECK_THAT(measured.text, Catch::Contains("the bf16 run's 512:bf16:portable in float32"));
  config.train.loss_plan = sg::parse_loss_plan("2048:avx512bf16:portable");
  measured = sg::measuring_loss_plan(config, torch::kCPU);
  // avx512 where this CPU has AVX-512F; elsewhere what it runs instead, said so.
  CHECK(measured.plan.products == (sg::cpu_has_avx512_gemm() ? sg::LossProducts::avx512 : sg::LossProducts::plain));
  CHECK(measured.replaced == !sg::cpu_has_avx512_gemm());
  CHECK(measured.plan.chunk_rows == 2048);
}
