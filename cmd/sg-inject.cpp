// sg-inject — the injection battery and exposure accounting of paper Section 6 / App. C
// (Tables 6, 7, 9; Figure 2).
//
// Input: one or more run files (sg-train; any arm, any tier) and the token file they were trained
// on. Every model is scored on the same fixed validation batches (--batches of --batch-size
// sequences of --context tokens, drawn by the stream of --eval-seed: the sampler of sg-eval),
// clean and under each condition — a junk type, a cutoff (median or 25th percentile of each
// head's read norms in each sequence) and a dose ε — with the corruption applied to the value
// reads before any gate at every layer at once (lib/instruments/corruption.h). Exposure (Table 9)
// comes from one more clean pass with explicit attention weights.
//
// Output: one result table (lib/SCHEMA.md, "sg-inject output") for all inputs, every row keyed by
// its run (and the run's labels): rows with
// measure=injection (one per run × junk × cutoff × dose: loss, clean_loss, delta_loss, counts)
// and measure=exposure (one per run × cutoff × layer, and layer=all: quiet_mass, phantom_mass).
//
// Examples:
//   sg-inject --tokens data/tokens.h5 runs/124M/*/0.h5 --junk structured,gaussian -o results/inject.h5
//   sg-inject --tokens data/tokens.h5 run.h5 --junk own-direction --cutoff median --dose 0.4,0.8 -o - |
//     sg-tabulate - --where measure=injection --rows arm --cols dose --cell delta_loss --signed
#include <sstream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/text.h"
#include "lib/instruments/injection.h"
#include "lib/instruments/runs.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/model/checkpoint.h"
#include "lib/model/runtime.h"
#include "lib/text/token_file.h"

namespace {

struct Options {
  sg::cli::CommonOptions common = sg::cli::to_stdout();
  std::vector<std::string> runs;
  std::string tokens;
  std::vector<std::string> junk = {"structured"};
  std::vector<std::string> cutoffs = {"q25", "median"};
  std::vector<std::string> doses = {"0.2", "0.4", "0.8", "1.6"};
  sg::InjectionOptions inject;
  bool no_exposure = false;
  bool allow_other_tokens = false;
  std::string backend = "auto";
  std::string same_context = "any";
};

/// The battery's settings, as the provenance records them.
std::string settings(const Options& options, const sg::InjectionOptions& inject) {
  std::ostringstream out;
  out << "junk=" << sg::join(options.junk, ",") << " same_context=" << options.same_context << " cutoff=" << sg::join(options.cutoffs, ",")
      << " doses=" << sg::join(options.doses, ",") << " batches=" << inject.batches << " batch_size=" << inject.batch_size
      << " context=" << inject.context << " eval_seed=" << inject.eval_seed << " seed=" << inject.seed
      << " exposure=" << inject.exposure;
  return out.str();
}

void run(const Options& options, const std::string& command_line) {
  std::vector<std::string> inputs = options.runs;
  inputs.push_back(options.tokens);
  sg::h5::check_writable(options.common.output, options.common.force, inputs);
  sg::InjectionOptions inject = options.inject;
  std::vector<std::string> junk = options.junk;
  if (options.same_context == "earlier")  // no look-ahead: same-context junk from earlier positions only
    for (auto& name : junk)
      if (name == "same-context") name = "same-context-earlier";
  sg::set_battery(inject, junk, options.cutoffs, options.doses);
  inject.seed = options.common.seed;
  inject.exposure = !options.no_exposure;
  inject.device = sg::parse_device(options.common.device);
  inject.skip_inapplicable = options.runs.size() > 1;
  inject.backend = options.backend == "explicit" ? sg::AttentionBackend::explicit_math
                   : options.backend == "fused"  ? sg::AttentionBackend::fused
                                                 : sg::AttentionBackend::automatic;
  const auto tokens = sg::TokenFile::open(options.tokens);
  auto provenance = sg::make_provenance("sg-inject", command_line, inputs, settings(options, inject));
  sg::RunChecks checks;
  checks.tokens = &tokens;
  checks.token_sha256 = provenance.sha256_of(options.tokens);
  checks.allow_other_tokens = options.allow_other_tokens;
  const auto runs = sg::open_runs(options.runs, checks);
  provenance.arithmetic = sg::runs_arithmetic(runs, inject.device);
  auto table = sg::injection_table();
  sg::measure_runs(runs, inject.device, table, [&](const sg::MeasuredRun& run, sg::GPTImpl& model) {
    const auto& config = run.state.config;
    auto options_of_run = inject;
    options_of_run.progress = [&](const std::string& line) { sg::log::info(run.progress + line); };
    const auto result = sg::inject(model, config, tokens, options_of_run);
    for (const auto junk : result.skipped)
      sg::log::warn(run.path + ": " + sg::junk_not_defined(junk, config.model.arm) + "; its rows are left out");
    sg::append_injection_rows(table, config, result);
  });
  sg::write_table(options.common.output, table, provenance, options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-inject",
                         "Injection battery (junk type x cutoff x dose) and exposure accounting of run files; writes "
                         "a result table.");
  parser.option("runs", options.runs, "run files from sg-train", /*required=*/true);
  parser.option("--tokens", options.tokens, "the token file the runs were trained on", /*required=*/true);
  parser.list("--junk", options.junk, "junk types (comma list or repeats): " + sg::join(sg::junk_type_names(), ", "));
  parser.option("--same-context", options.same_context,
                "where same-context junk comes from: any other position of the sequence (App. C), or earlier ones "
                "only (no look-ahead: its rows say junk=same-context-earlier)");
  parser.choices({"any", "earlier"});
  parser.list("--cutoff", options.cutoffs, "quiet-read cutoffs (comma list or repeats): " + sg::join(sg::cutoff_names(), ", "));
  parser.list("--dose", options.doses, "doses epsilon (comma list or repeats; each >= 0)");
  parser.renamed("--doses", "--dose");
  parser.evaluation_batches(options.inject.batches, options.inject.batch_size, options.inject.context,
                            options.inject.eval_seed);
  parser.flag("--no-exposure", options.no_exposure, "skip the exposure pass (Table 9)");
  parser.flag("--allow-other-tokens", options.allow_other_tokens,
              "measure runs on a token file other than the one they were trained on (by SHA-256): a warning");
  parser.option("--attention", options.backend,
                "attention path of the clean and corrupted passes: auto (fused where it runs), explicit, fused");
  parser.choices({"auto", "explicit", "fused"});
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kSeed | sg::cli::kDevice |
                                    sg::cli::kThreads | sg::cli::kLogLevel);
  parser.footer("--seed keys the junk's random choices (with layer, head and batch, never the arm): arms given the "
                "same --seed see the same junk on the same tokens.");
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser.command_line()); });
}
