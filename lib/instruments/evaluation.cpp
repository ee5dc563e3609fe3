// evaluation.cpp — sg-eval's measurement (see evaluation.h).
#include "lib/instruments/evaluation.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/text.h"
#include "lib/hf/language_model.h"
#include "lib/instruments/runs.h"
#include "lib/run/run_file.h"
#include "lib/text/token_file.h"
#include "lib/text/tokenizer.h"
#include "lib/train/train.h"

namespace sg {
namespace {

template <typename T>
std::vector<T> first(std::vector<T> items, int64_t limit) {
  if (limit > 0 && static_cast<int64_t>(items.size()) > limit) items.resize(static_cast<size_t>(limit));
  return items;
}

/// Progress of one task's scoring on stderr, at most every 10 s, with the time left.
ScoringOptions scoring(const EvaluationSettings& settings, const std::string& what) {
  ScoringOptions scoring;
  scoring.batch_size = settings.batch_size;
  const auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  const auto last = std::make_shared<double>(0.0);
  scoring.progress = [start, last, what](int64_t done, int64_t total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    if (done < total && elapsed - *last < 10.0) return;
    *last = elapsed;
    const double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
    log::info("sg-eval: " + what + ": " + std::to_string(done) + "/" + std::to_string(total) + " requests, " +
              format_duration(elapsed) + (done < total ? " (eta " + format_duration(left) + ")" : ""));
  };
  return scoring;
}

/// The val task of one model: a run's own final validation batches (what the wide table gives),
/// also for its export (a baseline's, read as GPT-2, on the same windows), or for another
/// checkpoint folder windows of its context.
Metric val_metric(const EvaluationSettings& settings, const LanguageModel& model, const torch::Device& device) {
  const auto tokens = TokenFile::open(settings.tokens);
  Metric metric{"val", "loss", "all", 0.0, 0};
  if (model.has_run()) {
    const auto& config = model.run_state().config;
    const int64_t batches = settings.batches > 0 ? settings.batches : config.train.final_eval_batches;
    metric.value = model.pretrained() ? window_loss(model, tokens, config.model.block_size, batches * config.train.batch(),
                                                    config.train.eval_seed, config.train.micro_batch)
                                      : validation_loss(model.run_model(), tokens, config, batches, device);
    metric.n = batches * config.train.batch() * config.model.block_size;
  } else {
    const int64_t context = settings.context > 0 ? settings.context : std::min<int64_t>(model.context_length(), 1024);
    const int64_t sequences = (settings.batches > 0 ? settings.batches : 64) * 8;
    metric.value = window_loss(model, tokens, context, sequences, TrainConfig{}.eval_seed, 8);
    metric.n = sequences * context;
  }
  return metric;
}

/// Every model checked before the first one runs: the run files read (a warning for each
/// unfinished one), and for val every model against the token file (a run file: the token file it
/// was trained on; a folder: a token file of its tokenizer's ids).
void check_models(const EvaluationSettings& settings, const std::string& token_sha256) {
  const bool val = settings.wants("val");
  std::unique_ptr<TokenFile> tokens;
  if (val) tokens = std::make_unique<TokenFile>(TokenFile::open(settings.tokens));
  std::vector<std::string> runs;
  for (const auto& path : settings.models) {
    if (!is_pretrained_folder(path)) {
      runs.push_back(path);
    } else if (val) {
      const std::string vocabulary = settings.vocab.empty() ? path : settings.vocab;
      check_token_ids(*tokens, Tokenizer::load(vocabulary), vocabulary);
    }
  }
  RunChecks checks;
  checks.tokens = tokens.get();
  checks.token_sha256 = token_sha256;
  checks.allow_other_tokens = settings.allow_other_tokens;
  open_runs(runs, checks);
}

/// Runs evaluate(), naming `file` in a UsageError it throws (an example this model cannot score).
void from(const std::string& file, const std::function<void()>& evaluate) {
  try {
    evaluate();
  } catch (const UsageError& error) {
    throw UsageError(file + ": " + error.what(), error.hint());
  }
}

using Keys = std::vector<std::pair<std::string, std::string>>;

/// The tables being filled, with each row's run keys and source.
struct LongTables {
  EvaluationTables tables;
  std::vector<Keys> run_keys, example_keys;
  std::vector<std::string> sources, example_sources;
};

/// Every task of the model at `path` (the m-th of the settings' models), appended to `out`.
void evaluate_model(const EvaluationSettings& settings, const TaskData& data, size_t m, const torch::Device& device,
                    LongTables& out) {
  const auto& path = settings.models[m];
  const auto model = LanguageModel::load(path, device, settings.vocab);
  const Keys keys = model.has_run() ? run_keys(path, model.run_state()) : Keys{{"run", path}};
  const std::string where = "[" + std::to_string(m + 1) + "/" + std::to_string(settings.models.size()) + " " + model.name() + "]";
  std::vector<Metric> metrics;
  const auto add = [&](TaskResult result) {
    for (const auto& metric : result.metrics)
      log::info("sg-eval: " + where + " " + metric.task + " " + metric.metric +
                (metric.bin == "all" ? "" : " (" + metric.bin + ")") + ": " + format_exact(metric.value) + " (n " +
                std::to_string(metric.n) + ")");
    metrics.insert(metrics.end(), result.metrics.begin(), result.metrics.end());
    if (settings.examples) {
      append_examples(out.tables.examples, model, result.examples);
      out.example_keys.resize(out.tables.examples.rows(), keys);
      out.example_sources.resize(out.tables.examples.rows(), path);
    }
  };
  if (settings.wants("val")) add({{val_metric(settings, model, device)}, example_table()});
  if (settings.wants("lambada"))
    from(settings.lambada, [&] { add(evaluate_lambada(model, data.passages, scoring(settings, where + " lambada"))); });
  if (settings.wants("hellaswag"))
    from(settings.hellaswag, [&] { add(evaluate_hellaswag(model, data.items, scoring(settings, where + " hellaswag"))); });
  if (settings.wants("wikitext")) add(evaluate_wikitext(model, data.pages, scoring(settings, where + " wikitext")));
  append_metrics(out.tables.metrics, model, metrics);
  out.run_keys.resize(out.tables.metrics.rows(), keys);
  out.sources.resize(out.tables.metrics.rows(), path);
}

}  // namespace

const std::vector<std::string>& evaluation_task_names() {
  static const std::vector<std::string> names = {"val", "lambada", "hellaswag", "wikitext"};
  return names;
}

std::vector<std::string> parse_evaluation_tasks(const std::string& list) {
  const auto& known = evaluation_task_names();
  std::vector<std::string> tasks;
  for (const auto& task : split_list(list)) {
    if (std::find(known.begin(), known.end(), task) == known.end())
      throw UsageError("--task: unknown task '" + task + "'", "tasks: " + join(known, ", "));
    if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) tasks.push_back(task);
  }
  if (tasks.empty()) throw UsageError("--task names no task");
  return tasks;
}

bool EvaluationSettings::wants(const std::string& task) const {
  return std::find(tasks.begin(), tasks.end(), task) != tasks.end();
}

TaskData read_task_data(const EvaluationSettings& settings) {
  TaskData data;
  if (settings.wants("lambada")) {
    data.passages = first(read_lambada(settings.lambada), settings.limit);
    data.files.push_back(settings.lambada);
  }
  if (settings.wants("hellaswag")) {
    data.items = first(read_hellaswag(settings.hellaswag), settings.limit);
    data.files.push_back(settings.hellaswag);
  }
  if (settings.wants("wikitext")) {
    data.pages = first(read_wikitext(settings.wikitext), settings.limit);
    data.files.push_back(settings.wikitext);
  }
  return data;
}

ResultTable validation_table(const EvaluationSettings& settings, const TokenFile& tokens, const std::string& token_sha256,
                             const torch::Device& device, std::string* arithmetic) {
  RunChecks checks;
  checks.tokens = &tokens;
  checks.token_sha256 = token_sha256;
  checks.allow_other_tokens = settings.allow_other_tokens;
  const auto runs = open_runs(settings.models, checks);
  if (arithmetic) *arithmetic = runs_arithmetic(runs, device);
  ResultTable table;
  table.add_column("tier", Role::key, ColumnType::string);
  table.add_column("arm", Role::key, ColumnType::string);
  table.add_column("seed", Role::key, ColumnType::int64);
  table.add_column("val_loss", Role::value, ColumnType::float64).units = "nats";
  table.add_column("val_batches", Role::value, ColumnType::int64).units = "batches";
  table.add_column("eval_seed", Role::value, ColumnType::int64);
  table.add_column("scored_tokens", Role::value, ColumnType::int64).units = "tokens";
  table.add_column("steps", Role::value, ColumnType::int64).units = "optimizer steps";
  const auto start = std::chrono::steady_clock::now();
  measure_runs(runs, device, table, [&](const MeasuredRun& run, GPTImpl& model) {
    const auto& config = run.state.config;
    const int64_t batches = settings.batches > 0 ? settings.batches : config.train.final_eval_batches;
    const double loss = validation_loss(model, tokens, config, batches, device);
    const int64_t scored = batches * config.train.batch() * config.model.block_size;
    table.append_row({config.tier, config.model.arm.name(), config.seed, loss, batches, config.train.eval_seed, scored,
                      run.state.step});
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = elapsed / static_cast<double>(run.index + 1) * static_cast<double>(run.count - run.index - 1);
    log::info(run.progress + run.path + ": val_loss " + format_exact(loss) + " on " + std::to_string(batches) +
              " validation batches (eval_seed " + std::to_string(config.train.eval_seed) + ") (eta " +
              format_duration(left) + ")");
  });
  return table;
}

EvaluationTables evaluate_models(const EvaluationSettings& settings, const TaskData& data,
                                 const std::string& token_sha256, const torch::Device& device) {
  check_models(settings, token_sha256);
  LongTables out;
  out.tables.metrics = evaluation_table();
  for (size_t m = 0; m < settings.models.size(); ++m) evaluate_model(settings, data, m, device, out);
  add_key_columns(out.tables.metrics, out.run_keys, out.sources);
  if (settings.examples) add_key_columns(out.tables.examples, out.example_keys, out.example_sources);
  return std::move(out.tables);
}

}  // namespace sg
