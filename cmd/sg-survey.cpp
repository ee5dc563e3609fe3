// sg-survey — sinks and norm-blind routing in trained models (paper App. F, Table 12, Figure 4).
//
// Inputs: checkpoints — Hugging Face folders of GPT-2 or GPT-NeoX/Pythia models (config.json,
// model.safetensors or shards, and the tokenizer files), sg-train run files (any arm) or their
// sg-export folders (any arm, read as the run's model) — and a text file (the paper: WikiText-2
// validation, raw). Each checkpoint tokenises the text with its own tokenizer (a run file: the one
// it records; or --vocab): the file is read as bytes and
// encoded as one stream, with no normalisation, no end-of-text or BOS tokens and no regard for
// document or line boundaries; the first --blocks consecutive, non-overlapping chunks of
// --block-length tokens are the blocks, one forward pass each (--batch-size blocks at a time).
// For every head it recomputes attention weights and read norms |v_j|/sqrt(d) and measures sink
// mass (first --sink-positions keys, plus a phantom or sink token), the position-0 read-norm
// ratio, and the blind-mass ratio and content share of the quiet band at --percentiles
// (definitions: lib/instruments/survey.h).
//
// Output: a result table (lib/SCHEMA.md), long form: keys model, family, arm, params_m, layers,
// heads, scope (head | model), layer, head, statistic; value `value`. scope=head rows hold every
// head's values (Figure 4); scope=model rows the summaries of Table 12 (mean over heads, the r0
// ratio as the median). pipelines/survey.mk renders Table 12 with sg-tabulate.
//
// Examples:
//   sg-survey checkpoints/gpt2 --text data/wikitext-2/wiki.valid.raw -o runs/survey/gpt2.h5
//   sg-survey checkpoints/pythia-160m --text wiki.valid.raw --device cuda -o - | sg-tabulate - --where scope=model
//   sg-survey results/paper/runs/124M/*/0.h5 --text wiki.valid.raw --device cuda -o results/paper/survey/arms.h5
#include <fstream>
#include <sstream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/instruments/survey.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/model/runtime.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::vector<std::string> checkpoints;
  std::string text;
  std::string vocab;
  std::string name;
  int64_t blocks = 16;
  int64_t block_length = 1024;
  int64_t batch_size = 1;
  int64_t sink_positions = 4;
  std::vector<std::string> percentiles = {"10", "20", "30", "50"};
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sg::InputError(path + ": cannot be read", "--text takes a text file, e.g. WikiText-2's wiki.valid.raw");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void run(const Options& options, const std::string& command_line) {
  if (!options.name.empty() && options.checkpoints.size() != 1)
    throw sg::UsageError("--name names one checkpoint; " + std::to_string(options.checkpoints.size()) + " were given");
  sg::SurveyRun survey;
  survey.statistics.sink_positions = options.sink_positions;
  survey.statistics.batch = options.batch_size;
  survey.statistics.percentiles.clear();
  for (const int64_t q : sg::parse_integers(options.percentiles, "--percentiles"))
    survey.statistics.percentiles.push_back(q);
  survey.statistics.validate();
  survey.blocks = options.blocks;
  survey.block_length = options.block_length;
  survey.tokenizer = options.vocab;
  survey.name = options.name;
  survey.device = options.common.device;
  survey.text_source = options.text;
  sg::parse_device(options.common.device);

  // Every input is checked before the first model is loaded.
  std::vector<std::string> inputs{options.text};
  for (const auto& path : options.checkpoints)
    for (const auto& file : sg::model_input_files(path, options.vocab)) inputs.push_back(file);
  // Every file read is an input the output must not overwrite: a checkpoint's safetensors and
  // vocabulary files, the text (a folder given as a checkpoint is no file to compare).
  sg::h5::check_writable(options.common.output, options.common.force, inputs);
  const auto text = read_text(options.text);

  auto table = sg::survey_table();
  for (const auto& path : options.checkpoints) sg::survey_checkpoint(path, text, survey, table);
  const std::string config = "blocks=" + std::to_string(options.blocks) + " block_length=" +
                             std::to_string(options.block_length) + " sink_positions=" +
                             std::to_string(options.sink_positions) + " percentiles=" + sg::join(options.percentiles, ",") +
                             " tokenizer=" + (options.vocab.empty() ? "own" : options.vocab);
  auto provenance = sg::make_provenance("sg-survey", command_line, inputs, config);
  provenance.arithmetic = sg::arithmetic_text(sg::parse_device(options.common.device));
  sg::write_table(options.common.output, table, provenance, options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  options.common.output = "-";
  sg::cli::Parser parser("sg-survey",
                         "Sink mass and norm-blind routing per attention head (App. F, Table 12) of Hugging Face "
                         "GPT-2/Pythia checkpoints or sg-train run files; writes a result table.");
  parser.option("checkpoints", options.checkpoints,
                "Hugging Face checkpoint folders (GPT-2, GPT-NeoX/Pythia), sg-train run files or their sg-export folders",
                /*required=*/true);
  parser.option("--text", options.text, "text file to measure on (the paper: WikiText-2 validation, raw)", /*required=*/true);
  parser.option("--vocab", options.vocab,
                "vocabulary for every checkpoint (default: the folder's own tokenizer; the one a run file records)");
  parser.option("--name", options.name, "model name in the table (one checkpoint only; default: the folder's base name, or a run's tier/arm/seed)");
  parser.option("--blocks", options.blocks, "number of blocks (consecutive chunks of the tokenised text)");
  parser.option("--block-length", options.block_length, "tokens per block");
  parser.option("--batch-size", options.batch_size, "blocks per forward pass");
  parser.option("--sink-positions", options.sink_positions, "first key positions treated as the sink");
  parser.list("--percentiles", options.percentiles, "percentiles q of the quiet band, comma list or repeats");
  parser.renamed("--tokenizer", "--vocab");
  parser.renamed("--batch", "--batch-size");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kDevice | sg::cli::kThreads |
                                    sg::cli::kLogLevel);
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser.command_line()); });
}
