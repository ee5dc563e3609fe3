// sg-probe — what trained gates and sinks do: gate overrides (Table 8), sink analysis (Section 4.4,
// Figure 5), gate selectivity (App. G, Figure 1c), the tokens a gate attenuates (App. G), the
// excess kurtosis of the value basis (App. G), and (by name) how close the reads come to the
// projection gate's learned direction (Section 7's open limitation).
//
// Input: one or more run files (sg-train) and the token file they were trained on. Every model is
// measured on sg-inject's fixed validation batches (--eval-seed, --batches, --batch-size,
// --context), so arms and seeds see the same tokens; the probes are defined in
// lib/instruments/probe.h. Probes that do not apply to an arm (by the arm table: overrides without
// a value-slot gate, selectivity and gate-tokens without a gate) are left out with a warning; a
// single run with no applicable probe is an error, and so is --probe direction on a run without a
// projection or key gate (check_probes_apply).
//
// Output: one result table (lib/SCHEMA.md, "sg-probe output"), long form: one value per row, keyed
// by run, tier, arm, seed, probe, statistic and the probe's own keys (override, junk, cutoff, dose;
// layer, head; end, rank, token, text).
//
// Examples:
//   sg-probe --tokens data/tokens.h5 runs/124M/{normgate,combo}/0.h5 --probe overrides -o - |
//     sg-tabulate - --where statistic=loss --rows arm,override --cols dose
//   sg-probe --tokens data/tokens.h5 runs/124M/*/0.h5 --probe sinks,selectivity -o results/probe.h5
//   sg-probe --tokens data/tokens.h5 run.h5 --probe gate-tokens --min-count 50 --top 20 -o tokens.csv
//   sg-probe --tokens data/tokens.h5 runs/124M/combo2/0.h5 --probe direction -o - |
//     sg-tabulate - --where head=all --where statistic=cos_q50,cos_q99,cos_max --rows layer --cols statistic
#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/text.h"
#include "lib/instruments/injection.h"
#include "lib/instruments/probe.h"
#include "lib/instruments/runs.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/model/checkpoint.h"
#include "lib/model/runtime.h"
#include "lib/text/token_file.h"
#include "lib/text/tokenizer.h"

namespace {

struct Options {
  sg::cli::CommonOptions common = sg::cli::to_stdout();
  std::vector<std::string> runs;
  std::string tokens;
  std::string probes = "all";
  std::vector<std::string> junk = {"structured"};
  std::vector<std::string> cutoffs = {"median"};
  std::vector<std::string> doses = {"0.2"};
  std::string vocab;
  bool allow_other_tokens = false;
  sg::ProbeOptions probe;
};

/// The vocabulary that decodes the token file's ids: the one it records (embedded, or GPT-2's),
/// which --vocab must match; for token files of older versions --vocab, else the file the token
/// file was made with (its `vocabulary` attribute) when it is still there, else the default
/// vocabulary. UsageError when its size differs from the token file's.
sg::Tokenizer load_vocabulary(const std::string& given, const sg::TokenFile& tokens) {
  if (tokens.info().tokenizer_record.known())
    return sg::tokenizer_for(tokens.info().tokenizer_record, tokens.path(), given);
  std::string path = given;
  if (path.empty()) {
    path = tokens.info().vocabulary;
    std::error_code error;
    if (path.empty() || !std::filesystem::exists(path, error)) path = sg::default_vocabulary_path();
  }
  auto vocabulary = sg::Tokenizer::load(path);
  if (vocabulary.vocab_size() != tokens.info().vocab_size) {
    const std::string message = "the vocabulary " + path + " has " + std::to_string(vocabulary.vocab_size()) +
                                " ids, but the token file " + tokens.path() + " has vocab_size " +
                                std::to_string(tokens.info().vocab_size);
    // --vocab is the user's choice (a usage error); a vocabulary the token file names, or the
    // default one taken for it, that does not fit is the token file's fault (exit 3).
    if (!given.empty()) throw sg::UsageError(message, "give the vocabulary the token file was made with: --vocab FILE");
    throw sg::InputError(message + " (from its 'vocabulary' attribute, or the default vocabulary)",
                         "the token file's vocabulary attribute is damaged or names another file: give --vocab FILE");
  }
  return vocabulary;
}

void run(const Options& options, const std::string& command_line) {
  std::vector<std::string> inputs = options.runs;
  inputs.push_back(options.tokens);
  // The vocabulary that may decode gate tokens is an input too (--vocab v -o v destroyed it).
  auto protected_inputs = inputs;
  if (!options.vocab.empty())
    for (const auto& file : sg::vocabulary_files(options.vocab)) protected_inputs.push_back(file);
  sg::h5::check_writable(options.common.output, options.common.force, protected_inputs);
  sg::ProbeOptions probe = options.probe;
  probe.probes = sg::parse_probes(options.probes);
  sg::InjectionOptions battery;  // the corrupted columns, parsed as sg-inject parses its battery
  sg::set_battery(battery, options.junk, options.cutoffs, options.doses);
  probe.junk = battery.junk;
  probe.cutoffs = battery.cutoffs;
  probe.doses = battery.doses;
  probe.seed = options.common.seed;
  probe.device = sg::parse_device(options.common.device);
  const auto tokens = sg::TokenFile::open(options.tokens);
  bool any_gate_tokens = false;
  std::ostringstream settings;
  settings << "probes=" << options.probes << " batches=" << probe.batches << " batch_size=" << probe.batch_size
           << " context=" << probe.context << " eval_seed=" << probe.eval_seed << " seed=" << probe.seed
           << " junk=" << sg::join(options.junk, ",") << " cutoff=" << sg::join(options.cutoffs, ",")
           << " dose=" << sg::join(options.doses, ",") << " sink_positions=" << probe.sink_positions
           << " min_count=" << probe.min_count << " top=" << probe.top;
  auto provenance = sg::make_provenance("sg-probe", command_line, inputs, settings.str());
  sg::RunChecks checks;
  checks.tokens = &tokens;
  checks.token_sha256 = provenance.sha256_of(options.tokens);
  checks.allow_other_tokens = options.allow_other_tokens;
  checks.check = [&](const sg::MeasuredRun& run) {
    const auto& arm = run.state.config.model.arm;
    sg::InjectionOptions context;
    context.context = probe.context;
    sg::injection_context(context, run.state.config.model);  // throws for a context the model does not have
    sg::check_probes_apply(probe, arm, options.runs.size() == 1, run.path);
    any_gate_tokens = any_gate_tokens || sg::probe_applies(sg::Probe::gate_tokens, arm);
  };
  const auto runs = sg::open_runs(options.runs, checks);
  provenance.arithmetic = sg::runs_arithmetic(runs, probe.device);
  std::unique_ptr<sg::Tokenizer> vocabulary;
  const bool gate_tokens =
      std::find(probe.probes.begin(), probe.probes.end(), sg::Probe::gate_tokens) != probe.probes.end();
  if (gate_tokens && any_gate_tokens) {
    vocabulary = std::make_unique<sg::Tokenizer>(load_vocabulary(options.vocab, tokens));
    probe.vocabulary = vocabulary.get();
  }
  auto table = sg::probe_table();
  sg::measure_runs(runs, probe.device, table, [&](const sg::MeasuredRun& run, sg::GPTImpl& model) {
    const auto& config = run.state.config;
    auto options_of_run = probe;
    options_of_run.progress = [&](const std::string& line) { sg::log::info(run.progress + line); };
    const auto result = sg::probe_model(model, config, tokens, options_of_run);
    for (const auto p : result.skipped)
      sg::log::warn(run.path + ": probe " + sg::to_string(p) + " does not apply to arm " + config.model.arm.name() +
                    "; its rows are left out");
    sg::append_probe_rows(table, config, result);
  });
  if (vocabulary && !tokens.info().tokenizer_record.known())  // else the token file itself holds it
    provenance.inputs.push_back({vocabulary->path(), sg::sha256_file(vocabulary->path())});
  sg::write_table(options.common.output, table, provenance, options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-probe",
                         "Gate overrides, sink analysis, gate selectivity, token gates, value-basis kurtosis and "
                         "the reads' cosine to the gate direction of run files; writes a result table.");
  parser.option("runs", options.runs, "run files from sg-train", /*required=*/true);
  parser.option("--tokens", options.tokens, "the token file the runs were trained on", /*required=*/true);
  std::vector<std::string> paper_probes;
  for (const auto probe : sg::all_probes()) paper_probes.push_back(sg::to_string(probe));
  parser.option("--probe", options.probes,
                "probes, comma-separated: " + sg::join(sg::probe_names(), ", ") + ", or all (the paper's: " +
                    sg::join(paper_probes, ", ") + ")");
  parser.evaluation_batches(options.probe.batches, options.probe.batch_size, options.probe.context,
                            options.probe.eval_seed);
  parser.list("--junk", options.junk,
              "overrides: junk types of the corrupted columns (comma list or repeats): " +
                  sg::join(sg::junk_type_names(), ", "));
  parser.list("--cutoff", options.cutoffs,
              "overrides: quiet-read cutoffs of the corrupted columns: " + sg::join(sg::cutoff_names(), ", "));
  parser.list("--dose", options.doses, "overrides: the corrupted columns' epsilons (0 alone: the clean column only)");
  parser.option("--sink-positions", options.probe.sink_positions,
                "leading positions that are the sink: queries before them are not averaged, reads from them are "
                "not ordinary (sg-survey's S)");
  parser.option("--min-count", options.probe.min_count, "gate-tokens: occurrences a token needs to be listed");
  parser.option("--top", options.probe.top, "gate-tokens: tokens listed at each end (0: every listed token)");
  parser.flag("--allow-other-tokens", options.allow_other_tokens,
              "probe runs on a token file other than the one they were trained on (by SHA-256): a warning");
  parser.option("--vocab", options.vocab,
                "gate-tokens: vocabulary decoding the ids (default: the token file's, else $SINKGATE_VOCAB or the "
                "cached gpt2.tiktoken)");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kSeed | sg::cli::kDevice |
                                    sg::cli::kThreads | sg::cli::kLogLevel);
  parser.footer("--seed keys the shuffle's permutations and the junk (with batch and layer, never the arm): arms given "
                "the same --seed are probed alike. Table 8's corrupted column defaults to structured junk at the median "
                "cutoff, epsilon 0.2: the paper's Table 8 trained-gate increases (+0.0156 norm gate, +0.0087 combo at "
                "124M) are Table 7's median cells (+0.016, +0.009), not its q25 ones (+0.004, +0.004).");
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser.command_line()); });
}
