// tokenizer.h — GPT-2 byte-level BPE: UTF-8 text to token ids and back.
//
// With GPT-2's vocabulary, encode() gives exactly the ids of tiktoken's "gpt2" encoding
// (encode_ordinary): the GPT-2 pre-tokeniser regex
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
// tokenizer.json is followed as Hugging Face `tokenizers` (0.23) encodes with it (add_special_tokens
// false), in this order:
//  1. added_tokens with "normalized": false are split out of the raw text: a leftmost-longest scan
//     over all their contents (at each position the longest content that starts there; the scan
//     resumes after the match), honouring "single_word" (a match next to a \w character — Unicode
//     Alphabetic, marks, decimal digits, connector punctuation, joiners — is skipped), "lstrip" and
//     "rstrip" (the match takes in the white space before / after it). Matched pieces become their
//     ids; Hugging Face's quirks are kept: a skipped match is not retried shorter, and text that an
//     rstrip took in can be matched again by the next token (its ids then cover it twice).
//  2. Each remaining piece is normalised on its own: Unicode NFC (ICU) when the normalizer is NFC or
//     a Sequence of NFCs; no normalizer leaves it as it is; any other normalizer is refused.
//  3. added_tokens with "normalized": true are split out of each normalised piece in the same way,
//     matching their contents normalised too.
//  4. The pieces left are pre-tokenised and merged as GPT-2's are (a piece never merges across an
//     added token).
// So Pythia's "<|endoftext|>" in the text is id 0, and its runs-of-spaces tokens take runs of two
// or more spaces ("a   b" is "a", "   ", "b"). An added token's id must be the one `tokenizers`
// gives it (the model's id when its content is in model.vocab, else the next free one), and two
// added tokens may not match the same text: a file that breaks either is refused.
// The tiktoken rank file and vocab.json + merges.txt have no added tokens and no normaliser:
// encode() is then tiktoken's encode_ordinary, and "<|endoftext|>" in the text is ordinary text.
//
// Not here: reading the vocabulary files (vocabulary.h), the Unicode classes, UTF-8 repair and NFC
// (unicode.h); training; tokenizer.json options that would change the ids and are not implemented
// (another model type or pre-tokeniser, add_prefix_space, byte_fallback, dropout, subword
// prefixes, normalizers other than NFC) are refused with an InputError. NFC uses ICU's tables
// (Unicode 15 in ICU 72), `tokenizers` its own (Unicode 9): they differ only on the few combining
// marks and compositions assigned since (e.g. U+0898, U+1AC1), so ids can differ on text with those.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/text/vocabulary.h"

namespace sg {

/// The GPT-2 pre-tokens of text (valid UTF-8), in order; they concatenate to text.
std::vector<std::string_view> pretokenize(std::string_view text);

class Tokenizer {
 public:
  /// Loads a vocabulary; the format is detected: a folder (tokenizer.json, else vocab.json +
  /// merges.txt in it), tokenizer.json (a JSON object with "model"), vocab.json (a JSON object of
  /// token → id, with merges.txt beside it), or a tiktoken rank file (base64 token, space, rank per
  /// line; the end-of-text id is the largest rank + 1). Throws InputError naming the file and the
  /// problem when a file is missing, unreadable or malformed.
  static Tokenizer load(const std::string& path);

  /// Loads a vocabulary from the bytes of its files (as files() returns them, e.g. embedded in a
  /// token or run file); `label` names it in messages and is path(). Throws InputError as load().
  static Tokenizer load_files(const std::vector<VocabularyFile>& files, const std::string& label);

  /// The token ids of text (any bytes; see the file comment for invalid UTF-8 and added tokens).
  /// Thread-safe. Throws InputError only for a single pre-token of 2^31 bytes or more, or (NFC)
  /// for 256 MB of text in which NFC has no boundary.
  std::vector<int32_t> encode(std::string_view text) const;

  /// The same ids as encode(text), computed by `threads` threads (0: all cores) on chunks cut
  /// only where the pre-tokeniser always cuts (between a non-space ASCII byte and an ASCII space).
  /// One thread when an added token could reach across such a cut (rstrip after a non-space
  /// ASCII character, single_word before leading ASCII white space, or such a pair inside it);
  /// Pythia's never do.
  std::vector<int32_t> encode_parallel(std::string_view text, int64_t threads) const;

  /// The bytes of the tokens, concatenated (special tokens give their text, e.g. "<|endoftext|>").
  /// The result is UTF-8 only if the ids split no character. Throws InputError for an id that is
  /// not in the vocabulary.
  std::string decode(const std::vector<int32_t>& ids) const;

  /// The id of "<|endoftext|>" (50256 for GPT-2).
  int32_t eot_id() const;

  /// The number of ids: the largest id + 1 (50257 for GPT-2: 50256 ranks and <|endoftext|>).
  int64_t vocab_size() const;

  /// The token table: the bytes of every id, by id (a special token's its text, e.g.
  /// "<|endoftext|>"; "" for an id no token has). For a tiktoken rank file (kinds "gpt2" from
  /// gpt2.tiktoken, "tiktoken") an id below eot_id() is the token's rank, its merge priority.
  const std::vector<std::string>& tokens() const;

  /// The file the vocabulary was read from.
  const std::string& path() const;

  /// Its kind, the sha256 of its files, its size and end-of-text id.
  const TokenizerIdentity& identity() const;

  /// The files it was read from, with their bytes (vocab.json before merges.txt).
  const std::vector<VocabularyFile>& files() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace sg
