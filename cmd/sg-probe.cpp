// sg-probe — what trained gates and sinks do: gate overrides (Table 8), sink analysis (Section 4.4,
// Figure 5), gate selectivity (App. G, Figure 1c), the tokens a gate attenuates (App. G) and the
// excess kurtosis of the value basis (App. G).
//
// Input: one or more run files (sg-train) and the token file they were trained on. Every model is
// measured on sg-inject's fixed validation batches (--eval-seed, --batches, --batch-size,
// --context), so arms and seeds see the same tokens; the probes are defined in
// lib/instruments/probe.h. Probes that do not apply to an arm (overrides without a value-slot
// gate, selectivity and gate-tokens without a gate) are left out with a warning; a single run
// with no applicable probe is an error.
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
#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/instruments/injection.h"
#include "lib/instruments/probe.h"
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
  std::string junk = "structured";
  std::string cutoff = "q25";
  std::string vocab;
  sg::ProbeOptions probe;
};

/// The vocabulary that decodes the token file's ids: --vocab, else the file the token file was
/// made with (its `vocabulary` attribute) when it is still there, else the default vocabulary.
/// UsageError when its size differs from the token file's.
sg::Tokenizer load_vocabulary(const std::string& given, const sg::TokenFile& tokens) {
  std::string path = given;
  if (path.empty()) {
    path = tokens.info().vocabulary;
    std::error_code error;
    if (path.empty() || !std::filesystem::exists(path, error)) path = sg::default_vocabulary_path();
  }
  auto vocabulary = sg::Tokenizer::load(path);
  if (vocabulary.vocab_size() != tokens.info().vocab_size)
    throw sg::UsageError("the vocabulary " + path + " has " + std::to_string(vocabulary.vocab_size()) +
                             " ids, but the token file " + tokens.path() + " has vocab_size " +
                             std::to_string(tokens.info().vocab_size),
                         "give the vocabulary the token file was made with: --vocab FILE");
  return vocabulary;
}

void run(const Options& options, const std::string& command_line) {
  sg::log::set_level(options.common.log_level);
  sg::set_threads(options.common.threads);
  std::vector<std::string> inputs = options.runs;
  inputs.push_back(options.tokens);
  sg::h5::check_writable(options.common.output, options.common.force, inputs);
  sg::ProbeOptions probe = options.probe;
  probe.probes = sg::parse_probes(options.probes);
  probe.junk = sg::parse_junk(options.junk);
  probe.cutoff = sg::parse_cutoff(options.cutoff);
  probe.seed = options.common.seed;
  probe.device = sg::parse_device(options.common.device);
  const auto tokens = sg::TokenFile::open(options.tokens);
  // Check every input before the first model runs.
  std::vector<sg::RunState> states;
  bool any_gate_tokens = false;
  for (const auto& path : options.runs) {
    states.push_back(sg::read_run_state(path));
    const auto& config = states.back().config;
    const auto& arm = config.model.arm;
    sg::check_vocabulary_fits(tokens, config.model, "the model of " + path);
    sg::InjectionOptions context;
    context.context = probe.context;
    sg::injection_context(context, config.model);  // throws for a context the model does not have
    bool any = false;
    for (auto p : probe.probes) any = any || sg::probe_applies(p, arm);
    if (!any && options.runs.size() == 1)
      throw sg::UsageError("none of the probes asked for applies to arm " + arm.name() + " (" + path + ")",
                           "overrides need a value-slot gate (normgate, projgate, combo, combo2, ZERO+normgate or "
                           "ZERO+projgate); selectivity and gate-tokens need a gate; sinks and kurtosis apply to "
                           "every arm");
    const bool overrides = std::find(probe.probes.begin(), probe.probes.end(), sg::Probe::overrides) != probe.probes.end();
    if (overrides && sg::probe_applies(sg::Probe::overrides, arm) && probe.dose > 0 &&
        probe.junk == sg::JunkType::own_direction && arm.filter != sg::Filter::projgate)
      throw sg::UsageError("own-direction junk needs a projection gate, and arm " + arm.name() + " (" + path +
                           ") has none");
    any_gate_tokens = any_gate_tokens || sg::probe_applies(sg::Probe::gate_tokens, arm);
  }
  std::unique_ptr<sg::Tokenizer> vocabulary;
  const bool gate_tokens =
      std::find(probe.probes.begin(), probe.probes.end(), sg::Probe::gate_tokens) != probe.probes.end();
  if (gate_tokens && any_gate_tokens) {
    vocabulary = std::make_unique<sg::Tokenizer>(load_vocabulary(options.vocab, tokens));
    probe.vocabulary = vocabulary.get();
  }
  auto table = sg::probe_table();
  std::vector<std::vector<std::pair<std::string, std::string>>> run_keys;  // per row
  std::vector<std::string> sources;
  for (size_t i = 0; i < options.runs.size(); ++i) {
    const auto& path = options.runs[i];
    const auto& state = states[i];
    const auto& config = state.config;
    if (!state.finished) sg::log::info("sg-probe: warning: " + path + " is unfinished (step " + std::to_string(state.step) + ")");
    auto model = sg::load_model(path, probe.device);
    const std::string name = "sg-probe: [" + std::to_string(i + 1) + "/" + std::to_string(options.runs.size()) + " " +
                             config.tier + " " + config.model.arm.name() + " seed " + std::to_string(config.seed) + "] ";
    probe.progress = [&](const std::string& line) { sg::log::info(name + line); };
    const auto result = sg::probe_model(*model, config, tokens, probe);
    for (const auto p : result.skipped)
      sg::log::info("sg-probe: warning: " + path + ": probe " + sg::to_string(p) + " does not apply to arm " +
                    config.model.arm.name() + "; its rows are left out");
    sg::append_probe_rows(table, config, result);
    run_keys.resize(table.rows(), sg::run_keys(path, state));
    sources.resize(table.rows(), path);
  }
  sg::add_key_columns(table, run_keys, sources);
  if (vocabulary) inputs.push_back(vocabulary->path());
  std::ostringstream settings;
  settings << "probes=" << options.probes << " batches=" << probe.batches << " batch_size=" << probe.batch_size
           << " context=" << probe.context << " eval_seed=" << probe.eval_seed << " seed=" << probe.seed
           << " junk=" << options.junk << " cutoff=" << options.cutoff << " dose=" << probe.dose
           << " sink_positions=" << probe.sink_positions << " min_count=" << probe.min_count << " top=" << probe.top;
  sg::write_table(options.common.output, table, sg::make_provenance("sg-probe", command_line, inputs, settings.str()),
                  options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-probe",
                         "Gate overrides, sink analysis, gate selectivity, token gates and value-basis kurtosis of "
                         "run files; writes a result table.");
  parser.option("runs", options.runs, "run files from sg-train", /*required=*/true);
  parser.option("--tokens", options.tokens, "the token file the runs were trained on", /*required=*/true);
  parser.option("--probe", options.probes,
                "probes, comma-separated: overrides, sinks, selectivity, gate-tokens, kurtosis, or all");
  parser.option("--batches", options.probe.batches, "evaluation batches (sg-inject's by default)");
  parser.option("--batch-size", options.probe.batch_size, "sequences per batch");
  parser.option("--context", options.probe.context, "tokens per sequence (0: min(512, the model's context))");
  parser.option("--eval-seed", options.probe.eval_seed, "validation stream of the batches (-1: the run's eval_seed)");
  parser.option("--junk", options.junk, "overrides: junk type of the corrupted column (as sg-inject's --junk)");
  parser.option("--cutoff", options.cutoff, "overrides: quiet-read cutoff of the corrupted column: q25 or median");
  parser.option("--dose", options.probe.dose, "overrides: the corrupted column's epsilon (0: clean only)");
  parser.option("--sink-positions", options.probe.sink_positions,
                "leading positions that are the sink: queries before them are not averaged, reads from them are "
                "not ordinary (sg-survey's S)");
  parser.option("--min-count", options.probe.min_count, "gate-tokens: occurrences a token needs to be listed");
  parser.option("--top", options.probe.top, "gate-tokens: tokens listed at each end (0: every listed token)");
  parser.option("--vocab", options.vocab,
                "gate-tokens: vocabulary decoding the ids (default: the token file's, else $SINKGATE_VOCAB or the "
                "cached gpt2.tiktoken)");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kSeed | sg::cli::kDevice |
                                    sg::cli::kThreads | sg::cli::kLogLevel);
  parser.footer("--seed keys the shuffle's permutations and the junk (with batch and layer, never the arm): arms given "
                "the same --seed are probed alike. Table 8's corrupted column defaults to structured junk at the q25 "
                "cutoff, epsilon 0.2: the primary condition of Section 6 (Figure 2).");
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser.command_line()); });
}
