// data.h — token files (format "sinkgate-tokens") and the paired batch sampler (paper App. A).
//
// A token file holds a validation split taken first from the token stream and the training
// split after it, disjoint. Batches are context-length windows drawn with replacement. The
// window starts come from a counter-based generator: draw k of the stream (seed, split) is a
// pure function of (seed, split, k), so two runs with one seed see the same windows in the
// same order whatever their arm, micro-batch or accumulation, and a resumed run needs only the
// index of its next draw.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/h5.h"

namespace sg {

enum class Split { val, train };

/// Name of a split as stored ("val", "train").
std::string to_string(Split split);

inline constexpr const char* kTokenFormat = "sinkgate-tokens";
inline constexpr int64_t kTokenSchemaVersion = 1;

/// What a token file says about itself.
struct TokenFileInfo {
  std::string tokenizer;     // e.g. "gpt2"
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

  const TokenFileInfo& info() const { return info_; }
  const std::string& path() const { return path_; }
  int64_t size(Split split) const { return split == Split::val ? info_.val_tokens : info_.train_tokens; }
  /// Tokens [offset, offset + count) of a split as int64 (count).
  torch::Tensor read(Split split, int64_t offset, int64_t count) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::string path_;
  TokenFileInfo info_;
};

/// Draw `index` of the stream (seed, split): a uniform integer in [0, range), counter-based.
int64_t window_start(int64_t seed, Split split, int64_t index, int64_t range);

/// A batch of next-token pairs: inputs = tokens[s, s + T), targets = tokens[s + 1, s + T + 1).
struct Batch {
  torch::Tensor inputs;   // (n, T) int64
  torch::Tensor targets;  // (n, T) int64
};

/// Windows first … first + count - 1 of the stream (seed, split), of `context` tokens.
/// Throws InputError when the split is not longer than the context.
Batch sample_batch(const TokenFile& tokens, Split split, int64_t seed, int64_t first, int64_t count,
                   int64_t context);

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
