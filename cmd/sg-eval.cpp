// sg-eval — validation loss and the zero-shot tasks of Section 4.1 (Tables 10, 11) for run files
// and pretrained checkpoints.
//
// Inputs: run files (sg-train) and/or Hugging Face folders: GPT-2, GPT-NeoX (Pythia), and sg-export's
// folders of any arm (scored as the run they came from: its validation batches); for the
// task `val` the token file; for the zero-shot tasks their data files (docs/data.md, "Zero-shot task data":
// LAMBADA lambada_test.jsonl, HellaSwag hellaswag_val.jsonl, WikiText-2 wiki.test.raw). Tasks
// (--task, comma-separated): val (the default), lambada, hellaswag, wikitext, scored as
// lm-evaluation-harness v0.4 does (lib/instruments/zero_shot.h).
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
#include <chrono>
#include <functional>
#include <memory>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/text.h"
#include "lib/hf/language_model.h"
#include "lib/instruments/runs.h"
#include "lib/instruments/zero_shot.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/model/checkpoint.h"
#include "lib/model/runtime.h"
#include "lib/text/token_file.h"
#include "lib/text/tokenizer.h"
#include "lib/train/train.h"

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

const std::vector<std::string> kTasks = {"val", "lambada", "hellaswag", "wikitext"};

std::vector<std::string> parse_tasks(const std::string& list) {
  std::vector<std::string> tasks;
  for (const auto& task : sg::split_list(list)) {
    if (std::find(kTasks.begin(), kTasks.end(), task) == kTasks.end())
      throw sg::UsageError("--task: unknown task '" + task + "'", "tasks: val, lambada, hellaswag, wikitext");
    if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) tasks.push_back(task);
  }
  if (tasks.empty()) throw sg::UsageError("--task names no task");
  return tasks;
}

template <typename T>
std::vector<T> first(std::vector<T> items, int64_t limit) {
  if (limit > 0 && static_cast<int64_t>(items.size()) > limit) items.resize(static_cast<size_t>(limit));
  return items;
}

/// Progress of one task's scoring on stderr, at most every 10 s, with the time left.
sg::ScoringOptions scoring(const Options& options, const std::string& what) {
  sg::ScoringOptions scoring;
  scoring.batch_size = options.batch_size;
  const auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  const auto last = std::make_shared<double>(0.0);
  scoring.progress = [start, last, what](int64_t done, int64_t total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    if (done < total && elapsed - *last < 10.0) return;
    *last = elapsed;
    const double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
    sg::log::info("sg-eval: " + what + ": " + std::to_string(done) + "/" + std::to_string(total) + " requests, " +
                  sg::format_duration(elapsed) + (done < total ? " (eta " + sg::format_duration(left) + ")" : ""));
  };
  return scoring;
}

/// Tables 1, 2, 5's table: val_loss of run files, one row each.
void run_wide(const Options& options, const std::string& command_line) {
  std::vector<std::string> inputs = options.models;
  inputs.push_back(options.tokens);
  const auto device = sg::parse_device(options.common.device);
  const auto tokens = sg::TokenFile::open(options.tokens);
  const auto provenance =
      sg::make_provenance("sg-eval", command_line, inputs, "batches=" + std::to_string(options.batches));
  sg::RunChecks checks;
  checks.tokens = &tokens;
  checks.token_sha256 = provenance.sha256_of(options.tokens);
  checks.allow_other_tokens = options.allow_other_tokens;
  const auto runs = sg::open_runs(options.models, checks);
  sg::ResultTable table;
  table.add_column("tier", sg::Role::key, sg::ColumnType::string);
  table.add_column("arm", sg::Role::key, sg::ColumnType::string);
  table.add_column("seed", sg::Role::key, sg::ColumnType::int64);
  table.add_column("val_loss", sg::Role::value, sg::ColumnType::float64).units = "nats";
  table.add_column("val_batches", sg::Role::value, sg::ColumnType::int64).units = "batches";
  table.add_column("eval_seed", sg::Role::value, sg::ColumnType::int64);
  table.add_column("scored_tokens", sg::Role::value, sg::ColumnType::int64).units = "tokens";
  table.add_column("steps", sg::Role::value, sg::ColumnType::int64).units = "optimizer steps";
  const auto start = std::chrono::steady_clock::now();
  sg::measure_runs(runs, device, table, [&](const sg::MeasuredRun& run, sg::GPTImpl& model) {
    const auto& config = run.state.config;
    const int64_t batches = options.batches > 0 ? options.batches : config.train.final_eval_batches;
    const double loss = sg::validation_loss(model, tokens, config, batches, device);
    const int64_t scored = batches * config.train.batch() * config.model.block_size;
    table.append_row({config.tier, config.model.arm.name(), config.seed, loss, batches, config.train.eval_seed, scored,
                      run.state.step});
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = elapsed / static_cast<double>(run.index + 1) * static_cast<double>(run.count - run.index - 1);
    sg::log::info(run.progress + run.path + ": val_loss " + sg::format_exact(loss) + " on " + std::to_string(batches) +
                  " validation batches (eval_seed " + std::to_string(config.train.eval_seed) + ") (eta " +
                  sg::format_duration(left) + ")");
  });
  sg::write_table(options.common.output, table, provenance, options.common.force);
}

/// The zero-shot tasks' examples, read (and checked) before any model runs.
struct TaskData {
  std::vector<std::string> passages, pages;
  std::vector<sg::HellaSwagItem> items;
};

/// The val task of one model: a run's own final validation batches (what the wide table gives),
/// also for its export (a baseline's, read as GPT-2, on the same windows), or for another
/// checkpoint folder windows of its context.
sg::Metric val_metric(const Options& options, const sg::LanguageModel& model, const torch::Device& device) {
  const auto tokens = sg::TokenFile::open(options.tokens);
  sg::Metric metric{"val", "loss", "all", 0.0, 0};
  if (model.has_run()) {
    const auto& config = model.run_state().config;
    const int64_t batches = options.batches > 0 ? options.batches : config.train.final_eval_batches;
    metric.value = model.pretrained() ? sg::window_loss(model, tokens, config.model.block_size, batches * config.train.batch(),
                                                        config.train.eval_seed, config.train.micro_batch)
                                      : sg::validation_loss(model.run_model(), tokens, config, batches, device);
    metric.n = batches * config.train.batch() * config.model.block_size;
  } else {
    const int64_t context = options.context > 0 ? options.context : std::min<int64_t>(model.context_length(), 1024);
    const int64_t sequences = (options.batches > 0 ? options.batches : 64) * 8;
    metric.value = sg::window_loss(model, tokens, context, sequences, sg::TrainConfig{}.eval_seed, 8);
    metric.n = sequences * context;
  }
  return metric;
}

/// Every model checked before the first one runs: the run files read (a warning for each
/// unfinished one), and for val every model against the token file (a run file: the token file it
/// was trained on; a folder: a token file of its tokenizer's ids).
void check_models(const Options& options, bool val, const std::string& token_sha256) {
  std::unique_ptr<sg::TokenFile> tokens;
  if (val) tokens = std::make_unique<sg::TokenFile>(sg::TokenFile::open(options.tokens));
  std::vector<std::string> runs;
  for (const auto& path : options.models) {
    if (!sg::is_pretrained_folder(path)) {
      runs.push_back(path);
    } else if (val) {
      const std::string vocabulary = options.vocab.empty() ? path : options.vocab;
      sg::check_token_ids(*tokens, sg::Tokenizer::load(vocabulary), vocabulary);
    }
  }
  sg::RunChecks checks;
  checks.tokens = tokens.get();
  checks.token_sha256 = token_sha256;
  checks.allow_other_tokens = options.allow_other_tokens;
  sg::open_runs(runs, checks);
}

/// The long table: every task of every model (run files and checkpoint folders).
void run_tasks(const Options& options, const std::vector<std::string>& tasks, const TaskData& data,
               const std::vector<std::string>& inputs, const std::string& command_line) {
  const auto wants = [&](const std::string& task) { return std::find(tasks.begin(), tasks.end(), task) != tasks.end(); };
  const auto device = sg::parse_device(options.common.device);
  const std::string config = "tasks=" + options.tasks + " batches=" + std::to_string(options.batches) +
                             " context=" + std::to_string(options.context) + " limit=" + std::to_string(options.limit) +
                             " tokenizer=" + (options.vocab.empty() ? "own" : options.vocab);
  const auto provenance = sg::make_provenance("sg-eval", command_line, inputs, config);
  check_models(options, wants("val"), provenance.sha256_of(options.tokens));
  auto table = sg::evaluation_table();
  sg::ResultTable examples;
  std::vector<std::vector<std::pair<std::string, std::string>>> run_keys, example_keys;
  std::vector<std::string> sources, example_sources;
  for (size_t m = 0; m < options.models.size(); ++m) {
    const auto& path = options.models[m];
    const auto model = sg::LanguageModel::load(path, device, options.vocab);
    const auto keys = model.has_run() ? sg::run_keys(path, model.run_state())
                                      : std::vector<std::pair<std::string, std::string>>{{"run", path}};
    const std::string where = "[" + std::to_string(m + 1) + "/" + std::to_string(options.models.size()) + " " + model.name() + "]";
    std::vector<sg::Metric> metrics;
    const auto add = [&](sg::TaskResult result) {
      for (const auto& metric : result.metrics)
        sg::log::info("sg-eval: " + where + " " + metric.task + " " + metric.metric +
                      (metric.bin == "all" ? "" : " (" + metric.bin + ")") + ": " + sg::format_exact(metric.value) +
                      " (n " + std::to_string(metric.n) + ")");
      metrics.insert(metrics.end(), result.metrics.begin(), result.metrics.end());
      if (!options.examples.empty()) {
        sg::append_examples(examples, model, result.examples);
        example_keys.resize(examples.rows(), keys);
        example_sources.resize(examples.rows(), path);
      }
    };
    if (wants("val")) add({{val_metric(options, model, device)}, sg::example_table()});
    // An example this model cannot score is named with the file it comes from.
    auto from = [](const std::string& file, const std::function<void()>& evaluate) {
      try {
        evaluate();
      } catch (const sg::UsageError& error) {
        throw sg::UsageError(file + ": " + error.what(), error.hint());
      }
    };
    if (wants("lambada"))
      from(options.lambada, [&] { add(sg::evaluate_lambada(model, data.passages, scoring(options, where + " lambada"))); });
    if (wants("hellaswag"))
      from(options.hellaswag,
           [&] { add(sg::evaluate_hellaswag(model, data.items, scoring(options, where + " hellaswag"))); });
    if (wants("wikitext")) add(sg::evaluate_wikitext(model, data.pages, scoring(options, where + " wikitext")));
    sg::append_metrics(table, model, metrics);
    run_keys.resize(table.rows(), keys);
    sources.resize(table.rows(), path);
  }
  sg::add_key_columns(table, run_keys, sources);
  if (!options.examples.empty()) {
    sg::add_key_columns(examples, example_keys, example_sources);
    sg::write_table(options.examples, examples, provenance, options.common.force);
  }
  sg::write_table(options.common.output, table, provenance, options.common.force);
}

void run(const Options& options, const std::string& command_line) {
  const auto tasks = parse_tasks(options.tasks);
  const auto wants = [&](const std::string& task) { return std::find(tasks.begin(), tasks.end(), task) != tasks.end(); };
  if (options.batch_size < 1) throw sg::UsageError("--batch-size must be at least 1");
  if (wants("val") && options.tokens.empty())
    throw sg::UsageError("the task val needs --tokens (the token file)", "or leave val out: --task lambada,hellaswag,wikitext");
  // Every input is checked before the first model runs.
  std::vector<std::string> inputs, model_files;
  bool all_runs = true;
  for (const auto& path : options.models) {
    all_runs = all_runs && !sg::is_pretrained_folder(path);
    for (const auto& file : sg::model_input_files(path, options.vocab)) model_files.push_back(file);
  }
  if (!options.tokens.empty() && wants("val")) inputs.push_back(options.tokens);
  TaskData data;
  if (wants("lambada")) {
    data.passages = first(sg::read_lambada(options.lambada), options.limit);
    inputs.push_back(options.lambada);
  }
  if (wants("hellaswag")) {
    data.items = first(sg::read_hellaswag(options.hellaswag), options.limit);
    inputs.push_back(options.hellaswag);
  }
  if (wants("wikitext")) {
    data.pages = first(sg::read_wikitext(options.wikitext), options.limit);
    inputs.push_back(options.wikitext);
  }
  inputs.insert(inputs.end(), model_files.begin(), model_files.end());
  sg::h5::check_writable(options.common.output, options.common.force, inputs);
  if (!options.examples.empty()) {
    if (options.examples == options.common.output)
      throw sg::UsageError("--examples and -o name the same output '" + options.examples + "'",
                           "give the per-example table its own file");
    sg::h5::check_writable(options.examples, options.common.force, inputs);
  }
  if (tasks == std::vector<std::string>{"val"} && all_runs && options.examples.empty())
    return run_wide(options, command_line);
  run_tasks(options, tasks, data, inputs, command_line);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-eval",
                         "Validation loss and zero-shot tasks (LAMBADA, HellaSwag, WikiText-2, as lm-evaluation-harness "
                         "scores them) of run files, their sg-export folders and Hugging Face GPT-2/Pythia folders; "
                         "writes a result table.");
  parser.option("models", options.models, "run files from sg-train and/or Hugging Face checkpoint folders (sg-export's too)", /*required=*/true);
  parser.option("--task", options.tasks, "comma-separated: val, lambada, hellaswag, wikitext");
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
