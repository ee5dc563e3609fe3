// sg-eval — validation loss of trained run files on the fixed final validation batches.
//
// Input: one or more run files (sg-train) and the token file they were trained on. Output: a
// result table (lib/SCHEMA.md) with one row per run: keys tier, arm, seed, run (and the run's
// labels); values val_loss
// (nats, mean over final_eval_batches fixed batches of the tier's batch size, drawn by the
// evaluation seed: the same tokens for every arm and seed), tokens (the number scored) and
// steps. Zero-shot tasks (LAMBADA, HellaSwag, WikiText-2) are a later addition as new columns.
//
// Examples:
//   sg-eval --tokens data/tokens.h5 runs/small-*.h5 -o results/val.h5
//   sg-eval --tokens data/tokens.h5 run.h5 --batches 8 -o - | sg-tabulate -
#include <chrono>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/model/checkpoint.h"
#include "lib/model/runtime.h"
#include "lib/text/token_file.h"
#include "lib/train/train.h"

namespace {

struct Options {
  sg::cli::CommonOptions common = sg::cli::to_stdout();
  std::string tokens;
  std::vector<std::string> runs;
  int64_t batches = 0;  // 0: each run's final_eval_batches
  bool allow_other_tokens = false;
};

void run(const Options& options, const std::string& command_line) {
  sg::log::set_level(options.common.log_level);
  sg::set_threads(options.common.threads);
  std::vector<std::string> inputs = options.runs;
  inputs.push_back(options.tokens);
  sg::h5::check_writable(options.common.output, options.common.force, inputs);
  const auto device = sg::parse_device(options.common.device);
  const auto tokens = sg::TokenFile::open(options.tokens);
  // The inputs' hashes, once: the provenance of the output, and the check that every run is scored
  // on the token file it was trained on.
  const auto provenance =
      sg::make_provenance("sg-eval", command_line, inputs, "batches=" + std::to_string(options.batches));
  std::string token_sha256;
  for (const auto& input : provenance.inputs)
    if (input.path == options.tokens) token_sha256 = input.sha256;
  for (const auto& path : options.runs)
    sg::check_token_file(sg::read_run_state(path), path, options.tokens, token_sha256, options.allow_other_tokens,
                         "sg-eval");
  sg::ResultTable table;
  table.add_column("tier", sg::Role::key, sg::ColumnType::string);
  table.add_column("arm", sg::Role::key, sg::ColumnType::string);
  table.add_column("seed", sg::Role::key, sg::ColumnType::int64);
  table.add_column("val_loss", sg::Role::value, sg::ColumnType::float64).units = "nats";
  table.add_column("tokens", sg::Role::value, sg::ColumnType::int64).units = "tokens";
  table.add_column("steps", sg::Role::value, sg::ColumnType::int64).units = "optimizer steps";
  std::vector<std::vector<std::pair<std::string, std::string>>> run_keys;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < options.runs.size(); ++i) {
    const auto& path = options.runs[i];
    const auto state = sg::read_run_state(path);
    const auto& config = state.config;
    sg::check_vocabulary_fits(tokens, config.model, "the model of " + path);
    if (!state.finished) sg::log::info("sg-eval: warning: " + path + " is unfinished (step " + std::to_string(state.step) + ")");
    auto model = sg::load_model(path, device);
    const int64_t batches = options.batches > 0 ? options.batches : config.train.final_eval_batches;
    const double loss = sg::validation_loss(*model, tokens, config, batches, device);
    const int64_t scored = batches * config.train.batch() * config.model.block_size;
    table.append_row({config.tier, config.model.arm.name(), config.seed, loss, scored, state.step});
    run_keys.push_back(sg::run_keys(path, state));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = elapsed / static_cast<double>(i + 1) * static_cast<double>(options.runs.size() - i - 1);
    sg::log::info("sg-eval: [" + std::to_string(i + 1) + "/" + std::to_string(options.runs.size()) + " " + config.tier + "/" +
                  config.model.arm.name() + "/" + std::to_string(config.seed) + "] " + path + ": val_loss " +
                  sg::format_exact(loss) + " (eta " + std::to_string(static_cast<int64_t>(left + 0.5)) + " s)");
  }
  sg::add_key_columns(table, run_keys, options.runs);
  sg::write_table(options.common.output, table, provenance, options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-eval", "Validation loss of run files on the fixed final batches; writes a result table.");
  parser.option("runs", options.runs, "run files from sg-train", /*required=*/true);
  parser.option("--tokens", options.tokens, "the token file the runs were trained on", /*required=*/true);
  parser.option("--batches", options.batches, "validation batches (0: the run's final_eval_batches, 64 at paper tiers)");
  parser.flag("--allow-other-tokens", options.allow_other_tokens,
              "score runs on a token file other than the one they were trained on (by SHA-256): a warning");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kDevice | sg::cli::kThreads |
                                    sg::cli::kLogLevel);
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser.command_line()); });
}
