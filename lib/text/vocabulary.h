// vocabulary.h — reading a byte-level BPE vocabulary from its files: the tiktoken rank file
// (gpt2.tiktoken), Hugging Face's vocab.json + merges.txt, and tokenizer.json (model.vocab,
// model.merges, added_tokens, the normalizer), each checked and turned into one plain description
// (Vocabulary: the token table, the merges, the added tokens, NFC) that Tokenizer builds its
// tables from; what identifies a vocabulary (TokenizerIdentity); where a tool finds one.
// GPT-2's byte-to-character map, by which Hugging Face files spell bytes, is here for both
// directions (hf_vocabulary.h writes those files).
//
// Not here: encoding (tokenizer.h, whose file comment gives tokenizer.json's pipeline and what
// is refused), writing Hugging Face files (hf_vocabulary.h), vocabularies inside token and run
// files (tokenizer_record.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// The largest vocabulary file a tool reads (64 MiB; GPT-2's tokenizer.json has 1.4 MB): a file
/// above it, or anything but a regular file (a FIFO, /dev/zero), is an InputError naming it.
inline constexpr int64_t kMaxVocabularyFileBytes = int64_t{64} << 20;

/// One file of a vocabulary as it was read: its canonical name ("tokenizer.json", "vocab.json",
/// "merges.txt" or "vocabulary.tiktoken") and its bytes.
struct VocabularyFile {
  std::string name;
  std::string bytes;
};

/// What identifies a vocabulary (lib/SCHEMA.md "Tokenizer identity"): the same identity decodes
/// the same ids to the same bytes and encodes text to the same ids.
struct TokenizerIdentity {
  /// "gpt2" (GPT-2's 50,257 tokens, in any of the formats), "tiktoken" (another rank file),
  /// "tokenizer.json" or "vocab.json+merges.txt"; "" when not known (files of older versions).
  std::string kind;
  std::string sha256;  // of the vocabulary file's bytes (vocab.json's then merges.txt's, concatenated)
  int64_t vocab_size = 0;
  int64_t eot_id = -1;

  bool known() const { return !kind.empty(); }
  /// Whether a tokenizer of `other` decodes ids exactly as this one: both GPT-2's, or the same sha256.
  bool same_vocabulary(const TokenizerIdentity& other) const;
  /// "kind, sha256 1234abcd…, V ids" for messages.
  std::string describe() const;
};

/// The vocabulary a tool uses when none is given: $SINKGATE_VOCAB, else gpt2.tiktoken in the
/// cache folder that setup.sh fills ($SINKGATE_CACHE, else $XDG_CACHE_HOME/sinkgate, else
/// ~/.cache/sinkgate).
std::string default_vocabulary_path();

/// The files that Tokenizer::load(path) may read, existing ones only: a folder itself, then its
/// tokenizer.json, else its vocab.json and merges.txt; for merges.txt also the vocab.json beside
/// it; for any other file itself and, unless it is a tokenizer.json or a .tiktoken file, the
/// merges.txt beside it. Every one is an input that no output may overwrite (h5::check_writable:
/// for a folder, every file in it).
std::vector<std::string> vocabulary_files(const std::string& path);

/// A tokenizer.json added token, as the file gives it (tokenizer.h: how each flag matches).
struct AddedTokenEntry {
  std::string content;
  int32_t id = -1;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true;
};

/// Two token ids that merge into a third.
struct MergeRule {
  int32_t left = -1, right = -1, merged = -1;
};

/// A vocabulary as its files describe it, checked: every id has at most one token, every merge
/// names tokens of the vocabulary, added tokens have the ids `tokenizers` gives them.
struct Vocabulary {
  std::string path;                       // the file (or label) named in messages
  std::vector<std::string> token_bytes;   // by id; "" where no token has the id
  std::vector<size_t> lines;              // rank files: the line of each id, for messages
  int32_t eot = -1;                       // "<|endoftext|>"'s id; -1 when there is none
  /// tiktoken: every split of a token into two tokens merges into it with its id (its rank) as
  /// priority, and every token below eot is emitted whole. Hugging Face: `merges` in priority
  /// order, and `byte_level` the ids whose tokens are byte-level strings (token_bytes holds their
  /// bytes); such a token is emitted whole where the merges would give it (always with
  /// ignore_merges).
  bool rank_merges = false;
  std::vector<MergeRule> merges;
  std::vector<int32_t> byte_level;
  bool ignore_merges = false;
  bool nfc = false;                            // tokenizer.json's normalizer is NFC
  std::vector<AddedTokenEntry> added_tokens;   // tokenizer.json's, in file order
  TokenizerIdentity identity;
  std::vector<VocabularyFile> files;
};

/// Reads the vocabulary at path; the format is detected (Tokenizer::load). Throws InputError
/// naming the file and the problem when a file is missing, unreadable or malformed.
Vocabulary read_vocabulary(const std::string& path);

/// Reads a vocabulary from the bytes of its files (Tokenizer::load_files); `label` is its path.
Vocabulary read_vocabulary_files(const std::vector<VocabularyFile>& files, const std::string& label);

/// Throws the InputError of a malformed vocabulary: "path:line: problem" (no line when 0), with
/// the hint on which vocabularies sinkgate reads.
[[noreturn]] void vocabulary_malformed(const std::string& path, size_t line, const std::string& problem);

/// At most 60 bytes of text, with "…" when cut, for messages.
std::string vocabulary_excerpt(std::string_view text);

/// GPT-2's reversible map from bytes to printable characters (openai/gpt-2 encoder.py): '!'..'~',
/// '¡'..'¬', '®'..'ÿ' stand for themselves, the other 68 bytes in order for U+0100 onwards.
/// The token string of `bytes` (UTF-8).
std::string byte_level_string(std::string_view bytes);

/// The bytes a byte-level token string stands for; nullopt when a character is outside the map
/// or the string is empty.
std::optional<std::string> byte_level_bytes(std::string_view token);

}  // namespace sg
