// tokenizer_record.h — the tokenizer a token file or a run file records (group /tokenizer,
// lib/SCHEMA.md "Tokenizer record"): its identity (kind, sha256, size, end-of-text id) and, unless
// it is GPT-2's, its vocabulary files embedded, so that every later tool decodes a run's ids with
// the vocabulary it was trained on, without the original file.
//
// Not here: reading vocabulary files (tokenizer.h), the rest of token and run files.
#pragma once
#include <string>
#include <vector>

#include "lib/io/h5.h"
#include "lib/text/tokenizer.h"

namespace sg {

/// A tokenizer as a file records it.
struct TokenizerRecord {
  TokenizerIdentity identity;         // not known(): nothing recorded (files of older versions)
  std::string source;                 // the vocabulary path as sg-tokenize was given it
  std::vector<VocabularyFile> files;  // embedded files; empty for GPT-2's vocabulary

  bool known() const { return identity.known(); }
  /// The record of a loaded tokenizer: its identity, and its files unless it is GPT-2's.
  static TokenizerRecord of(const Tokenizer& tokenizer);
};

/// The largest embedded vocabulary a reader accepts (the sum of its files), kMaxVocabularyFileBytes.
inline constexpr int64_t kMaxEmbeddedVocabularyBytes = kMaxVocabularyFileBytes;

/// Writes the group /tokenizer of `root` (attributes kind, sha256, vocab_size, eot_id, source,
/// and files when there are any; datasets files/NAME, uint8). Throws OutputError.
void write_tokenizer_record(h5::Group& root, const TokenizerRecord& record);

/// Reads /tokenizer of `root` (a record that is not known() when the group is absent). Throws
/// InputError naming `file` when it is damaged (a missing attribute, an unknown kind, an embedded
/// file of another name or over kMaxEmbeddedVocabularyBytes, files that do not hash to sha256).
TokenizerRecord read_tokenizer_record(const h5::Group& root, const std::string& file);

/// The tokenizer that decodes the ids of `file`, whose record is `record`:
///  - `given` (a vocabulary path, "" for none) when given: loaded and checked against the record;
///    a different vocabulary is an InputError naming both files and their hashes;
///  - else the embedded files; for GPT-2's vocabulary the default one (default_vocabulary_path(),
///    checked to be GPT-2's);
///  - for a file without a record (older versions): `given`, else the default vocabulary, unchecked.
/// Throws InputError.
Tokenizer tokenizer_for(const TokenizerRecord& record, const std::string& file, const std::string& given);

/// Throws InputError naming `file`, `tokenizer`'s file and both hashes unless `tokenizer` decodes
/// ids as the recorded one does (TokenizerIdentity::same_vocabulary); nothing when not recorded.
void check_same_vocabulary(const TokenizerRecord& record, const std::string& file, const Tokenizer& tokenizer);

}  // namespace sg
