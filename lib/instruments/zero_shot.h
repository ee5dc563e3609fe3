// zero_shot.h — the paper's downstream check (Section 4.1, Tables 10 and 11): LAMBADA, HellaSwag
// and WikiText-2, scored the way EleutherAI's lm-evaluation-harness v0.4 scores them, so that
// our numbers can stand beside the ones it prints. The conventions, with the lm-eval file each
// comes from (lm_eval/…, read at commit 4e7e0d4):
//
// Requests (api/model.py: loglikelihood, _encode_pair): a (context, continuation) pair; trailing
//   white space of the context moves to the front of the continuation; whole = enc(context +
//   continuation), ctx = enc(context), continuation tokens = whole[len(ctx):]; an empty context
//   is the end-of-text token. Scoring (models/huggingface.py: _loglikelihood_tokens): the input
//   is (ctx + continuation)[-(max_length + 1):][:-1], max_length = the model's context; the
//   log-likelihood is the sum of the log-softmax at the continuation tokens, greedy = the argmax
//   is the continuation token at every one of them.
// LAMBADA (tasks/lambada/lambada_openai.yaml): context = the passage without its last
//   " "-separated word, continuation = " " + that word; acc = mean greedy, perplexity =
//   exp(−mean ll) (lm-eval's names).
// HellaSwag (tasks/hellaswag/utils.py, api/task.py multiple_choice): preprocess = strip, " [title]"
//   → ". ", remove "[…]" (shortest, within a line), "  " → " "; query = preprocess(activity_label
//   + ": " + ctx_a + " " + capitalize(ctx_b)); each choice preprocess(ending), scored as " " +
//   choice; acc: argmax ll is the label, acc_norm: argmax ll / len(choice in characters); ties
//   to the first.
// WikiText-2 (tasks/wikitext/*, utils.py get_rolling_token_windows, make_disjoint_window): the
//   pages of EleutherAI/wikitext_document_level (wikitext_pages), wikitext_detokenizer on each,
//   rolling log-likelihood over disjoint windows of max_length with the end-of-text token before
//   the first; word_perplexity = exp(−Σ ll / Σ words), words = len(re.split(r"\s+", page)) of the
//   original page; byte_perplexity and bits_per_byte over its UTF-8 bytes; token_perplexity
//   over the predicted tokens; ppl = word_perplexity (the paper's Table 10 column, docs/decisions.md).
// Table 11 (this project's definition; docs/decisions.md): the distance in tokens from the first
//   continuation token back to the first token of the target word's most recent earlier
//   occurrence in the context (words = maximal runs of non-white-space, compared exactly,
//   case-sensitive, after stripping leading and trailing non-alphanumeric characters; the token
//   is the one whose bytes hold the word's first character), in the request's tokens before
//   truncation; bins absent, ≤ 32, 33–96, > 96.
//
// Not here: reading models (language_model.h), the command line (cmd/sg-eval.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/hf/language_model.h"
#include "lib/io/results.h"
#include "lib/text/token_file.h"

namespace sg {

// ---- the task files ----

struct HellaSwagItem {
  std::string activity_label, ctx_a, ctx_b;
  std::vector<std::string> endings;
  int64_t label = 0;
};

/// LAMBADA passages: the "text" field of each JSON line (OpenAI's lambada_test.jsonl, or the
/// Parquet converted by pipelines/parquet_to_jsonl.py). InputError naming the file and line for
/// a missing or empty file, bad JSON, a missing field or an empty passage. (A passage without a
/// space is scored as lm-eval scores it: an empty context, the end-of-text token before it.)
std::vector<std::string> read_lambada(const std::string& path);

/// HellaSwag items (hellaswag_val.jsonl; label an integer or a string of one). InputError naming
/// the file and line for a missing field, a label outside the endings, or no endings.
std::vector<HellaSwagItem> read_hellaswag(const std::string& path);

/// WikiText pages: from the raw file (wiki.test.raw; "\r\n" read as "\n", as Python's text mode
/// does) split by wikitext_pages; from JSON Lines (.jsonl or .json) with a "page" field (the document-level dataset, one page a line) as they are; from JSON Lines
/// with a "text" field (the line-level dataset, Salesforce/wikitext) the rows joined as stored, an
/// empty row standing for the blank line " \n" its loader emptied, then split.
std::vector<std::string> read_wikitext(const std::string& path);

/// EleutherAI/wikitext_document_level's split of a raw file into pages (see the file comment).
std::vector<std::string> wikitext_pages(const std::string& raw);
/// lm-eval's wikitext_detokenizer.
std::string wikitext_detokenize(const std::string& page);
/// lm-eval's HellaSwag preprocess.
std::string hellaswag_preprocess(const std::string& text);

// ---- requests and scoring ----

struct Request {
  std::vector<int32_t> context, continuation;  // before truncation
};

/// lm-eval's request tokenisation of (context, continuation) (file comment).
Request encode_pair(const Tokenizer& tokenizer, const std::string& context, const std::string& continuation);

/// lm-eval's rolling windows of a document's tokens, made disjoint: the first predicts tokens
/// 0 .. L-1 from the prefix token, each later one the next L tokens from the L before them.
std::vector<Request> rolling_windows(const std::vector<int32_t>& tokens, int32_t prefix_token, int64_t max_length);

struct Score {
  double loglik = 0;   // nats, summed over the continuation
  bool greedy = false;
};

struct ScoringOptions {
  int64_t batch_size = 16;  // requests per forward pass (right-padded, longest first)
  std::function<void(int64_t done, int64_t total)> progress;
};

/// Scores every request (file comment); results in the order of `requests`. UsageError for an
/// empty continuation or one longer than the model's context (the tasks check that first and
/// name the example).
std::vector<Score> score_requests(const LanguageModel& model, const std::vector<Request>& requests,
                                  const ScoringOptions& options);

// ---- the tasks ----

/// A LAMBADA passage as lm-eval asks it: the request, the context (the passage up to its last
/// space) and the target word.
struct LambadaRequest {
  Request request;
  std::string context, word;
};
LambadaRequest lambada_request(const Tokenizer& tokenizer, const std::string& passage);

/// HellaSwag's query and preprocessed choices for an item; its requests are (query, " " + choice).
std::string hellaswag_query(const HellaSwagItem& item);
std::vector<std::string> hellaswag_choices(const HellaSwagItem& item);

/// Table 11's distance (file comment) for a passage's request; -1 when the word does not recur.
int64_t recurrence_distance(const Tokenizer& tokenizer, const std::string& context, const std::string& word,
                            const Request& request);
/// "absent", "1-32", "33-96" or ">96".
std::string distance_bin(int64_t distance);

struct Metric {
  std::string task, metric, bin;  // bin "all" unless Table 11's
  double value = 0;
  int64_t n = 0;                  // examples (accuracies), words / bytes / tokens (perplexities)
};

/// One task's result: the metrics and one row of `examples` per example (or choice).
struct TaskResult {
  std::vector<Metric> metrics;
  ResultTable examples;  // columns: example_table()
};

/// The per-example table's columns: task, example, choice (-1: none), loglik, greedy, gold,
/// context_tokens, continuation_tokens, characters, words, bytes, distance, bin.
ResultTable example_table();

TaskResult evaluate_lambada(const LanguageModel& model, const std::vector<std::string>& passages,
                            const ScoringOptions& options);
TaskResult evaluate_hellaswag(const LanguageModel& model, const std::vector<HellaSwagItem>& items,
                              const ScoringOptions& options);
TaskResult evaluate_wikitext(const LanguageModel& model, const std::vector<std::string>& pages,
                             const ScoringOptions& options);

/// The long result table of sg-eval (lib/SCHEMA.md, "sg-eval output"): keys tier, arm, seed
/// (a run's; "pretrained", the folder's name and -1 for a checkpoint folder), then the string
/// values model (tier/arm/seed or the folder's name) and family, keys task, metric, bin; values
/// value, n.
ResultTable evaluation_table();
/// Appends one model's metrics to it.
void append_metrics(ResultTable& table, const LanguageModel& model, const std::vector<Metric>& metrics);
/// Prefixes the per-example rows of `result` with the model's identity (the keys of
/// evaluation_table before task) and appends them to `examples` (empty: the columns are made).
void append_examples(ResultTable& examples, const LanguageModel& model, const ResultTable& rows);

/// InputError unless the token file's ids are the tokenizer's (the same vocabulary size and
/// end-of-text id); `vocabulary` names the tokenizer in the message.
void check_token_ids(const TokenFile& tokens, const Tokenizer& tokenizer, const std::string& vocabulary);

/// The validation loss of any language model (nats, mean over every predicted token) on
/// `sequences` windows of `context` tokens of a token file's validation split, drawn by `seed`
/// (sample_batch: with context = a run's block_size and the run's eval_seed, the windows of its
/// final validation loss). InputError when the token file's ids are not the model tokenizer's
/// (another vocabulary size or end-of-text id).
double window_loss(const LanguageModel& model, const TokenFile& tokens, int64_t context, int64_t sequences, int64_t seed,
                   int64_t micro_batch);

/// The standard error lm-eval prints beside a mean: sqrt(sample variance / n) (0 for n < 2).
double mean_stderr(const std::vector<double>& values);

}  // namespace sg
