// runs.h — the loop every tool that measures run files goes through (sg-eval, sg-inject,
// sg-probe): every input is read and checked before the first model loads, each unfinished run
// is warned about once, progress lines name the run they belong to, and every result row is
// keyed by its run (the `run` key and the run's labels).
//
// Not here: what a tool measures (the callback), pretrained folders (zero_shot.h's LanguageModel).
#pragma once
#include <torch/torch.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "lib/io/results.h"
#include "lib/model/checkpoint.h"
#include "lib/model/model.h"
#include "lib/text/token_file.h"

namespace sg {

/// One run file a tool measures.
struct MeasuredRun {
  std::string path;
  RunState state;
  size_t index = 0, count = 0;  // its place among the inputs (0-based) and how many there are
  /// "TOOL: [2/4 quick combo2 seed 1] ": the start of every progress line about this run.
  std::string progress;
};

/// What open_runs checks of every run besides that its file reads.
struct RunChecks {
  /// The token file the runs are scored on: each model's vocabulary must cover its ids.
  const TokenFile* tokens = nullptr;
  /// With the token file's SHA-256, the run must have been trained on it (check_token_file),
  /// unless allow_other_tokens (then a warning); "" skips that check.
  std::string token_sha256;
  bool allow_other_tokens = false;
  /// The tool's own checks of one run (throw UsageError or InputError naming the file).
  std::function<void(const MeasuredRun&)> check;
};

/// The loss plan a run is measured with (GPTImpl::set_loss_plan): the plan its file records, so
/// that a run scored on two machines runs the same arithmetic where both can run it; where this
/// machine cannot, what it runs instead (runnable_loss_plan), and in files that record none
/// ("auto", older versions) this machine's automatic choice.
struct MeasuringPlan {
  LossPlan plan;
  std::string text;       // the plan and where it came from, in words (the provenance's)
  bool replaced = false;  // the run's plan could not run here
};
MeasuringPlan measuring_loss_plan(const RunConfig& config, const torch::Device& device);

/// The provenance's arithmetic (Provenance::arithmetic) of measuring these runs on `device`: the
/// device and thread count (arithmetic_text), and each run's loss plan (measuring_loss_plan).
std::string runs_arithmetic(const std::vector<MeasuredRun>& runs, const torch::Device& device);

/// Reads every run file's state and runs the checks, all before any model is loaded; then warns
/// once for each unfinished run ("PATH is unfinished (step N of M)"). Throws InputError naming the
/// file that does not read, or what the checks throw.
std::vector<MeasuredRun> open_runs(const std::vector<std::string>& paths, const RunChecks& checks);

/// For each run in order: loads its model onto `device` with its loss plan (measuring_loss_plan;
/// a warning where the run's cannot run here) and calls measure(run, model), which
/// appends the run's rows to `table`; then gives every row the key columns of its run
/// (run_keys, add_key_columns). `table` must hold no rows before.
void measure_runs(const std::vector<MeasuredRun>& runs, const torch::Device& device, ResultTable& table,
                  const std::function<void(const MeasuredRun& run, GPTImpl& model)>& measure);

}  // namespace sg
