// evaluation.h — what sg-eval measures, model by model: the validation loss of run files (the
// wide table of Tables 1, 2, 5: one row a run) and every task of every model, run files and
// Hugging Face folders alike (the long table: keys task, metric, bin; lib/SCHEMA.md "sg-eval
// output"). Every input is read and checked before the first model runs.
//
// Not here: the tasks' scoring rules (zero_shot.h), the loop over run files (runs.h), the
// command line and the output files (cmd/sg-eval.cpp).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/instruments/zero_shot.h"
#include "lib/io/results.h"

namespace sg {

/// The tasks sg-eval scores, in --help order and the order the long table lists them: "val" (the
/// validation loss on a token file), "lambada", "hellaswag", "wikitext". Every --task list and hint
/// is this one.
const std::vector<std::string>& evaluation_task_names();

/// The tasks of a comma list, each once, in the order given. Throws UsageError for an unknown
/// task (naming the known ones) or an empty list.
std::vector<std::string> parse_evaluation_tasks(const std::string& list);

/// What to evaluate and how (sg-eval's options).
struct EvaluationSettings {
  std::vector<std::string> models;  // run files and/or Hugging Face folders
  std::vector<std::string> tasks;   // parse_evaluation_tasks
  std::string tokens;               // val: the token file
  int64_t batches = 0;              // val: 0 = a run's final_eval_batches (64 of 8 windows for a folder)
  int64_t context = 0;              // val of a folder: 0 = min(its context, 1024)
  bool allow_other_tokens = false;  // runs scored on another token file than their own: a warning
  std::string lambada, hellaswag, wikitext;  // the task files
  std::string vocab;                // "" = each model's own
  bool examples = false;            // also the per-example table
  int64_t batch_size = 16;          // zero-shot requests per forward pass
  int64_t limit = 0;                // the first N examples of each zero-shot task (0: all)

  bool wants(const std::string& task) const;
};

/// The zero-shot tasks' examples, read (and checked) before any model runs.
struct TaskData {
  std::vector<std::string> passages, pages;
  std::vector<HellaSwagItem> items;
  std::vector<std::string> files;  // the task files read, inputs of the output's provenance
};

/// Reads the data of the settings' zero-shot tasks (at most `limit` examples each). Throws
/// InputError naming the file for missing or malformed data.
TaskData read_task_data(const EvaluationSettings& settings);

/// The wide table: val_loss of every run file (models are run files only), on `tokens` (the file
/// settings.tokens, whose SHA-256 is token_sha256); with `arithmetic`, sets it to the provenance's
/// account of the measurement's arithmetic (runs_arithmetic).
ResultTable validation_table(const EvaluationSettings& settings, const TokenFile& tokens, const std::string& token_sha256,
                             const torch::Device& device, std::string* arithmetic = nullptr);

/// The long table of every task of every model, and (settings.examples) the per-example table;
/// every model is checked first (run files read, for val each model's ids against the token file).
struct EvaluationTables {
  ResultTable metrics, examples;
};
EvaluationTables evaluate_models(const EvaluationSettings& settings, const TaskData& data,
                                 const std::string& token_sha256, const torch::Device& device);

}  // namespace sg
