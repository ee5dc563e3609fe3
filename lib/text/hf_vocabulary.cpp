// hf_vocabulary.cpp — a tiktoken rank file in the Hugging Face forms (see hf_vocabulary.h).
#include "lib/text/hf_vocabulary.h"

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "lib/base/error.h"

namespace sg {
namespace {

using ordered_json = nlohmann::ordered_json;
constexpr const char* kEndOfText = "<|endoftext|>";

InputError malformed(const std::string& path, const std::string& problem) {
  return InputError(path + ": not a tiktoken rank file: " + problem,
                    "give the GPT-2 rank file that setup.sh installs (gpt2.tiktoken), or set SINKGATE_VOCAB");
}

/// Standard base64 (with '=' padding) to bytes; false on any other character or a bad length.
bool base64_decode(const std::string& text, std::string* out) {
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
    int v[4];
    int padding = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        v[j] = 0;
        ++padding;
      } else {
        if (padding > 0 || (v[j] = value(c)) < 0) return false;
      }
    }
    const uint32_t triple = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out->push_back(static_cast<char>(triple >> 16));
    if (padding < 2) out->push_back(static_cast<char>((triple >> 8) & 0xFF));
    if (padding < 1) out->push_back(static_cast<char>(triple & 0xFF));
  }
  return true;
}

/// GPT-2's byte-to-character table as UTF-8 strings: '!'..'~', '¡'..'¬', '®'..'ÿ' map to
/// themselves, the remaining bytes in order to U+0100, U+0101, ...
std::array<std::string, 256> byte_characters() {
  std::array<int, 256> code{};
  std::array<bool, 256> printable{};
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  int next = 256;
  for (int b = 0; b < 256; ++b) code[b] = printable[b] ? b : next++;
  std::array<std::string, 256> characters;
  for (int b = 0; b < 256; ++b) {
    const int c = code[b];
    if (c < 0x80) {
      characters[b] = std::string(1, static_cast<char>(c));
    } else {  // every code is below U+0800: two bytes of UTF-8
      characters[b] = {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
    }
  }
  return characters;
}

/// The parts that byte-level BPE leaves of `token` when only merges of rank below `limit` apply.
std::vector<std::string> split_below(const std::unordered_map<std::string, int64_t>& ranks, const std::string& token,
                                     int64_t limit) {
  std::vector<std::string> parts;
  for (char c : token) parts.emplace_back(1, c);
  for (;;) {
    size_t best = parts.size();
    int64_t best_rank = limit;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto found = ranks.find(parts[i] + parts[i + 1]);
      if (found != ranks.end() && found->second < best_rank) best = i, best_rank = found->second;
    }
    if (best == parts.size()) return parts;
    parts[best] += parts[best + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

}  // namespace

HfVocabularyFiles hf_vocabulary_files(const std::string& rank_file, int64_t model_max_length) {
  std::ifstream in(rank_file, std::ios::binary);
  if (!in) throw InputError(rank_file + ": cannot be read", "setup.sh installs the GPT-2 rank file; or set SINKGATE_VOCAB");
  std::vector<std::string> tokens;  // by rank
  std::unordered_map<std::string, int64_t> ranks;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto space = line.find(' ');
    std::string token;
    int64_t rank = -1;
    try {
      size_t used = 0;
      if (space != std::string::npos) rank = std::stoll(line.substr(space + 1), &used);
      if (space == std::string::npos || used != line.size() - space - 1) rank = -1;
    } catch (const std::exception&) {
      rank = -1;
    }
    if (rank < 0 || !base64_decode(line.substr(0, space), &token))
      throw malformed(rank_file, "line " + std::to_string(line_number) + " is not 'base64token rank'");
    if (rank >= static_cast<int64_t>(tokens.size())) tokens.resize(static_cast<size_t>(rank) + 1);
    if (!tokens[static_cast<size_t>(rank)].empty() || !ranks.emplace(token, rank).second)
      throw malformed(rank_file, "line " + std::to_string(line_number) + " repeats a rank or a token");
    tokens[static_cast<size_t>(rank)] = token;
  }
  if (tokens.size() != ranks.size()) throw malformed(rank_file, "the ranks are not 0..N-1 without gaps");
  for (int b = 0; b < 256; ++b)
    if (!ranks.count(std::string(1, static_cast<char>(b))))
      throw malformed(rank_file, "byte " + std::to_string(b) + " has no token of its own");

  const auto characters = byte_characters();
  auto show = [&](const std::string& bytes) {
    std::string text;
    for (unsigned char b : bytes) text += characters[b];
    return text;
  };
  const auto end_of_text = static_cast<int64_t>(tokens.size());
  ordered_json vocab = ordered_json::object();
  std::vector<std::string> merges;
  for (int64_t rank = 0; rank < end_of_text; ++rank) {
    const auto& token = tokens[static_cast<size_t>(rank)];
    vocab[show(token)] = rank;
    if (token.size() < 2) continue;
    const auto parts = split_below(ranks, token, rank);
    if (parts.size() != 2)
      throw malformed(rank_file, "token of rank " + std::to_string(rank) + " is not the merge of two lower-ranked tokens");
    merges.push_back(show(parts[0]) + " " + show(parts[1]));
  }
  vocab[kEndOfText] = end_of_text;

  HfVocabularyFiles files;
  files.vocab_json = vocab.dump();
  std::ostringstream merges_txt;
  merges_txt << "#version: 0.2\n";
  for (const auto& merge : merges) merges_txt << merge << "\n";
  files.merges_txt = merges_txt.str();

  const ordered_json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  ordered_json post = byte_level, decoder = byte_level;
  post["add_prefix_space"] = true;
  post["trim_offsets"] = false;
  decoder["add_prefix_space"] = true;
  ordered_json tokenizer = ordered_json::object();
  tokenizer["version"] = "1.0";
  tokenizer["truncation"] = nullptr;
  tokenizer["padding"] = nullptr;
  tokenizer["added_tokens"] = ordered_json::array({{{"id", end_of_text}, {"content", kEndOfText}, {"single_word", false},
                                                    {"lstrip", false}, {"rstrip", false}, {"normalized", true},
                                                    {"special", true}}});
  tokenizer["normalizer"] = nullptr;
  tokenizer["pre_tokenizer"] = byte_level;
  tokenizer["post_processor"] = post;
  tokenizer["decoder"] = decoder;
  ordered_json model = ordered_json::object();
  model["type"] = "BPE";
  model["dropout"] = nullptr;
  model["unk_token"] = nullptr;
  model["continuing_subword_prefix"] = "";
  model["end_of_word_suffix"] = "";
  model["fuse_unk"] = false;
  model["byte_fallback"] = false;
  model["vocab"] = std::move(vocab);
  model["merges"] = merges;
  tokenizer["model"] = std::move(model);
  files.tokenizer_json = tokenizer.dump();

  ordered_json config = ordered_json::object();
  config["tokenizer_class"] = "GPT2Tokenizer";
  config["add_bos_token"] = false;
  config["add_prefix_space"] = false;
  config["bos_token"] = kEndOfText;
  config["eos_token"] = kEndOfText;
  config["unk_token"] = kEndOfText;
  config["errors"] = "replace";
  config["clean_up_tokenization_spaces"] = false;
  config["model_max_length"] = model_max_length;
  files.tokenizer_config_json = config.dump(2) + "\n";
  return files;
}

}  // namespace sg
