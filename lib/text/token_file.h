// token_file.h — token files (format "sinkgate-tokens", lib/SCHEMA.md): reading and writing.
//
// A token file holds a validation split taken first from the token stream and the training
// split after it, disjoint. Not here: which windows a run reads (sampler.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/io/h5.h"
#include "lib/text/tokenizer_record.h"

namespace sg {

enum class Split { val, train };

/// Name of a split as stored ("val", "train").
std::string to_string(Split split);

inline constexpr const char* kTokenFormat = "sinkgate-tokens";
inline constexpr int64_t kTokenSchemaVersion = 1;

/// What a token file says about itself.
struct TokenFileInfo {
  std::string tokenizer;     // e.g. "gpt2"
  std::string vocabulary;    // the vocabulary file the ids came from ("" when not recorded)
  TokenizerRecord tokenizer_record;  // its identity and embedded files (not known() in older files)
  int64_t vocab_size = 0;    // ids are < vocab_size
  int64_t eot_id = -1;       // the end-of-text id joining documents
  int64_t documents = 0;
  int64_t val_tokens = 0;
  int64_t train_tokens = 0;
};

/// A token file opened for reading. Splits small enough are read into memory once; larger ones
/// are read window by window.
class TokenFile {
 public:
  /// Opens and checks the format; throws InputError naming the file.
  static TokenFile open(const std::string& path);
  /// What open() would say about the file, from its attributes alone (no ids read): a cheap look
  /// for tools that need only the vocabulary. Throws InputError as open().
  static TokenFileInfo read_info(const std::string& path);

  const TokenFileInfo& info() const { return info_; }
  const std::string& path() const { return path_; }
  int64_t size(Split split) const { return split == Split::val ? info_.val_tokens : info_.train_tokens; }
  /// Copies tokens [offset, offset + count) of a split into `out` (count int64 values). Throws
  /// InputError naming the file when the range is outside the split, and for a split read window
  /// by window when a chunk the window touches fails its CRC32C or an id is outside the vocabulary.
  void read(Split split, int64_t offset, int64_t count, int64_t* out) const;
  /// The same, as a new vector.
  std::vector<int64_t> read(Split split, int64_t offset, int64_t count) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::string path_;
  TokenFileInfo info_;
};

/// Writes a token file as a stream of documents: the first `val_tokens` tokens go to the
/// validation split, the rest to the training split; documents are joined with the
/// end-of-text id (a document may straddle the two splits). Atomic: nothing appears under the
/// final name before commit().
class TokenWriter {
 public:
  TokenWriter(const std::string& path, bool force, int64_t val_tokens, const std::string& tokenizer,
              int64_t vocab_size, int64_t eot_id);
  ~TokenWriter();
  TokenWriter(const TokenWriter&) = delete;
  TokenWriter& operator=(const TokenWriter&) = delete;

  /// Appends one document's tokens, followed by the end-of-text id.
  void add_document(const std::vector<int32_t>& tokens);
  int64_t tokens() const;
  /// The root group of the file being written (for the provenance attributes).
  h5::Group& root();
  /// Writes the split sizes and renames the file into place. Throws InputError when the corpus
  /// was shorter than the validation split, OutputError when the file cannot be written.
  void commit();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sg
