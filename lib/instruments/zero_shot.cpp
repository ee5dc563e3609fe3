// zero_shot.cpp — see zero_shot.h.
#include "lib/instruments/zero_shot.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/base/json.h"
#include "lib/model/tensors.h"
#include "lib/text/python_string.h"
#include "lib/text/unicode.h"

namespace sg {

namespace {

using json = nlohmann::json;

std::string read_file(const std::string& path, const std::string& what) {
  try {
    auto in = open_input(path);
    return in.read_all(uint64_t{4} << 30, "");
  } catch (const InputError& error) {
    throw InputError(path + ": cannot be read: " + input_reason(error.what(), path),
                     "give the " + what + " file (docs/data.md, \"Zero-shot task data\")");
  }
}

/// The JSON objects of a JSON Lines file (blank lines skipped). InputError naming the file and
/// line for bad JSON or a line that is not an object, and for a file with no records.
std::vector<json> read_json_lines(const std::string& path, const std::string& what) {
  const std::string content = read_file(path, what);
  if (!is_valid_utf8(content)) throw InputError(path + ": is not valid UTF-8");
  std::vector<json> records;
  size_t start = 0;
  int64_t line_number = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos) end = content.size();
    ++line_number;
    const std::string_view line(content.data() + start, end - start);
    start = end + 1;
    if (python_strip(line).empty()) continue;
    json record;
    try {  // nesting limited (lib/base/json.h)
      record = parse_json(line, path + ": line " + std::to_string(line_number));
    } catch (const InputError& error) {
      throw InputError(error.what(), "the " + what + " file must hold one JSON object per line");
    }
    if (!record.is_object())
      throw InputError(path + ": line " + std::to_string(line_number) + " is not a JSON object");
    record["\x01line"] = line_number;
    records.push_back(std::move(record));
  }
  if (records.empty()) throw InputError(path + ": holds no records", "is it the " + what + " file?");
  return records;
}

std::string line_of(const std::string& path, const json& record) {
  return path + ": line " + std::to_string(record["\x01line"].get<int64_t>());
}

std::string string_field(const std::string& path, const json& record, const std::string& field) {
  const auto it = record.find(field);
  if (it == record.end()) throw InputError(line_of(path, record) + " has no \"" + field + "\" field");
  if (!it->is_string()) throw InputError(line_of(path, record) + ": \"" + field + "\" is not a string");
  return it->get<std::string>();
}

/// Replaces the shortest open … close spans whose content `keep` accepts, scanning left to
/// right without overlap, by what `replace` makes of the content (the forms of the regular
/// expressions lm-eval applies: "\[.*?\]", "\(\s*([^\)]*?)\s*\)", …).
template <typename Keep, typename Replace>
std::string replace_spans(const std::string& text, char open, char close, Keep keep, Replace replace) {
  std::string out;
  size_t position = 0;
  while (position < text.size()) {
    if (text[position] == open) {
      const size_t end = text.find(close, position + 1);
      if (end != std::string::npos && keep(std::string_view(text).substr(position + 1, end - position - 1))) {
        out += replace(std::string_view(text).substr(position + 1, end - position - 1));
        position = end + 1;
        continue;
      }
    }
    out += text[position++];
  }
  return out;
}

/// re.sub(r"OPEN\s*([^CLOSE]*?)\s*CLOSE", r"OPEN\1CLOSE", text) — the content between an opening
/// character and the next closing one, stripped of white space.
std::string tighten(const std::string& text, char open, char close) {
  return replace_spans(
      text, open, close, [](std::string_view) { return true; },
      [&](std::string_view inside) { return std::string(1, open) + std::string(python_strip(inside)) + close; });
}

int64_t argmax_first(const std::vector<double>& values) {
  int64_t best = 0;
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i] > values[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
  return best;
}

double mean(const std::vector<double>& values) {
  return values.empty() ? std::nan("") : std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

void append_example(ResultTable& table, const std::string& task, int64_t example, int64_t choice, const Score& score,
                    int64_t gold, int64_t context_tokens, int64_t continuation_tokens, int64_t characters, int64_t words,
                    int64_t bytes, int64_t distance, const std::string& bin) {
  table.append_row({task, example, choice, score.loglik, static_cast<int64_t>(score.greedy ? 1 : 0), gold, context_tokens,
                    continuation_tokens, characters, words, bytes, distance, bin});
}

}  // namespace

// ---- the task files ----

std::vector<std::string> read_lambada(const std::string& path) {
  std::vector<std::string> passages;
  for (const auto& record : read_json_lines(path, "LAMBADA (lambada_test.jsonl)")) {
    auto text = string_field(path, record, "text");
    if (python_strip(text).empty()) throw InputError(line_of(path, record) + ": the passage is empty");
    passages.push_back(std::move(text));
  }
  return passages;
}

std::vector<HellaSwagItem> read_hellaswag(const std::string& path) {
  std::vector<HellaSwagItem> items;
  for (const auto& record : read_json_lines(path, "HellaSwag (hellaswag_val.jsonl)")) {
    HellaSwagItem item;
    item.activity_label = string_field(path, record, "activity_label");
    item.ctx_a = string_field(path, record, "ctx_a");
    item.ctx_b = string_field(path, record, "ctx_b");
    const auto endings = record.find("endings");
    if (endings == record.end() || !endings->is_array() || endings->empty())
      throw InputError(line_of(path, record) + ": \"endings\" is missing or not a non-empty list");
    for (const auto& ending : *endings) {
      if (!ending.is_string()) throw InputError(line_of(path, record) + ": an ending is not a string");
      item.endings.push_back(ending.get<std::string>());
    }
    const auto label = record.find("label");
    if (label == record.end()) throw InputError(line_of(path, record) + " has no \"label\" field");
    try {
      if (label->is_number_integer()) item.label = label->get<int64_t>();
      else if (label->is_string()) {
        const auto text = label->get<std::string>();
        size_t used = 0;
        item.label = std::stoll(text, &used);
        if (used != text.size()) throw std::invalid_argument(text);
      } else
        throw std::invalid_argument("type");
    } catch (const std::exception&) {
      throw InputError(line_of(path, record) + ": \"label\" is not an integer",
                       "HellaSwag's test split has no labels: use the validation split (hellaswag_val.jsonl)");
    }
    if (item.label < 0 || item.label >= static_cast<int64_t>(item.endings.size()))
      throw InputError(line_of(path, record) + ": label " + std::to_string(item.label) + " is not one of the " +
                       std::to_string(item.endings.size()) + " endings");
    items.push_back(std::move(item));
  }
  return items;
}

std::vector<std::string> read_wikitext(const std::string& path) {
  const auto ends_with = [&](const std::string& suffix) {
    if (path.size() < suffix.size()) return false;
    for (size_t i = 0; i < suffix.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(path[path.size() - suffix.size() + i])) != suffix[i]) return false;
    return true;
  };
  const bool jsonl = ends_with(".jsonl") || ends_with(".json");
  if (!jsonl) {
    std::string raw = read_file(path, "WikiText-2 (wiki.test.raw)");
    if (raw.empty()) throw InputError(path + ": is empty", "give WikiText-2's wiki.test.raw");
    if (!is_valid_utf8(raw)) throw InputError(path + ": is not valid UTF-8");
    // The loader reads the file in Python's text mode: "\r\n" and "\r" become "\n".
    if (raw.find('\r') != std::string::npos) raw = python_replace(python_replace(raw, "\r\n", "\n"), "\r", "\n");
    return wikitext_pages(raw);
  }
  const auto records = read_json_lines(path, "WikiText-2");
  if (records.front().contains("page")) {
    std::vector<std::string> pages;
    for (const auto& record : records) pages.push_back(string_field(path, record, "page"));
    return pages;
  }
  // The line-level dataset (Salesforce/wikitext): each row a line of the raw file with its "\n",
  // except the blank lines " \n", which its loader stored as "".
  std::string raw;
  for (const auto& record : records) {
    const auto line = string_field(path, record, "text");
    raw += line.empty() ? " \n" : line;
  }
  return wikitext_pages(raw);
}

std::vector<std::string> wikitext_pages(const std::string& raw) {
  // EleutherAI/wikitext_document_level's loader: a heading line " = Title = " starts a page.
  std::vector<std::string> pages;
  std::string page;
  bool any = false;
  size_t start = 0;
  while (true) {
    size_t end = raw.find('\n', start);
    const std::string line = raw.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string replaced = python_replace(python_replace(line, "= = =", "==="), "= =", "==");
    const auto heading = python_strip(replaced);
    if (heading.size() >= 2 && heading.substr(0, 2) == "= " && heading.substr(heading.size() - 2) == " =") {
      if (!python_strip(page).empty()) pages.push_back(page);
      page.clear();
      any = false;
    }
    if (any) page += '\n';
    page += line;
    any = true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  pages.push_back(page);
  return pages;
}

std::string wikitext_detokenize(const std::string& page) {
  // tasks/wikitext/preprocess_wikitext.py: wikitext_detokenizer, step by step.
  std::string s = python_replace(page, "s '", "s'");
  // re.sub(r"/' [0-9]/", r"/'[0-9]/", s): the replacement is the literal text "/'[0-9]/".
  {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
      if (s.compare(i, 3, "/' ") == 0 && i + 4 < s.size() && s[i + 3] >= '0' && s[i + 3] <= '9' && s[i + 4] == '/') {
        out += "/'[0-9]/";
        i += 5;
      } else {
        out += s[i++];
      }
    }
    s = out;
  }
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {" @-@ ", "-"}, {" @,@ ", ","}, {" @.@ ", "."}, {" : ", ": "}, {" ; ", "; "}, {" . ", ". "},
           {" ! ", "! "}, {" ? ", "? "}, {" , ", ", "}})
    s = python_replace(s, from, to);
  s = tighten(s, '(', ')');
  s = tighten(s, '[', ']');
  s = tighten(s, '{', '}');
  s = tighten(s, '"', '"');
  s = tighten(s, '\'', '\'');
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"= = = =", "===="}, {"= = =", "==="}, {"= =", "=="}, {" \xC2\xB0 ", "\xC2\xB0"}, {" \n", "\n"},
           {"\n ", "\n"}, {" N ", " 1 "}, {" 's", "'s"}})
    s = python_replace(s, from, to);
  return s;
}

std::string hellaswag_preprocess(const std::string& text) {
  // tasks/hellaswag/utils.py: preprocess.
  std::string s(python_strip(text));
  s = python_replace(s, " [title]", ". ");
  s = replace_spans(
      s, '[', ']', [](std::string_view inside) { return inside.find('\n') == std::string_view::npos; },
      [](std::string_view) { return std::string(); });
  return python_replace(s, "  ", " ");
}

// ---- requests and scoring ----

Request encode_pair(const Tokenizer& tokenizer, const std::string& context, const std::string& continuation) {
  Request request;
  if (context.empty()) {
    // api/model.py loglikelihood: the prefix token as the context, unless the continuation
    // already starts with it.
    request.continuation = tokenizer.encode(continuation);
    if (!request.continuation.empty() && request.continuation.front() == tokenizer.eot_id()) {
      request.context = {request.continuation.front()};
      request.continuation.erase(request.continuation.begin());
    } else {
      request.context = {tokenizer.eot_id()};
    }
    return request;
  }
  // api/model.py _encode_pair: trailing white space moves to the continuation.
  const std::string kept(python_rstrip(context));
  const std::string moved = context.substr(kept.size()) + continuation;
  const auto whole = tokenizer.encode(kept + moved);
  request.context = tokenizer.encode(kept);
  const size_t split = std::min(request.context.size(), whole.size());
  request.continuation.assign(whole.begin() + static_cast<std::ptrdiff_t>(split), whole.end());
  if (request.context.empty()) request.context = {tokenizer.eot_id()};  // a context of white space only
  return request;
}

std::vector<Request> rolling_windows(const std::vector<int32_t>& tokens, int32_t prefix_token, int64_t max_length) {
  // utils.py get_rolling_token_windows (context_len = 1), then make_disjoint_window.
  std::vector<Request> windows;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return windows;
  const auto slice = [&](int64_t from, int64_t to) {
    return std::vector<int32_t>(tokens.begin() + from, tokens.begin() + to);
  };
  const int64_t first = std::min(max_length, n);
  windows.push_back({{prefix_token}, slice(0, first)});
  int64_t predicted = first;
  while (predicted < n) {
    const int64_t length = std::min(n - predicted, max_length);
    const int64_t end = predicted + length;
    windows.push_back({slice(end - max_length - 1, end - length), slice(end - length, end)});
    predicted += length;
  }
  return windows;
}

namespace {

/// UsageError naming the example when a continuation is longer than the model's context (lm-eval
/// refuses those too: its scoring asserts len(continuation) <= max_length).
void check_continuations(const std::vector<Request>& requests, int64_t max_length,
                         const std::function<std::string(size_t)>& describe) {
  for (size_t r = 0; r < requests.size(); ++r)
    if (static_cast<int64_t>(requests[r].continuation.size()) > max_length)
      throw UsageError(describe(r) + ": its continuation of " + std::to_string(requests[r].continuation.size()) +
                           " tokens is longer than the model's context of " + std::to_string(max_length),
                       "lm-eval refuses it too; score a model with a longer context, or leave the example out");
}

}  // namespace

std::vector<Score> score_requests(const LanguageModel& model, const std::vector<Request>& requests,
                                  const ScoringOptions& options) {
  const int64_t max_length = model.context_length();
  const int64_t total = static_cast<int64_t>(requests.size());
  std::vector<Score> scores(requests.size());
  // Each request's input, (context + continuation)[-(max_length + 1):][:-1], and its targets.
  std::vector<std::vector<int32_t>> inputs(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    const auto& request = requests[r];
    if (request.continuation.empty()) throw UsageError("a request has an empty continuation");
    if (static_cast<int64_t>(request.continuation.size()) > max_length)
      throw UsageError("a continuation of " + std::to_string(request.continuation.size()) +
                       " tokens is longer than the model's context of " + std::to_string(max_length));
    std::vector<int32_t> all = request.context;
    all.insert(all.end(), request.continuation.begin(), request.continuation.end());
    if (static_cast<int64_t>(all.size()) > max_length + 1)
      all.erase(all.begin(), all.end() - (max_length + 1));
    inputs[r] = std::move(all);  // input = all[:-1], targets = the last len(continuation) of all
  }
  // Longest first, as lm-eval orders them, so that a batch's padding is small.
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return inputs[a].size() > inputs[b].size(); });
  const int64_t batch_size = std::max<int64_t>(1, options.batch_size);
  constexpr int64_t kHeadRows = 2048;  // positions sent through the head at once (bounds the (N, V) logits)
  for (int64_t begin = 0; begin < total; begin += batch_size) {
    const int64_t end = std::min(total, begin + batch_size);
    const int64_t width = static_cast<int64_t>(inputs[order[static_cast<size_t>(begin)]].size()) - 1;
    auto idx = torch::full({end - begin, width}, static_cast<int64_t>(model.tokenizer().eot_id()), torch::kLong);
    auto idx_access = idx.accessor<int64_t, 2>();
    std::vector<int64_t> rows, positions, targets;  // the scored positions of the batch, flattened
    for (int64_t b = begin; b < end; ++b) {
      const auto& all = inputs[order[static_cast<size_t>(b)]];
      const int64_t length = static_cast<int64_t>(all.size()) - 1;
      for (int64_t t = 0; t < length; ++t) idx_access[b - begin][t] = all[static_cast<size_t>(t)];
      const int64_t scored = static_cast<int64_t>(requests[order[static_cast<size_t>(b)]].continuation.size());
      for (int64_t t = length - scored; t < length; ++t) {
        rows.push_back(b - begin);
        positions.push_back(t);
        targets.push_back(all[static_cast<size_t>(t + 1)]);
      }
    }
    const auto hidden = model.hidden(idx.to(model.device()));  // (B, W, C)
    const auto count = static_cast<int64_t>(rows.size());
    const auto row_index = torch::tensor(rows, torch::kLong).to(model.device());
    const auto position_index = torch::tensor(positions, torch::kLong).to(model.device());
    const auto target_index = torch::tensor(targets, torch::kLong).to(model.device());
    const auto picked = hidden.index({row_index, position_index});  // (N, C)
    std::vector<double> logprob(static_cast<size_t>(count));
    std::vector<uint8_t> argmax_hit(static_cast<size_t>(count));
    for (int64_t from = 0; from < count; from += kHeadRows) {
      const int64_t to = std::min(count, from + kHeadRows);
      const auto logits = model.head(picked.narrow(0, from, to - from)).to(torch::kFloat32);  // (n, V)
      const auto log_probs = torch::log_softmax(logits, -1);
      const auto wanted = target_index.narrow(0, from, to - from);
      const auto chosen = log_probs.gather(1, wanted.unsqueeze(1)).squeeze(1).to(torch::kCPU, torch::kFloat64);
      const auto hits = (log_probs.argmax(-1) == wanted).to(torch::kCPU, torch::kUInt8);
      const auto chosen_access = chosen.accessor<double, 1>();
      const auto hit_access = hits.accessor<uint8_t, 1>();
      for (int64_t i = from; i < to; ++i) {
        logprob[static_cast<size_t>(i)] = chosen_access[i - from];
        argmax_hit[static_cast<size_t>(i)] = hit_access[i - from];
      }
    }
    for (int64_t b = begin, i = 0; b < end; ++b) {
      auto& score = scores[order[static_cast<size_t>(b)]];
      score.greedy = true;
      const int64_t scored = static_cast<int64_t>(requests[order[static_cast<size_t>(b)]].continuation.size());
      for (int64_t k = 0; k < scored; ++k, ++i) {
        score.loglik += logprob[static_cast<size_t>(i)];
        score.greedy = score.greedy && argmax_hit[static_cast<size_t>(i)] != 0;
      }
    }
    if (options.progress) options.progress(end, total);
  }
  return scores;
}

// ---- the tasks ----

LambadaRequest lambada_request(const Tokenizer& tokenizer, const std::string& passage) {
  // tasks/lambada/lambada_openai.yaml: the last " "-separated word is the target.
  LambadaRequest out;
  const size_t space = passage.rfind(' ');
  out.context = space == std::string::npos ? std::string() : passage.substr(0, space);
  out.word = space == std::string::npos ? passage : passage.substr(space + 1);
  out.request = encode_pair(tokenizer, out.context, " " + out.word);
  return out;
}

std::string hellaswag_query(const HellaSwagItem& item) {
  return hellaswag_preprocess(item.activity_label + ": " + item.ctx_a + " " + python_capitalize(item.ctx_b));
}

std::vector<std::string> hellaswag_choices(const HellaSwagItem& item) {
  std::vector<std::string> choices;
  for (const auto& ending : item.endings) choices.push_back(hellaswag_preprocess(ending));
  return choices;
}

int64_t recurrence_distance(const Tokenizer& tokenizer, const std::string& context, const std::string& word,
                            const Request& request) {
  // The word stripped of leading and trailing non-alphanumeric characters; `offset` set to
  // where what is left starts in `text` (npos when nothing is left).
  const auto core = [](std::string_view text, size_t& offset) {
    size_t first = std::string_view::npos, last = 0;
    for (size_t position = 0; position < text.size();) {
      const size_t at = position;
      if (python_isalnum(next_code_point(text, position))) {
        if (first == std::string_view::npos) first = at;
        last = position;
      }
    }
    offset = first;
    return first == std::string_view::npos ? std::string_view() : text.substr(first, last - first);
  };
  size_t target_offset = 0;
  const auto target = core(word, target_offset);
  if (target_offset == std::string_view::npos) return -1;
  // The last matching word of the context: its byte offset.
  size_t match = std::string_view::npos;
  const std::string_view text(context);
  for (size_t position = 0; position < text.size();) {
    size_t next = position;
    if (python_isspace(next_code_point(text, next))) {
      position = next;
      continue;
    }
    const size_t begin = position;
    while (position < text.size()) {
      size_t after = position;
      if (python_isspace(next_code_point(text, after))) break;
      position = after;
    }
    size_t inner = 0;
    const auto candidate = core(text.substr(begin, position - begin), inner);
    if (inner != std::string_view::npos && candidate == target) match = begin + inner;
  }
  if (match == std::string_view::npos) return -1;
  // The context token whose bytes hold that offset (the context tokens decode to the context
  // without its trailing white space, which holds every word).
  size_t bytes = 0;
  for (size_t t = 0; t < request.context.size(); ++t) {
    bytes += tokenizer.decode({request.context[t]}).size();
    if (bytes > match) return static_cast<int64_t>(request.context.size() - t);
  }
  return -1;  // the tokens do not decode to the context (a normalising tokenizer): counted as absent
}

std::string distance_bin(int64_t distance) {
  if (distance < 0) return "absent";
  if (distance <= 32) return "1-32";
  if (distance <= 96) return "33-96";
  return ">96";
}

ResultTable example_table() {
  ResultTable table;
  table.add_column("task", Role::key, ColumnType::string);
  table.add_column("example", Role::key, ColumnType::int64);
  table.add_column("choice", Role::key, ColumnType::int64);
  table.add_column("loglik", Role::value, ColumnType::float64).units = "nats";
  table.add_column("greedy", Role::value, ColumnType::int64);
  table.add_column("gold", Role::value, ColumnType::int64);
  table.add_column("context_tokens", Role::value, ColumnType::int64).units = "tokens";
  table.add_column("continuation_tokens", Role::value, ColumnType::int64).units = "tokens";
  table.add_column("characters", Role::value, ColumnType::int64);
  table.add_column("words", Role::value, ColumnType::int64);
  table.add_column("bytes", Role::value, ColumnType::int64);
  table.add_column("distance", Role::value, ColumnType::int64).units = "tokens";
  table.add_column("bin", Role::value, ColumnType::string);
  return table;
}

namespace {

/// The identity cells of a model's rows: tier, arm, seed, model, family (a run's export: the run's).
std::vector<Cell> model_cells(const LanguageModel& model) {
  if (!model.has_run()) return {"pretrained", model.name(), int64_t{-1}, model.name(), model.family()};
  const auto& c = model.run_state().config;
  return {c.tier, c.model.arm.name(), c.seed, model.name(), model.family()};
}

void add_model_columns(ResultTable& table) {
  table.add_column("tier", Role::key, ColumnType::string);
  table.add_column("arm", Role::key, ColumnType::string);
  table.add_column("seed", Role::key, ColumnType::int64);
  table.add_column("model", Role::value, ColumnType::string);
  table.add_column("family", Role::value, ColumnType::string);
}

}  // namespace

ResultTable evaluation_table() {
  ResultTable table;
  add_model_columns(table);
  table.add_column("task", Role::key, ColumnType::string);
  table.add_column("metric", Role::key, ColumnType::string);
  table.add_column("bin", Role::key, ColumnType::string);
  table.add_column("value", Role::value, ColumnType::float64);
  table.add_column("n", Role::value, ColumnType::int64);
  return table;
}

void append_metrics(ResultTable& table, const LanguageModel& model, const std::vector<Metric>& metrics) {
  for (const auto& metric : metrics) {
    auto cells = model_cells(model);
    cells.insert(cells.end(), {metric.task, metric.metric, metric.bin, metric.value, metric.n});
    table.append_row(cells);
  }
}

void append_examples(ResultTable& examples, const LanguageModel& model, const ResultTable& rows) {
  if (examples.columns().empty()) {
    add_model_columns(examples);
    const auto columns = example_table();
    for (const auto& column : columns.columns()) examples.add_column(column);
    if (examples.rows() != 0) throw UsageError("append_examples: the table has rows but no columns");
  }
  const auto identity = model_cells(model);
  for (size_t r = 0; r < rows.rows(); ++r) {
    auto cells = identity;
    for (const auto& column : rows.columns()) {
      if (column.type == ColumnType::string) cells.emplace_back(column.strings[r]);
      else if (column.type == ColumnType::int64) cells.emplace_back(column.integers[r]);
      else cells.emplace_back(column.reals[r]);
    }
    examples.append_row(cells);
  }
}

void check_token_ids(const TokenFile& tokens, const Tokenizer& tokenizer, const std::string& vocabulary) {
  const auto& info = tokens.info();
  if (info.vocab_size != tokenizer.vocab_size() || info.eot_id != tokenizer.eot_id())
    throw InputError(tokens.path() + ": its ids are not those of " + vocabulary + " (vocabulary " +
                         std::to_string(info.vocab_size) + " ids, end-of-text " + std::to_string(info.eot_id) +
                         "; the tokenizer's " + std::to_string(tokenizer.vocab_size()) + ", " +
                         std::to_string(tokenizer.eot_id()) + ")",
                     "tokenise the corpus with the model's tokenizer: sg-tokenize --vocab " + vocabulary);
}

double window_loss(const LanguageModel& model, const TokenFile& tokens, int64_t context, int64_t sequences, int64_t seed,
                   int64_t micro_batch) {
  check_token_ids(tokens, model.tokenizer(), model.vocabulary());
  if (context > model.context_length())
    throw UsageError("--context " + std::to_string(context) + " exceeds the context length " +
                     std::to_string(model.context_length()) + " of " + model.path());
  torch::NoGradGuard no_grad;
  double total = 0;
  for (int64_t first = 0; first < sequences; first += micro_batch) {
    const int64_t count = std::min(micro_batch, sequences - first);
    const auto batch = sample_batch(tokens, Split::val, seed, first, count, context);
    const auto hidden = model.hidden(batch.inputs.to(model.device()));  // (n, T, C)
    const auto targets = batch.targets.to(model.device()).reshape({-1});
    const auto flat = hidden.reshape({-1, hidden.size(-1)});
    for (int64_t from = 0; from < flat.size(0); from += 2048) {
      const int64_t rows = std::min<int64_t>(2048, flat.size(0) - from);
      const auto logits = model.head(flat.narrow(0, from, rows));
      total += torch::nn::functional::cross_entropy(logits, targets.narrow(0, from, rows),
                                                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                   .item<double>();
    }
  }
  return total / static_cast<double>(sequences * context);
}

double mean_stderr(const std::vector<double>& values) {
  const size_t n = values.size();
  if (n < 2) return 0.0;
  const double mu = mean(values);
  double sum = 0;
  for (const double v : values) sum += (v - mu) * (v - mu);
  return std::sqrt(sum / static_cast<double>(n - 1) / static_cast<double>(n));
}

TaskResult evaluate_lambada(const LanguageModel& model, const std::vector<std::string>& passages,
                            const ScoringOptions& options) {
  std::vector<Request> requests;
  std::vector<int64_t> distances;
  for (const auto& text : passages) {
    const auto asked = lambada_request(model.tokenizer(), text);
    requests.push_back(asked.request);
    distances.push_back(asked.context.empty() ? -1
                                              : recurrence_distance(model.tokenizer(), asked.context, asked.word, asked.request));
  }
  check_continuations(requests, model.context_length(), [](size_t i) { return "LAMBADA passage " + std::to_string(i + 1); });
  const auto scores = score_requests(model, requests, options);
  TaskResult result;
  result.examples = example_table();
  std::vector<double> greedy, loglik;
  const std::vector<std::string> bins = {"absent", "1-32", "33-96", ">96"};
  std::vector<std::vector<double>> greedy_by_bin(bins.size());
  for (size_t i = 0; i < scores.size(); ++i) {
    const std::string bin = distance_bin(distances[i]);
    greedy.push_back(scores[i].greedy ? 1.0 : 0.0);
    loglik.push_back(scores[i].loglik);
    greedy_by_bin[static_cast<size_t>(std::find(bins.begin(), bins.end(), bin) - bins.begin())].push_back(greedy.back());
    append_example(result.examples, "lambada", static_cast<int64_t>(i), -1, scores[i], -1,
                   static_cast<int64_t>(requests[i].context.size()), static_cast<int64_t>(requests[i].continuation.size()),
                   -1, -1, -1, distances[i], bin);
  }
  const auto n = static_cast<int64_t>(scores.size());
  result.metrics.push_back({"lambada", "acc", "all", mean(greedy), n});
  result.metrics.push_back({"lambada", "acc_stderr", "all", mean_stderr(greedy), n});
  result.metrics.push_back({"lambada", "perplexity", "all", std::exp(-mean(loglik)), n});  // lm-eval's name
  for (size_t b = 0; b < bins.size(); ++b)
    result.metrics.push_back({"lambada", "acc", bins[b], mean(greedy_by_bin[b]), static_cast<int64_t>(greedy_by_bin[b].size())});
  return result;
}

TaskResult evaluate_hellaswag(const LanguageModel& model, const std::vector<HellaSwagItem>& items,
                              const ScoringOptions& options) {
  std::vector<Request> requests;
  std::vector<std::vector<std::string>> choices;
  for (const auto& item : items) {
    const std::string query = hellaswag_query(item);
    choices.push_back(hellaswag_choices(item));
    for (const auto& choice : choices.back()) requests.push_back(encode_pair(model.tokenizer(), query, " " + choice));
  }
  std::vector<std::pair<size_t, size_t>> owner;  // (item, choice) of each request
  for (size_t i = 0; i < choices.size(); ++i)
    for (size_t c = 0; c < choices[i].size(); ++c) owner.emplace_back(i, c);
  check_continuations(requests, model.context_length(), [&](size_t r) {
    return "HellaSwag item " + std::to_string(owner[r].first + 1) + ", ending " + std::to_string(owner[r].second);
  });
  const auto scores = score_requests(model, requests, options);
  TaskResult result;
  result.examples = example_table();
  std::vector<double> acc, acc_norm;
  size_t r = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<double> lls, normalised;
    for (size_t c = 0; c < choices[i].size(); ++c, ++r) {
      const int64_t characters = python_length(choices[i][c]);
      lls.push_back(scores[r].loglik);
      normalised.push_back(scores[r].loglik / static_cast<double>(characters));  // api/task.py: completion_len
      append_example(result.examples, "hellaswag", static_cast<int64_t>(i), static_cast<int64_t>(c), scores[r], items[i].label,
                     static_cast<int64_t>(requests[r].context.size()), static_cast<int64_t>(requests[r].continuation.size()),
                     characters, -1, -1, -1, "");
    }
    acc.push_back(argmax_first(lls) == items[i].label ? 1.0 : 0.0);
    acc_norm.push_back(argmax_first(normalised) == items[i].label ? 1.0 : 0.0);
  }
  const auto n = static_cast<int64_t>(items.size());
  result.metrics.push_back({"hellaswag", "acc", "all", mean(acc), n});
  result.metrics.push_back({"hellaswag", "acc_stderr", "all", mean_stderr(acc), n});
  result.metrics.push_back({"hellaswag", "acc_norm", "all", mean(acc_norm), n});
  result.metrics.push_back({"hellaswag", "acc_norm_stderr", "all", mean_stderr(acc_norm), n});
  return result;
}

TaskResult evaluate_wikitext(const LanguageModel& model, const std::vector<std::string>& pages,
                             const ScoringOptions& options) {
  std::vector<Request> requests;
  std::vector<size_t> page_of;
  std::vector<int64_t> tokens(pages.size());
  for (size_t p = 0; p < pages.size(); ++p) {
    const auto ids = model.tokenizer().encode(wikitext_detokenize(pages[p]));
    tokens[p] = static_cast<int64_t>(ids.size());
    for (auto& window : rolling_windows(ids, model.tokenizer().eot_id(), model.context_length())) {
      requests.push_back(std::move(window));
      page_of.push_back(p);
    }
  }
  const auto scores = score_requests(model, requests, options);
  std::vector<double> loglik(pages.size(), 0.0);
  for (size_t r = 0; r < scores.size(); ++r) loglik[page_of[r]] += scores[r].loglik;
  TaskResult result;
  result.examples = example_table();
  double total = 0;
  int64_t words = 0, bytes = 0, predicted = 0;
  for (size_t p = 0; p < pages.size(); ++p) {
    const int64_t page_words = whitespace_split_count(pages[p]);  // of the page before detokenising
    const auto page_bytes = static_cast<int64_t>(pages[p].size());
    total += loglik[p];
    words += page_words;
    bytes += page_bytes;
    predicted += tokens[p];
    Score score;
    score.loglik = loglik[p];
    append_example(result.examples, "wikitext", static_cast<int64_t>(p), -1, score, -1, -1, tokens[p], -1, page_words,
                   page_bytes, -1, "");
  }
  const double word_perplexity = std::exp(-total / static_cast<double>(words));
  result.metrics.push_back({"wikitext", "ppl", "all", word_perplexity, words});
  result.metrics.push_back({"wikitext", "word_perplexity", "all", word_perplexity, words});
  result.metrics.push_back({"wikitext", "byte_perplexity", "all", std::exp(-total / static_cast<double>(bytes)), bytes});
  result.metrics.push_back({"wikitext", "bits_per_byte", "all", -total / static_cast<double>(bytes) / std::log(2.0), bytes});
  result.metrics.push_back({"wikitext", "token_perplexity", "all",
                            predicted > 0 ? std::exp(-total / static_cast<double>(predicted)) : std::nan(""), predicted});
  return result;
}

}  // namespace sg
