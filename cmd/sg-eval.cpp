// sg-eval — validation loss and the zero-shot tasks of Section 4.1 (Tables 10, 11) for run files
// and pretrained checkpoints.
//
// Inputs: run files (sg-train) and/or Hugging Face folders: GPT-2, GPT-NeoX (Pythia), and sg-export's
// folders of any arm (scored as the run they came from: its validation batches); for the
// task `val` the token file; for the zero-shot tasks their data files (docs/data.md, "Zero-shot task data":
// LAMBADA lambada_test.jsonl, HellaSwag hellaswag_val.jsonl, WikiText-2 wiki.test.raw). Tasks
// (--task, comma-separated): val (the default), lambada, hellaswag, wikitext, scored as
// lm-evaluation-harness v0.4 does (lib/instruments/zero_shot.h; the loop over models:
// lib/instruments/evaluation.h).
// Output: a result table (lib/SCHEMA.md, "sg-eval output"). With --task val alone and run files
// only, the wide table of Tables 1, 2, 5: one row per run, keys tier, arm, seed, run; values
// val_loss (nats, mean over final_eval_batches fixed batches drawn by the evaluation seed: the
// same tokens for every arm and seed), tokens, steps. Otherwise the long table: keys tier, arm,
// seed ("pretrained", the folder's name, -1 for a checkpoint; an export's run's own), task, metric, bin; values model,
// family, value, n.
// --examples FILE also writes every example's log-likelihood (lm-eval's --log_samples).
//
// Examples:
//   sg-eval --tokens data/tokens.h5 runs/small-*.h5 -o results/val.h5
//   sg-eval --task lambada,hellaswag,wikitext runs/124M/*/0.h5 checkpoints/gpt2 -o zero-shot.h5
//   sg-eval --task lambada --lambada data/lambada_test.jsonl --limit 200 run.h5 -o - | sg-tabulate -
#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/hf/language_model.h"
#include "lib/instruments/evaluation.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/model/runtime.h"
#include "lib/text/token_file.h"

namespace {

struct Options {
  sg::cli::CommonOptions common = sg::cli::to_stdout();
  std::vector<std::string> models;
  std::string tasks = "val";
  std::string tokens;
  int64_t batches = 0;  // 0: each run's final_eval_batches (64 for a checkpoint)
  int64_t context = 0;  // val of a checkpoint folder: 0 = min(its context, 1024)
  bool allow_other_tokens = false;
  std::string lambada = "data/lambada_test.jsonl";
  std::string hellaswag = "data/hellaswag_val.jsonl";
  std::string wikitext = "data/wiki.test.raw";
  std::string vocab;
  std::string examples;
  int64_t batch_size = 16;
  int64_t limit = 0;
};

/// The settings of sg::evaluate_models and sg::validation_table, from the options.
sg::EvaluationSettings settings_of(const Options& options) {
  sg::EvaluationSettings settings;
  settings.models = options.models;
  settings.tasks = sg::parse_evaluation_tasks(options.tasks);
  settings.tokens = options.tokens;
  settings.batches = options.batches;
  settings.context = options.context;
  settings.allow_other_tokens = options.allow_other_tokens;
  settings.lambada = options.lambada;
  settings.hellaswag = options.hellaswag;
  settings.wikitext = options.wikitext;
  settings.vocab = options.vocab;
  settings.examples = !options.examples.empty();
  settings.batch_size = options.batch_size;
  settings.limit = options.limit;
  return settings;
}

void run(const Options& options, const std::string& command_line) {
  const auto settings = settings_of(options);
  if (options.batch_size < 1) throw sg::UsageError("--batch-size must be at least 1");
  if (settings.wants("val") && options.tokens.empty())
    throw sg::UsageError("the task val needs --tokens (the token file)", "or leave val out: --task lambada,hellaswag,wikitext");
  // Every input is checked before the first model runs.
  std::vector<std::string> inputs, model_files;
  bool all_runs = true;
  for (const auto& path : options.models) {
    all_runs = all_runs && !sg::is_pretrained_folder(path);
    for (const auto& file : sg::model_input_files(path, options.vocab)) model_files.push_back(file);
  }
  if (!options.tokens.empty() && settings.wants("val")) inputs.push_back(options.tokens);
  const auto data = sg::read_task_data(settings);
  inputs.insert(inputs.end(), data.files.begin(), data.files.end());
  inputs.insert(inputs.end(), model_files.begin(), model_files.end());
  sg::h5::check_writable(options.common.output, options.common.force, inputs);
  if (!options.examples.empty()) {
    if (options.examples == options.common.output)
      throw sg::UsageError("--examples and -o name the same output '" + options.examples + "'",
                           "give the per-example table its own file");
    sg::h5::check_writable(options.examples, options.common.force, inputs);
  }
  const auto device = sg::parse_device(options.common.device);
  if (settings.tasks == std::vector<std::string>{"val"} && all_runs && options.examples.empty()) {
    // Tables 1, 2, 5's table: val_loss of run files, one row each.
    const auto tokens = sg::TokenFile::open(options.tokens);
    std::vector<std::string> wide_inputs = options.models;
    wide_inputs.push_back(options.tokens);
    auto provenance =
        sg::make_provenance("sg-eval", command_line, wide_inputs, "batches=" + std::to_string(options.batches));
    const auto table =
        sg::validation_table(settings, tokens, provenance.sha256_of(options.tokens), device, &provenance.arithmetic);
    return sg::write_table(options.common.output, table, provenance, options.common.force);
  }
  const std::string config = "tasks=" + options.tasks + " batches=" + std::to_string(options.batches) +
                             " context=" + std::to_string(options.context) + " limit=" + std::to_string(options.limit) +
                             " tokenizer=" + (options.vocab.empty() ? "own" : options.vocab);
  auto provenance = sg::make_provenance("sg-eval", command_line, inputs, config);
  provenance.arithmetic = sg::arithmetic_text(device);  // the tasks' losses take the head and ATen's cross-entropy
  const auto tables = sg::evaluate_models(settings, data, provenance.sha256_of(options.tokens), device);
  if (!options.examples.empty()) sg::write_table(options.examples, tables.examples, provenance, options.common.force);
  sg::write_table(options.common.output, tables.metrics, provenance, options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-eval",
                         "Validation loss and zero-shot tasks (LAMBADA, HellaSwag, WikiText-2, as lm-evaluation-harness "
                         "scores them) of run files, their sg-export folders and Hugging Face GPT-2/Pythia folders; "
                         "writes a result table.");
  parser.option("models", options.models, "run files from sg-train and/or Hugging Face checkpoint folders (sg-export's too)", /*required=*/true);
  parser.option("--task", options.tasks, "comma-separated: " + sg::join(sg::evaluation_task_names(), ", "));
  parser.option("--tokens", options.tokens, "val: the token file (the one the runs were trained on)");
  parser.option("--batches", options.batches,
                "val: validation batches (0: a run's final_eval_batches, 64 at paper tiers; 64 of 8 windows for a checkpoint)");
  parser.option("--context", options.context,
                "val of a checkpoint folder: window length (0: its context, at most 1024; run files use their own)");
  parser.flag("--allow-other-tokens", options.allow_other_tokens,
              "score runs on a token file other than the one they were trained on (by SHA-256): a warning");
  parser.option("--lambada", options.lambada, "LAMBADA passages, OpenAI's lambada_test.jsonl (field text)");
  parser.option("--hellaswag", options.hellaswag, "HellaSwag validation items, hellaswag_val.jsonl");
  parser.option("--wikitext", options.wikitext,
                "WikiText-2 test: wiki.test.raw, or JSON Lines of pages (field page) or of lines (field text)");
  parser.option("--vocab", options.vocab,
                "vocabulary for every model (default: a folder's own; a run file's recorded one, GPT-2's for runs of "
                "older versions); for a run file it must be the vocabulary the run records");
  parser.renamed("--tokenizer", "--vocab");
  parser.option("--examples", options.examples, "also write every example's log-likelihood to this result table");
  parser.option("--batch-size", options.batch_size, "zero-shot requests per forward pass");
  parser.option("--limit", options.limit, "score only the first N examples of each zero-shot task (0: all)");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kDevice | sg::cli::kThreads |
                                    sg::cli::kLogLevel);
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser.command_line()); });
}
