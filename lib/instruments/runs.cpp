// runs.cpp — open_runs and measure_runs: the measuring tools' loop over run files.
#include "lib/instruments/runs.h"

#include <algorithm>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/kernels/loss_tuning.h"
#include "lib/model/runtime.h"

namespace sg {

MeasuringPlan measuring_loss_plan(const RunConfig& config, const torch::Device& device) {
  const LossPlan& named = config.train.loss_plan;
  MeasuringPlan out;
  if (named.automatic()) {
    out.text = "this machine's automatic plan (the run records none)";
    return out;
  }
  if (!device.is_cpu()) {  // cuBLAS products and ATen rows: the chunk is the plan's only choice
    out.plan = {named.chunk_rows, LossProducts::plain, RowKernel::portable};
    out.text = "chunks of " + std::to_string(named.chunk_rows) + " rows, the run's own (on " + device.str() +
               " only the chunk applies)";
    return out;
  }
  const LossPlan recorded = spelled_loss_plan(named);
  // A bf16 run's plan: it is measured in float32, where its products run as float32 ones (the
  // table's in_float32: bf16 as plain, avx512bf16 as avx512), as its validation ran in training.
  const bool from_bf16 = info(recorded.products).bf16_run_only;
  const LossPlan wanted =
      from_bf16 ? LossPlan{recorded.chunk_rows, info(recorded.products).in_float32, recorded.row_kernel} : recorded;
  const std::string own = from_bf16 ? ", the bf16 run's " + loss_plan_text(recorded) + " in float32" : ", the run's own";
  const std::string missing = loss_plan_missing(wanted);
  if (missing.empty()) {
    out.plan = wanted;
    out.text = loss_plan_text(wanted) + own;
    return out;
  }
  out.plan = runnable_loss_plan(wanted);
  out.replaced = true;
  out.text = loss_plan_text(out.plan) + " in place of the run's " + loss_plan_text(recorded) + " (this machine has no " +
             missing + ")";
  return out;
}

std::string runs_arithmetic(const std::vector<MeasuredRun>& runs, const torch::Device& device) {
  std::vector<std::string> plans;
  for (const auto& run : runs) plans.push_back(measuring_loss_plan(run.state.config, device).text);
  std::string text = arithmetic_text(device);
  if (plans.empty()) return text;
  if (std::all_of(plans.begin(), plans.end(), [&](const std::string& plan) { return plan == plans.front(); }))
    return text + "; loss plan " + plans.front() + (runs.size() > 1 ? " (every run)" : "");
  text += "; loss plans:";
  for (size_t i = 0; i < runs.size(); ++i) text += (i ? ", " : " ") + runs[i].path + ": " + plans[i];
  return text;
}

std::vector<MeasuredRun> open_runs(const std::vector<std::string>& paths, const RunChecks& checks) {
  std::vector<MeasuredRun> runs;
  for (size_t i = 0; i < paths.size(); ++i) {
    MeasuredRun run;
    run.path = paths[i];
    run.state = read_run_state(run.path);
    run.index = i;
    run.count = paths.size();
    const auto& config = run.state.config;
    run.progress = log::tool() + ": [" + std::to_string(i + 1) + "/" + std::to_string(paths.size()) + " " + config.tier +
                   " " + config.model.arm.name() + " seed " + std::to_string(config.seed) + "] ";
    if (checks.tokens) {
      check_vocabulary_fits(*checks.tokens, config.model, "the model of " + run.path);
      if (!checks.token_sha256.empty())
        check_token_file(run.state, run.path, checks.tokens->path(), checks.token_sha256, checks.allow_other_tokens);
    }
    if (checks.check) checks.check(run);
    runs.push_back(std::move(run));
  }
  for (const auto& run : runs)
    if (!run.state.finished)
      log::warn(run.path + " is unfinished (step " + std::to_string(run.state.step) + " of " +
                std::to_string(run.state.config.train.iterations) + ")");
  return runs;
}

void measure_runs(const std::vector<MeasuredRun>& runs, const torch::Device& device, ResultTable& table,
                  const std::function<void(const MeasuredRun& run, GPTImpl& model)>& measure) {
  if (table.rows() != 0) throw std::logic_error("measure_runs: the table already has rows");
  std::vector<std::vector<std::pair<std::string, std::string>>> keys;  // per row
  std::vector<std::string> sources;                                     // per row
  for (const auto& run : runs) {
    auto model = load_model(run.path, run.state.config, device);
    const auto plan = measuring_loss_plan(run.state.config, device);
    if (plan.replaced)
      log::warn(run.path + ": measured with loss plan " + plan.text + ": its last bits may differ from the run's machine");
    model->set_loss_plan(plan.plan);
    measure(run, *model);
    keys.resize(table.rows(), run_keys(run.path, run.state));
    sources.resize(table.rows(), run.path);
  }
  add_key_columns(table, keys, sources);
}

}  // namespace sg
