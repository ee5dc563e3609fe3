// vocabulary.cpp — reading vocabulary files (see vocabulary.h).
#include "lib/text/vocabulary.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <sys/stat.h>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/base/json.h"
#include "lib/base/paths.h"
#include "lib/io/provenance.h"

namespace sg {
namespace {

constexpr const char* kEndOfText = "<|endoftext|>";
constexpr const char* kVocabularyHint =
    "give a tiktoken rank file (gpt2.tiktoken, which setup.sh fetches into ~/.cache/sinkgate), a "
    "tokenizer.json, or a vocab.json with merges.txt beside it";

std::string read_file(const std::string& path, const char* what) {
  // Only a regular file of bounded size (input_file.h): /dev/zero, /dev/urandom or a FIFO would
  // otherwise be read without end (or block for ever on open).
  try {
    auto file = open_input(path);
    return file.read_all(kMaxVocabularyFileBytes, "");
  } catch (const InputError& error) {
    throw InputError("cannot open " + std::string(what) + " '" + path + "': " + input_reason(error.what(), path),
                     kVocabularyHint);
  }
}

}  // namespace

[[noreturn]] void vocabulary_malformed(const std::string& path, size_t line, const std::string& problem) {
  throw InputError(path + (line ? ":" + std::to_string(line) : std::string()) + ": " + problem, kVocabularyHint);
}

std::string vocabulary_excerpt(std::string_view text) {
  std::string out(text.substr(0, 60));
  return text.size() > 60 ? out + "…" : out;
}

namespace {

[[noreturn]] void malformed(const std::string& path, size_t line, const std::string& problem) {
  vocabulary_malformed(path, line, problem);
}
std::string excerpt(std::string_view text) { return vocabulary_excerpt(text); }

// Calls each(line, number) for every line of text (numbered from 1), without its "\r\n" or "\n".
template <typename Each>
void for_each_line(std::string_view text, Each each) {
  size_t number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    each(line, number);
  }
}

bool decode_base64(std::string_view text, std::string* out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.empty() || text.size() % 4 != 0) return false;
  out->clear();
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    int v[4];
    for (int k = 0; k < 4 - pad; ++k)
      if ((v[k] = value(text[i + k])) < 0) return false;
    for (int k = 4 - pad; k < 4; ++k) v[k] = 0;
    const uint32_t bits = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | uint32_t(v[3]);
    out->push_back(static_cast<char>(bits >> 16));
    if (pad < 2) out->push_back(static_cast<char>(bits >> 8 & 0xFF));
    if (pad < 1) out->push_back(static_cast<char>(bits & 0xFF));
  }
  return true;
}

// tiktoken rank file: "base64token rank" lines; the ranks are the ids; <|endoftext|> follows them.
Vocabulary read_rank_file(const std::string& path, const std::string& content) {
  Vocabulary vocabulary;
  vocabulary.path = path;
  vocabulary.rank_merges = true;
  auto& tokens = vocabulary.token_bytes;
  int64_t max_rank = -1;
  std::string token;
  for_each_line(content, [&](std::string_view line, size_t line_number) {
    if (line.empty()) return;
    const size_t space = line.find(' ');
    const std::string_view rank_text = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    int64_t rank = 0;
    bool number = !rank_text.empty() && rank_text.size() <= 9;
    for (const char c : rank_text) {
      number = number && c >= '0' && c <= '9';
      rank = rank * 10 + (c - '0');
    }
    if (!number || !decode_base64(line.substr(0, space), &token))
      malformed(path, line_number, "expected 'base64token rank', got '" + excerpt(line) + "'");
    if (rank >= static_cast<int64_t>(tokens.size())) {
      tokens.resize(rank + 1);
      vocabulary.lines.resize(rank + 1);
    }
    if (!tokens[rank].empty()) malformed(path, line_number, "rank " + std::to_string(rank) + " given twice");
    tokens[rank] = token;
    vocabulary.lines[rank] = line_number;
    max_rank = std::max(max_rank, rank);
  });
  if (max_rank < 0) malformed(path, 0, "no ranks (empty vocabulary file)");
  vocabulary.eot = static_cast<int32_t>(max_rank + 1);
  tokens.push_back(kEndOfText);
  vocabulary.lines.push_back(0);
  return vocabulary;
}

// GPT-2's byte-to-character map: the code point of each byte, and the byte of each code point
// below 512 (-1 for none).
struct ByteCharacters {
  char32_t code_point[256];
  int byte[512];
};

const ByteCharacters& byte_characters() {
  static const ByteCharacters table = [] {
    ByteCharacters map{};
    std::fill(std::begin(map.byte), std::end(map.byte), -1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      map.code_point[b] = static_cast<char32_t>(printable ? b : 256 + extra++);
      map.byte[map.code_point[b]] = b;
    }
    return map;
  }();
  return table;
}

using MergeList = std::vector<std::pair<std::string, std::string>>;

// Appends the merge in "left right" (one space, both sides non-empty); false if it is not one.
bool add_merge(std::string_view text, MergeList& merges) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == text.size() ||
      text.find(' ', space + 1) != std::string_view::npos)
    return false;
  merges.emplace_back(std::string(text.substr(0, space)), std::string(text.substr(space + 1)));
  return true;
}

// A Hugging Face byte-level BPE from its vocabulary (token string → id), ordered merges and added
// tokens (content → id); a merge's line (0: none) and merges_path name it in messages.
Vocabulary read_hugging_face(const std::string& path, const std::string& merges_path,
                             const std::map<std::string, int32_t>& vocab, const MergeList& merges,
                             const std::vector<size_t>& merge_lines, const std::map<std::string, int32_t>& added) {
  Vocabulary vocabulary;
  vocabulary.path = path;
  if (auto it = added.find(kEndOfText); it != added.end()) vocabulary.eot = it->second;
  else if (auto it = vocab.find(kEndOfText); it != vocab.end()) vocabulary.eot = it->second;
  int32_t max_id = -1;
  std::string max_token;
  std::set<int32_t> distinct;
  for (const auto* tokens : {&vocab, &added})
    for (const auto& [token, id] : *tokens) {
      distinct.insert(id);
      if (id > max_id) max_id = id, max_token = token;
    }
  // Ids run 0..N-1 in every real vocabulary; a few gaps are tolerated, an id far beyond is damage
  // (and would size the id table by it).
  if (static_cast<size_t>(max_id) >= 2 * distinct.size() + 256)
    malformed(path, 0, "the id " + std::to_string(max_id) + " of token '" + excerpt(max_token) + "' lies far beyond the " +
                           std::to_string(distinct.size()) + " ids the vocabulary holds (ids run 0..N-1)");
  auto& token_bytes = vocabulary.token_bytes;
  token_bytes.resize(static_cast<size_t>(max_id) + 1);
  for (const auto& [token, id] : vocab) {
    if (!token_bytes[id].empty()) malformed(path, 0, "id " + std::to_string(id) + " given to two tokens");
    if (auto bytes = byte_level_bytes(token)) {
      token_bytes[id] = *bytes;
      vocabulary.byte_level.push_back(id);
    } else {
      token_bytes[id] = token;
    }
  }
  for (const auto& [content, id] : added) token_bytes[id] = content;
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto left = vocab.find(merges[i].first), right = vocab.find(merges[i].second);
    const auto merged = vocab.find(merges[i].first + merges[i].second);
    if (left == vocab.end() || right == vocab.end() || merged == vocab.end())
      malformed(merges_path, merge_lines[i],
                "merge '" + merges[i].first + " " + merges[i].second + "' names a token that is not in the vocabulary " +
                    path);
    vocabulary.merges.push_back({left->second, right->second, merged->second});
  }
  return vocabulary;
}

std::map<std::string, int32_t> read_vocab_object(const nlohmann::json& object, const std::string& path) {
  if (!object.is_object()) malformed(path, 0, "the vocabulary is not a JSON object of token → id");
  std::map<std::string, int32_t> vocab;
  for (const auto& [token, id] : object.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t{1} << 30))
      malformed(path, 0, "the id of token '" + excerpt(token) + "' is not an integer in 0..2^30");
    vocab.emplace(token, id.get<int32_t>());
  }
  return vocab;
}

nlohmann::json parse_json(const std::string& path, const std::string& content) {
  try {
    return sg::parse_json(content, path);  // nesting limited (lib/base/json.h)
  } catch (const InputError& error) {
    malformed(path, 0, std::string(error.what()).substr(path.size() + 2));
  }
}

// vocab.json + merges.txt ("#version" line, then one "left right" merge a line).
Vocabulary read_vocab_json(const std::string& path, const nlohmann::json& object, const std::string& merges_path,
                           const std::string& text) {
  const auto vocab = read_vocab_object(object, path);
  MergeList merges;
  std::vector<size_t> lines;
  for_each_line(text, [&](std::string_view line, size_t line_number) {
    if (line.empty() || line.substr(0, 8) == "#version") return;
    if (!add_merge(line, merges))
      malformed(merges_path, line_number, "expected 'left right', got '" + excerpt(line) + "'");
    lines.push_back(line_number);
  });
  return read_hugging_face(path, merges_path, vocab, merges, lines, /*added=*/{});
}

// Whether tokenizer.json's normalizer is NFC (true) or nothing (false); InputError for any other.
bool read_normalizer(const std::string& path, const nlohmann::json& normalizer) {
  if (normalizer.is_null()) return false;
  const bool typed = normalizer.is_object() && normalizer.contains("type") && normalizer["type"].is_string();
  const std::string type = typed ? normalizer["type"].get<std::string>() : "";
  if (type == "NFC") return true;
  if (type == "Sequence" && normalizer.contains("normalizers") && normalizer["normalizers"].is_array()) {
    bool nfc = false;
    for (const auto& part : normalizer["normalizers"]) nfc = read_normalizer(path, part) || nfc;
    return nfc;
  }
  malformed(path, 0,
            "normalizer " + (typed ? "type \"" + type + "\"" : json_excerpt(normalizer)) +
                " is not supported (only NFC, alone or in a Sequence)");
}

// tokenizer.json's added_tokens, in file order, without empty ones (which `tokenizers` ignores).
// Each id is checked against the one `tokenizers` gives when it adds the tokens one by one: the
// model's id when model.vocab has the content, else the vocabulary's size for the first new one and
// the largest added id + 1 after it.
std::vector<AddedTokenEntry> read_added_tokens(const std::string& path, const nlohmann::json& config,
                                               const std::map<std::string, int32_t>& vocab) {
  std::vector<AddedTokenEntry> tokens;
  if (!config.contains("added_tokens") || config["added_tokens"].is_null()) return tokens;
  if (!config["added_tokens"].is_array()) malformed(path, 0, "added_tokens is not a list");
  const auto vocab_size = static_cast<int64_t>(vocab.size());
  int64_t largest = -1;
  std::set<std::string> seen;
  for (const auto& token : config["added_tokens"]) {
    const bool valid = token.is_object() && token.contains("id") && token.contains("content") &&
                       token["id"].is_number_integer() && token["id"].get<int64_t>() >= 0 &&
                       token["id"].get<int64_t>() < (int64_t{1} << 30) && token["content"].is_string();
    if (!valid)
      malformed(path, 0, "added_tokens entry " + json_excerpt(token) + " lacks an integer id or a content string");
    AddedTokenEntry entry;
    entry.content = token["content"].get<std::string>();
    entry.id = token["id"].get<int32_t>();
    for (auto [name, flag] : {std::pair<const char*, bool*>{"single_word", &entry.single_word},
                              {"lstrip", &entry.lstrip}, {"rstrip", &entry.rstrip}, {"normalized", &entry.normalized}}) {
      if (!token.contains(name)) continue;
      if (!token[name].is_boolean())
        malformed(path, 0, "added token '" + excerpt(entry.content) + "': " + name + " is not true or false");
      *flag = token[name].get<bool>();
    }
    if (entry.content.empty()) continue;
    if (seen.count(entry.content)) malformed(path, 0, "added token '" + excerpt(entry.content) + "' is given twice");
    int64_t expected = largest >= vocab_size ? largest + 1 : vocab_size;
    if (const auto it = vocab.find(entry.content); it != vocab.end()) expected = it->second;
    if (entry.id != expected)
      malformed(path, 0, "added token '" + excerpt(entry.content) + "' has id " + std::to_string(entry.id) +
                             ", but Hugging Face tokenizers would give it id " + std::to_string(expected));
    largest = std::max<int64_t>(largest, entry.id);
    seen.insert(entry.content);
    tokens.push_back(entry);
  }
  return tokens;
}

// tokenizer.json: model.vocab, model.merges ("a b" or ["a", "b"]), the normalizer and added_tokens.
Vocabulary read_tokenizer_json(const std::string& path, const nlohmann::json& config) {
  const auto& model = config["model"];
  if (!model.is_object()) malformed(path, 0, "\"model\" is not an object");
  if (model.contains("type") && model["type"] != "BPE")
    malformed(path, 0, "model type " + json_excerpt(model["type"]) + " is not supported (only byte-level BPE)");
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(field) && !model[field].is_null() && model[field] != "")
      malformed(path, 0, std::string("model.") + field + " is not supported (GPT-2 style byte-level BPE only)");
  if (model.contains("byte_fallback") && model["byte_fallback"] == true)
    malformed(path, 0, "model.byte_fallback is not supported (GPT-2 style byte-level BPE only)");
  if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"] != 0)
    malformed(path, 0, "model.dropout is not supported");
  if (config.contains("pre_tokenizer")) {
    const auto& pre = config["pre_tokenizer"];
    const bool byte_level = pre.is_object() && pre.value("type", "") == "ByteLevel" &&
                            !pre.value("add_prefix_space", false) && pre.value("use_regex", true);
    if (!byte_level)
      malformed(path, 0,
                "pre_tokenizer " + json_excerpt(pre) + " is not supported (only GPT-2's ByteLevel, without add_prefix_space)");
  }
  if (!model.contains("vocab")) malformed(path, 0, "no model.vocab");
  const auto vocab = read_vocab_object(model["vocab"], path);
  const auto& list = model.contains("merges") ? model["merges"] : nlohmann::json::array();
  if (!list.is_array()) malformed(path, 0, "model.merges is not a list");
  MergeList merges;
  std::vector<size_t> lines;
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& merge = list[i];
    if (merge.is_string()) {
      add_merge(merge.get<std::string>(), merges);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    }
    if (merges.size() != i + 1)
      malformed(path, 0, "model.merges[" + std::to_string(i) + "] is not \"left right\" or [\"left\", \"right\"]: " +
                             json_excerpt(merge));
    lines.push_back(0);
  }
  const bool nfc = config.contains("normalizer") && read_normalizer(path, config["normalizer"]);
  auto tokens = read_added_tokens(path, config, vocab);
  std::map<std::string, int32_t> added;
  for (const auto& token : tokens) added[token.content] = token.id;
  auto vocabulary = read_hugging_face(path, path, vocab, merges, lines, added);
  vocabulary.ignore_merges = model.value("ignore_merges", false);
  vocabulary.nfc = nfc;
  vocabulary.added_tokens = std::move(tokens);
  return vocabulary;
}

// GPT-2's token table: the SHA-256 of every id's bytes in id order, each preceded by its length as
// 4 bytes little-endian (50,257 ids, <|endoftext|> last). Read from gpt2.tiktoken; the Hugging
// Face files of GPT-2 (vocab.json + merges.txt, tokenizer.json) give the same table.
constexpr const char* kGpt2TableSha256 = "a5623714bcf19049eb0fd78df19b6daa1e61ac435b86a5deae767768e7fcdc3d";

std::string table_sha256(const std::vector<std::string>& token_bytes) {
  std::string table;
  for (const auto& bytes : token_bytes) {
    const auto n = static_cast<uint32_t>(bytes.size());
    for (int k = 0; k < 4; ++k) table.push_back(static_cast<char>(n >> (8 * k) & 0xFF));
    table += bytes;
  }
  return sha256_bytes(table);
}

// Records what the vocabulary was read from: its files, their kind and hash.
Vocabulary identify(Vocabulary vocabulary, const std::string& format, std::vector<VocabularyFile> files) {
  std::string all;
  for (const auto& file : files) all += file.bytes;
  auto& identity = vocabulary.identity;
  identity.sha256 = sha256_bytes(all);
  identity.vocab_size = static_cast<int64_t>(vocabulary.token_bytes.size());
  identity.eot_id = vocabulary.eot;
  // GPT-2's table with encode() = tiktoken's encode_ordinary: no added tokens (tokenizer.json's
  // would split "<|endoftext|>" out of the text), no normaliser.
  const bool plain = !vocabulary.nfc && vocabulary.added_tokens.empty();
  const bool gpt2 = plain && identity.vocab_size == 50257 && table_sha256(vocabulary.token_bytes) == kGpt2TableSha256;
  identity.kind = gpt2 ? "gpt2" : format;
  vocabulary.files = std::move(files);
  return vocabulary;
}

nlohmann::json parse_tokenizer_json(const std::string& label, const std::string& content) {
  const size_t first = content.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || content[first] != '{') malformed(label, 0, "not a JSON object");
  return parse_json(label, content);
}

}  // namespace

std::string byte_level_string(std::string_view bytes) {
  const auto& map = byte_characters();
  std::string text;
  for (const unsigned char b : bytes) {
    const char32_t c = map.code_point[b];
    if (c < 0x80) text += static_cast<char>(c);
    else text += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};  // all below U+0800
  }
  return text;
}

std::optional<std::string> byte_level_bytes(std::string_view token) {
  const auto& map = byte_characters();
  std::string bytes;
  const auto* s = reinterpret_cast<const unsigned char*>(token.data());
  for (size_t i = 0; i < token.size();) {
    char32_t c;
    if (s[i] < 0x80) {
      c = s[i++];
    } else if ((s[i] & 0xE0) == 0xC0 && i + 1 < token.size()) {
      c = (char32_t{s[i]} & 0x1F) << 6 | (s[i + 1] & 0x3F);
      i += 2;
    } else {
      return std::nullopt;
    }
    if (c >= 512 || map.byte[c] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(map.byte[c]));
  }
  if (bytes.empty()) return std::nullopt;
  return bytes;
}

std::string default_vocabulary_path() {
  const char* vocab = std::getenv("SINKGATE_VOCAB");
  if (vocab && *vocab) return vocab;
  return cache_folder() + "/gpt2.tiktoken";
}

std::vector<std::string> vocabulary_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const auto exists = [&](const fs::path& file) { return fs::is_regular_file(file, error); };
  std::vector<fs::path> candidates;
  if (fs::is_directory(path, error)) {
    if (exists(fs::path(path) / "tokenizer.json")) candidates = {fs::path(path) / "tokenizer.json"};
    else candidates = {fs::path(path) / "vocab.json", fs::path(path) / "merges.txt"};
  } else {
    const fs::path file(path);
    candidates = {file};
    if (file.filename() == "merges.txt") candidates.push_back(file.parent_path() / "vocab.json");
    else if (file.filename() != "tokenizer.json" && file.extension() != ".tiktoken")
      candidates.push_back(file.parent_path() / "merges.txt");
  }
  std::vector<std::string> files;
  // A folder first: every file in it is an input no output may replace (h5::check_writable), the
  // files it does not read (a vocab.json beside the tokenizer.json) too.
  if (fs::is_directory(path, error)) files.push_back(path);
  for (const auto& candidate : candidates)
    if (exists(candidate) || candidate == fs::path(path)) files.push_back(candidate.string());
  return files;
}

Vocabulary read_vocabulary(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) {
    for (const char* name : {"tokenizer.json", "vocab.json"})
      if (fs::exists(fs::path(path) / name)) return read_vocabulary((fs::path(path) / name).string());
    throw InputError("vocabulary folder '" + path + "' has neither tokenizer.json nor vocab.json", kVocabularyHint);
  }
  if (fs::path(path).filename() == "merges.txt") return read_vocabulary((fs::path(path).parent_path() / "vocab.json").string());
  std::string content = read_file(path, "vocabulary file");
  const size_t first = content.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && content[first] == '{') {
    const auto json = parse_json(path, content);
    // vocab.json may well hold a token "model"; tokenizer.json's "model" is an object.
    if (json.is_object() && json.contains("model") && json["model"].is_object()) {
      return identify(read_tokenizer_json(path, json), "tokenizer.json", {{"tokenizer.json", std::move(content)}});
    }
    const std::string merges_path = (fs::path(path).parent_path() / "merges.txt").string();
    if (!fs::exists(merges_path)) {
      read_vocab_object(json, path);  // a malformed vocab.json is named first
      throw InputError("vocab.json '" + path + "' needs merges.txt beside it, and '" + merges_path + "' does not exist",
                       kVocabularyHint);
    }
    std::string merges = read_file(merges_path, "merges file");
    auto vocabulary = read_vocab_json(path, json, merges_path, merges);
    return identify(std::move(vocabulary), "vocab.json+merges.txt",
                    {{"vocab.json", std::move(content)}, {"merges.txt", std::move(merges)}});
  }
  auto vocabulary = read_rank_file(path, content);
  return identify(std::move(vocabulary), "tiktoken", {{"vocabulary.tiktoken", std::move(content)}});
}

Vocabulary read_vocabulary_files(const std::vector<VocabularyFile>& files, const std::string& label) {
  auto names = [&] {
    std::string all;
    for (const auto& file : files) all += (all.empty() ? "" : ", ") + file.name;
    return all.empty() ? std::string("none") : all;
  };
  if (files.size() == 1 && files[0].name == "tokenizer.json") {
    const auto json = parse_tokenizer_json(label, files[0].bytes);
    if (!json.contains("model") || !json["model"].is_object()) malformed(label, 0, "tokenizer.json has no \"model\" object");
    return identify(read_tokenizer_json(label, json), "tokenizer.json", files);
  }
  if (files.size() == 2 && files[0].name == "vocab.json" && files[1].name == "merges.txt") {
    const auto json = parse_tokenizer_json(label, files[0].bytes);
    return identify(read_vocab_json(label, json, label + " (merges.txt)", files[1].bytes), "vocab.json+merges.txt", files);
  }
  if (files.size() == 1 && files[0].name == "vocabulary.tiktoken") {
    return identify(read_rank_file(label, files[0].bytes), "tiktoken", files);
  }
  throw InputError(label + ": the vocabulary files (" + names() +
                       ") are not tokenizer.json, vocab.json with merges.txt, or vocabulary.tiktoken",
                   "the file is damaged, or was written by a newer sinkgate");
}

bool TokenizerIdentity::same_vocabulary(const TokenizerIdentity& other) const {
  if (kind == "gpt2" && other.kind == "gpt2") return true;
  return sha256 == other.sha256 && vocab_size == other.vocab_size && eot_id == other.eot_id;
}

std::string TokenizerIdentity::describe() const {
  if (!known()) return "unknown";
  return kind + ", sha256 " + sha256.substr(0, 16) + "…, " + std::to_string(vocab_size) + " ids";
}

}  // namespace sg
