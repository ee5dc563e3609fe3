// tokenizer.h — GPT-2 byte-level BPE: UTF-8 text to token ids and back.
//
// encode() gives exactly the ids of tiktoken's "gpt2" encoding (encode_ordinary): the GPT-2
// pre-tokeniser regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// is implemented by hand over Unicode class tables taken from tiktoken's own regex engine, then
// each piece is merged by BPE. Vocabulary files: the tiktoken rank file (gpt2.tiktoken), and the
// Hugging Face forms vocab.json + merges.txt and tokenizer.json (model.vocab + model.merges of a
// byte-level BPE, merges as "a b" strings or ["a", "b"] pairs).
//
// Invalid UTF-8 never fails: before tokenising, each ill-formed byte sequence is replaced by
// U+FFFD exactly as Python's bytes.decode("utf-8", errors="replace") does (one U+FFFD per maximal
// ill-formed subpart), so encode(bytes) equals tiktoken's encoding of that decoded string.
//
// Not here: training; a tokenizer.json's normalizer (e.g. NFC) is ignored, and added tokens are
// not split out of the text — encode() treats every byte as ordinary text, so the string
// "<|endoftext|>" is not the end-of-text id. (Exact for GPT-2; Pythia's NFC normaliser and its
// added runs-of-spaces tokens are not applied.) tokenizer.json options that would change the
// ids and are not implemented (another model type or pre-tokeniser, add_prefix_space,
// byte_fallback, dropout, subword prefixes) are refused with an InputError.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// The class of a code point in the GPT-2 pattern: \p{L}, \p{N}, \s (Unicode White_Space) or
/// none of these, as tiktoken's regex engine classifies it.
enum class CharClass : uint8_t { other = 0, letter = 1, number = 2, space = 3 };

/// The class of code_point (anything above U+10FFFF is other).
CharClass char_class(char32_t code_point);

/// text with every ill-formed UTF-8 sequence replaced by U+FFFD (EF BF BD), as Python's
/// bytes.decode("utf-8", errors="replace") does; valid text is returned unchanged.
std::string replace_invalid_utf8(std::string_view text);

/// Whether text is well-formed UTF-8 (no surrogates, no overlong forms, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text);

/// The GPT-2 pre-tokens of text (valid UTF-8), in order; they concatenate to text.
std::vector<std::string_view> pretokenize(std::string_view text);

/// The vocabulary a tool uses when none is given: $SINKGATE_VOCAB, else gpt2.tiktoken in the
/// cache folder that setup.sh fills ($SINKGATE_CACHE, else $XDG_CACHE_HOME/sinkgate, else
/// ~/.cache/sinkgate).
std::string default_vocabulary_path();

class Tokenizer {
 public:
  /// Loads a vocabulary; the format is detected: a folder (tokenizer.json, else vocab.json +
  /// merges.txt in it), tokenizer.json (a JSON object with "model"), vocab.json (a JSON object of
  /// token → id, with merges.txt beside it), or a tiktoken rank file (base64 token, space, rank per
  /// line; the end-of-text id is the largest rank + 1). Throws InputError naming the file and the
  /// problem when a file is missing, unreadable or malformed.
  static Tokenizer load(const std::string& path);

  /// The token ids of text (any bytes; see the file comment for invalid UTF-8). Thread-safe.
  /// Throws InputError only for a single pre-token of 2^31 bytes or more.
  std::vector<int32_t> encode(std::string_view text) const;

  /// The same ids as encode(text), computed by `threads` threads (0: all cores) on chunks cut
  /// only where the pre-tokeniser always cuts (between a non-space ASCII byte and an ASCII space).
  std::vector<int32_t> encode_parallel(std::string_view text, int64_t threads) const;

  /// The bytes of the tokens, concatenated (special tokens give their text, e.g. "<|endoftext|>").
  /// The result is UTF-8 only if the ids split no character. Throws InputError for an id that is
  /// not in the vocabulary.
  std::string decode(const std::vector<int32_t>& ids) const;

  /// The id of "<|endoftext|>" (50256 for GPT-2).
  int32_t eot_id() const;

  /// The number of ids: the largest id + 1 (50257 for GPT-2: 50256 ranks and <|endoftext|>).
  int64_t vocab_size() const;

  /// The file the vocabulary was read from.
  const std::string& path() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace sg
