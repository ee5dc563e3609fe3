// sg-train — train one GPT-2-style model of a tier with one attention arm and one seed.
//
// Input: a token file (sg-tokenize). Output: a run file (HDF5, lib/SCHEMA.md "Run file") with
// the checkpoint (weights, AdamW state, step, data position, full configuration) and the
// curves, rewritten atomically every checkpoint_interval steps and at the end. The recipe is
// App. A's: AdamW (0.9, 0.95), warm-up then cosine from lr_peak to lr_min at the last step,
// weight decay 0.1 on tensors of dimension >= 2 except the arm parameters, clipping at 1,
// bf16 autocast on CUDA (--precision bf16 on a CPU with bf16 matrix units, float32 there by
// default). Runs with the same seed see the same batches whatever their arm.
//
// Examples:
//   sg-train --tokens data/tokens.h5 --tier small --arm combo2 --seed 0 -o runs/small-combo2-0.h5
//   sg-train --tokens data/tokens.h5 --tier 124M --arm sinklogit --device cuda -o run.h5 --set micro_batch=16 --set accumulation=2
//   sg-train --tokens data/tokens.h5 --tier cpu --precision bf16 -o run.h5   # CPU bf16 (AVX512-BF16, AMX)
//   sg-train --tokens data/tokens.h5 -o run.h5 --resume          # continue a stopped run
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <optional>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/paths.h"
#include "lib/base/text.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/run/config.h"
#include "lib/model/runtime.h"
#include "lib/text/token_file.h"
#include "lib/train/train.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::string tokens;
  std::string tier = "small";
  std::string arm = "baseline";
  std::vector<std::string> overrides;
  std::string precision;  // --precision: the field precision ("" leaves it to --set, --config or the default)
  bool resume = false;
  bool allow_other_tokens = false;
  int64_t stop_after = 0;
  std::vector<std::string> labels;
  double log_interval = 10;
  std::string log_json;
  double dist_timeout = 600;
  std::string on_nonfinite = "error";
};

std::string describe_labels(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::vector<std::string> items;
  for (const auto& [key, value] : labels) items.push_back(key + "=" + value);
  return items.empty() ? "none" : sg::join(items, " ");
}

/// The configuration of the run to continue (--resume): the run file's. An option that would
/// change it is refused rather than silently ignored, but for loss_plan: a new one replaces the
/// run's recorded plan (*loss_plan set; sg::train warns that the run is then not bitwise
/// identical to an uninterrupted one).
sg::RunConfig resumed_config(const Options& options, const sg::cli::Parser& parser, std::optional<sg::LossPlan>* loss_plan) {
  const auto& path = options.common.output;
  const auto state = sg::read_run_state(path);
  const sg::RunConfig& config = state.config;
  sg::RunConfig asked = config;
  if (parser.given("--tier")) asked.tier = sg::find_tier(options.tier).name;
  if (parser.given("--arm")) asked.model.arm = sg::parse_arm(options.arm);
  if (parser.given("--seed")) asked.seed = options.common.seed;
  if (!options.common.config.empty()) sg::load_config_file(asked, options.common.config);
  sg::apply_overrides(asked, options.overrides);
  if (!options.precision.empty()) asked.train.precision = sg::parse_precision(options.precision);
  std::string differences;
  auto sorted = [](std::vector<std::pair<std::string, std::string>> labels) {
    std::sort(labels.begin(), labels.end());
    return labels;
  };
  if (parser.given("--label") && sorted(sg::parse_labels(options.labels)) != sorted(state.labels))
    differences = "labels " + sg::join(options.labels, " ") + " (the file: " + describe_labels(state.labels) + ")";
  if (asked.train.loss_plan != config.train.loss_plan) *loss_plan = asked.train.loss_plan;
  asked.train.loss_plan = config.train.loss_plan;
  const auto have = sg::to_fields(config), want = sg::to_fields(asked);
  for (size_t i = 0; i < have.size(); ++i)
    if (have[i].second != want[i].second)
      differences += (differences.empty() ? "" : ", ") + want[i].first + " " + want[i].second + " (the file: " +
                     have[i].second + ")";
  if (!differences.empty())
    throw sg::UsageError("--resume continues the run in " + path + " as it was configured, but the command line asks for " +
                             differences,
                         "drop those options to continue it, or start a new run under another -o");
  return config;
}

void run(const Options& options, const sg::cli::Parser& parser) {
  // SIGTERM and SIGINT stop the run after a checkpoint (exit 6) from here until the process exits:
  // never released, so that a signal between the last checkpoint and exit is no exit 143.
  static const auto* const stop_signals = new sg::StopSignals();
  (void)stop_signals;
  // Launched by torchrun or srun: one rank of a data-parallel run. Progress comes from rank 0
  // (the others log at --log-level debug only); errors from every rank.
  const auto distributed = sg::distributed_env();
  if (distributed.distributed() && distributed.rank != 0 && options.common.log_level != "debug") sg::log::set_level("quiet");
  if (options.common.output.empty()) throw sg::UsageError("no output run file", "give -o FILE.h5");
  if (options.common.output == "-")  // every checkpoint rewrites the run file: stdout would get one file each
    throw sg::UsageError("a run file cannot be written to stdout ('-o -')",
                         "give -o FILE.h5; other tools read it from there (sg-eval FILE.h5 -o - | sg-tabulate -)");
  if (options.resume && options.common.force) throw sg::UsageError("--resume and --force exclude each other");
  // The JSON log is appended to: never an input or the run file itself.
  for (const auto& [path, what] : {std::pair{options.tokens, "the token file"},
                                   std::pair{options.common.config, "the --config file"},
                                   std::pair{options.common.output, "the run file (-o)"}})
    if (!options.log_json.empty() && sg::same_file(options.log_json, path))
      throw sg::OutputError("--log-json " + options.log_json + " is " + what + ": appending the curves would destroy it",
                            "give the JSON log a file of its own");
  sg::RunConfig config;
  std::optional<sg::LossPlan> loss_plan;  // --resume --set loss_plan=…: the plan replacing the run's
  if (options.resume) {
    config = resumed_config(options, parser, &loss_plan);
  } else {
    std::vector<std::string> inputs{options.tokens};
    if (!options.common.config.empty()) inputs.push_back(options.common.config);
    if (distributed.rank == 0) sg::h5::check_writable(options.common.output, options.common.force, inputs);
    // The model's vocabulary is the token file's unless --config or --set say otherwise;
    // --precision is the field precision, set last.
    auto overrides = options.overrides;
    if (!options.precision.empty()) overrides.push_back("precision=" + options.precision);
    config = sg::configure_run({options.tier, options.arm, options.common.seed,
                                sg::model_vocab_size(sg::TokenFile::read_info(options.tokens)),
                                options.common.config, overrides});
  }

  sg::TrainOptions train;
  train.token_file = options.tokens;
  train.output = options.common.output;
  train.force = options.common.force;
  train.resume = options.resume;
  train.device = sg::parse_device(options.common.device);
  train.distributed = distributed;
  if (options.dist_timeout <= 0) throw sg::UsageError("--dist-timeout must be positive (seconds)");
  train.timeout_seconds = options.dist_timeout;
  if (distributed.distributed() && train.device.is_cuda() && !train.device.has_index())
    train.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(distributed.local_rank));  // LOCAL_RANK's GPU
  train.stop_after = options.stop_after;
  train.labels = sg::parse_labels(options.labels);
  if (options.log_interval < 0) throw sg::UsageError("--log-interval must be >= 0 (0: a line at evaluations only)");
  train.log_interval = options.log_interval;
  train.log_json = options.log_json;
  train.allow_other_tokens = options.allow_other_tokens;
  train.loss_plan = loss_plan;
  train.stop_on_nonfinite = options.on_nonfinite == "stop";
  std::string fields;
  for (const auto& [key, value] : sg::to_fields(config)) fields += key + "=" + value + "\n";
  train.provenance = sg::make_provenance("sg-train", parser.command_line(), {options.tokens}, fields);
  sg::log::info(std::string(options.resume ? "sg-train: resuming " : "sg-train: ") + "tier " + config.tier + ", arm " + config.model.arm.name() + ", seed " +
                std::to_string(config.seed) + ", " + std::to_string(config.train.iterations) + " steps of " +
                std::to_string(config.train.batch()) + " x " + std::to_string(config.model.block_size) + " tokens on " +
                train.device.str() + (distributed.distributed() ? ", " + distributed.describe() : ""));
  const auto summary = sg::train(config, train);
  std::ostringstream line;
  line << std::fixed << std::setprecision(4) << "sg-train: "
       << (summary.finished ? "finished" : summary.nonfinite ? "stopped at a non-finite loss" : "stopped")
       << " at step " << summary.steps << ", final val_loss "
       << summary.final_val_loss << ", " << std::setprecision(0) << summary.tokens_per_second << " tok/s, "
       << std::setprecision(1) << summary.seconds << " s -> " << options.common.output;
  sg::log::info(line.str());
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-train", "Train one model (tier, arm, seed) on a token file; writes a run file.");
  parser.option("--tokens", options.tokens, "token file from sg-tokenize", /*required=*/true);
  parser.option("--tier", options.tier, "tier preset: " + sg::join(sg::tier_names(), ", "));
  parser.option("--arm", options.arm, "arm: " + sg::arm_choices());
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kSeed | sg::cli::kDevice |
                                    sg::cli::kThreads | sg::cli::kLogLevel | sg::cli::kConfig);
  std::vector<std::string> settable;  // every field but those the options above name
  for (const auto& field : sg::field_names())
    if (field != "tier" && field != "arm" && field != "seed") settable.push_back(field);
  parser.option("--set", options.overrides, "override a field, key=value (repeatable): " + sg::join(settable, " "));
  std::vector<std::string> precisions;
  for (const auto& row : sg::precisions()) precisions.push_back(std::string(row.name) + " (" + row.meaning + ")");
  parser.option("--precision", options.precision,
                sg::join(precisions, ", ") + "; recorded in the run file, kept by --resume (the field precision)");
  parser.option("--label", options.labels,
                "KEY=VALUE carried as a key column into every result table made from the run (repeatable; "
                "run=NAME names the run in place of its file)");
  parser.option("--log-interval", options.log_interval,
                "seconds between progress lines besides those of the evaluations (0: evaluations only)");
  parser.option("--log-json", options.log_json,
                "append the curves to this file as JSON Lines: one object a step (run, step, train_loss, lr, "
                "tokens_per_second, grad_norm, max_attention_logit and max_activation (null in steps the field telemetry "
                "does not measure), val_loss at evaluations), and "
                "final_val_loss at the end");
  parser.unknown_option_hint([](const std::string& name) {
    for (const auto& field : sg::field_names())
      if (field == name) return "use --set " + name + "=VALUE (a configuration field, not an option)";
    return std::string();
  });
  parser.flag("--resume", options.resume, "continue the run in the output file (its configuration wins)");
  parser.flag("--allow-other-tokens", options.allow_other_tokens,
              "resume on a token file other than the run's (by SHA-256): a warning, not an error");
  parser.option("--on-nonfinite", options.on_nonfinite,
                "on a non-finite training loss: error (exit 5; the run file keeps its last checkpoint) or stop "
                "(the step is recorded in the curves, no update made, and the run stops there unfinished, exit 0: "
                "a learning-rate sweep keeps its diverged runs)");
  parser.choices({"error", "stop"});
  parser.option("--stop-after", options.stop_after, "stop after this many steps, with a checkpoint (0: run to the end)");
  parser.option("--dist-timeout", options.dist_timeout,
                "data parallelism: seconds the ranks wait for each other (rendezvous, every collective)");
  parser.footer("The loss plan (--set loss_plan=…): auto (the default) chooses the CPU loss's chunk rows, products "
                "and softmax-row kernel for this machine (measured once per machine and shape, cached in "
                "~/.cache/sinkgate/loss-chunks.tsv); ROWS:PRODUCTS[:ROW_KERNEL] fixes it, e.g. 2048:avx512 or "
                "1024:plain:portable (PRODUCTS " + sg::loss_products_names(sg::ProductsOf::float32_runs) + ", or " +
                sg::loss_products_names(sg::ProductsOf::bf16_runs_only) + " in a bf16 run; ROW_KERNEL " +
                sg::row_kernel_names() + ", left out: the best this CPU runs, as SINKGATE_CPU_KERNELS allows). The plan is recorded in the run file and kept by --resume, so a run "
                "continues with the arithmetic it started with; --resume --set loss_plan=… replaces it, with a "
                "warning (not bitwise identical to an uninterrupted run). "
                "Environment (for runs that have no plan yet): SINKGATE_CPU_KERNELS=0 turns off the CPU fast paths "
                "of the float32 loss (MKL's packed GEMM, the AVX-512 products, the AVX-512 or AVX2 softmax rows; "
                "=avx2 caps the rows at AVX2); the same arithmetic then runs through torch::mm and ATen. "
                "SINKGATE_LOSS_CHUNK_ROWS=N and SINKGATE_LOSS_PRODUCTS=PRODUCTS (or "
                "SINKGATE_LOSS_PACKED=0|1) set the plan instead of measuring it (SINKGATE_LOSS_TUNING=0: the fixed "
                "rule); the old names SG_* still work. Data parallelism: "
                "launched by torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) or srun (SLURM_PROCID, "
                "SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_NODELIST), sg-train runs as one rank: NCCL with --device cuda "
                "(the GPU of LOCAL_RANK), Gloo on CPUs; GLOO_SOCKET_IFNAME picks Gloo's interface.");
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser); });
}
