// runs.cpp — open_runs and measure_runs: the measuring tools' loop over run files.
#include "lib/instruments/runs.h"

#include "lib/base/error.h"
#include "lib/base/log.h"

namespace sg {

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
    measure(run, *model);
    keys.resize(table.rows(), run_keys(run.path, run.state));
    sources.resize(table.rows(), run.path);
  }
  add_key_columns(table, keys, sources);
}

}  // namespace sg
