// hf_vocabulary.cpp — a vocabulary in the Hugging Face forms (see hf_vocabulary.h).
#include "lib/text/hf_vocabulary.h"

#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "lib/base/error.h"
#include "lib/text/vocabulary.h"

namespace sg {
namespace {

using ordered_json = nlohmann::ordered_json;
constexpr const char* kEndOfText = "<|endoftext|>";

InputError malformed(const std::string& vocabulary, const std::string& problem) {
  return InputError(vocabulary + ": not a byte-level BPE vocabulary in rank order: " + problem,
                    "a tiktoken rank file must list each byte and then each merge in rank order, as gpt2.tiktoken does");
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

/// tokenizer_config.json: the end-of-text token as bos, eos and unk, the model's context.
std::string tokenizer_config(const std::string& tokenizer_class, const std::string& end_of_text, int64_t model_max_length) {
  ordered_json config = ordered_json::object();
  config["tokenizer_class"] = tokenizer_class;
  config["add_bos_token"] = false;
  config["add_prefix_space"] = false;
  config["bos_token"] = end_of_text;
  config["eos_token"] = end_of_text;
  config["unk_token"] = end_of_text;
  config["errors"] = "replace";
  config["clean_up_tokenization_spaces"] = false;
  config["model_max_length"] = model_max_length;
  return config.dump(2) + "\n";
}

/// The four files of a vocabulary whose ids below the end-of-text id are BPE ranks.
std::vector<VocabularyFile> rank_order_files(const Tokenizer& source, int64_t model_max_length) {
  const auto& vocabulary = source.path();
  const auto& table = source.tokens();
  const int64_t end_of_text = source.eot_id();
  if (end_of_text != static_cast<int64_t>(table.size()) - 1 || table.back() != kEndOfText)
    throw malformed(vocabulary, "its end-of-text token is not its last id");
  std::vector<std::string> tokens(table.begin(), table.end() - 1);  // by rank
  std::unordered_map<std::string, int64_t> ranks;
  for (size_t rank = 0; rank < tokens.size(); ++rank)
    if (tokens[rank].empty() || !ranks.emplace(tokens[rank], static_cast<int64_t>(rank)).second)
      throw malformed(vocabulary, "the ranks are not 0..N-1 without gaps, one token each");
  for (int b = 0; b < 256; ++b)
    if (!ranks.count(std::string(1, static_cast<char>(b))))
      throw malformed(vocabulary, "byte " + std::to_string(b) + " has no token of its own");

  ordered_json vocab = ordered_json::object();
  std::vector<std::string> merges;
  for (int64_t rank = 0; rank < end_of_text; ++rank) {
    const auto& token = tokens[static_cast<size_t>(rank)];
    vocab[byte_level_string(token)] = rank;
    if (token.size() < 2) continue;
    const auto parts = split_below(ranks, token, rank);
    if (parts.size() != 2)
      throw malformed(vocabulary, "token of rank " + std::to_string(rank) + " is not the merge of two lower-ranked tokens");
    merges.push_back(byte_level_string(parts[0]) + " " + byte_level_string(parts[1]));
  }
  vocab[kEndOfText] = end_of_text;

  std::vector<VocabularyFile> files;
  files.push_back({"vocab.json", vocab.dump()});
  std::ostringstream merges_txt;
  merges_txt << "#version: 0.2\n";
  for (const auto& merge : merges) merges_txt << merge << "\n";
  files.push_back({"merges.txt", merges_txt.str()});

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
  files.push_back({"tokenizer.json", tokenizer.dump()});

  files.push_back({"tokenizer_config.json", tokenizer_config("GPT2Tokenizer", kEndOfText, model_max_length)});
  return files;
}

}  // namespace

std::vector<VocabularyFile> hf_vocabulary_files(const Tokenizer& tokenizer, int64_t model_max_length) {
  const auto& kind = tokenizer.identity().kind;
  if (kind == "gpt2" || kind == "tiktoken") return rank_order_files(tokenizer, model_max_length);
  const auto& end_of_text = tokenizer.tokens().at(static_cast<size_t>(tokenizer.eot_id()));
  std::vector<VocabularyFile> files = tokenizer.files();
  const bool fast = kind == "tokenizer.json" && files.size() == 1 && files[0].name == "tokenizer.json";
  if (fast || (kind == "vocab.json+merges.txt" && files.size() == 2)) {
    const char* tokenizer_class = fast ? "PreTrainedTokenizerFast" : "GPT2Tokenizer";
    files.push_back({"tokenizer_config.json", tokenizer_config(tokenizer_class, end_of_text, model_max_length)});
    return files;
  }
  throw InputError(tokenizer.path() + ": a vocabulary of kind '" + kind + "' without its files",
                   "give the vocabulary file itself (--vocab)");
}

}  // namespace sg
