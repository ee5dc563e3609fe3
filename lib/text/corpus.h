// corpus.h — reading a text corpus as a stream of documents, and tokenising it into a token
// file with bounded memory on all cores.
//
// Inputs: plain text files (one document each), JSON Lines files (*.jsonl, one document per
// line, the text in a field, "text" by default — how FineWeb-Edu is usually exported),
// directories (walked recursively in name order, every regular file an input), and "-" for
// stdin (plain text, or JSON Lines with --jsonl).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/text/tokenizer.h"

namespace sg {

struct CorpusOptions {
  std::string text_field = "text";  // the JSON Lines field holding a document
  bool stdin_jsonl = false;         // read "-" as JSON Lines
  int64_t block_bytes = int64_t{32} << 20;  // plain text is read in blocks of about this size
};

/// The files an input list expands to (directories walked, sorted); "-" stays "-".
/// Throws InputError for a path that does not exist.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs);

/// Reads documents one piece at a time. A large plain-text document arrives in several pieces,
/// cut only where the GPT-2 pre-tokeniser always cuts, so tokenising pieces separately gives the
/// ids of the whole; `last` marks a document's final piece.
class CorpusReader {
 public:
  CorpusReader(std::vector<std::string> files, CorpusOptions options);
  ~CorpusReader();
  /// The next piece; false at the end. Throws InputError naming the file and line on a bad
  /// JSON line or a line without the text field.
  bool next(std::string& piece, bool& last);
  /// Bytes read so far, and the total size of the inputs (stdin: of its copy).
  int64_t bytes_read() const;
  int64_t bytes_total() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct TokenizeOptions {
  std::string output;
  bool force = false;
  int64_t val_tokens = -1;  // < 0: automatic, min(5.2M, a tenth of the estimated corpus)
  int64_t threads = 0;      // 0: all cores
  std::string tokenizer_name = "gpt2";  // recorded in the token file
  CorpusOptions corpus;
};

struct TokenizeSummary {
  int64_t documents = 0, tokens = 0, val_tokens = 0, train_tokens = 0, bytes = 0;
  double seconds = 0;
};

/// Tokenises `inputs` into a token file (lib/text/token_file.h), documents joined by the end-of-text id,
/// the validation split first. `attributes` are written on the root (provenance). Progress
/// (bytes, tokens, MB/s, ETA) goes to the log.
TokenizeSummary tokenize_corpus(const std::vector<std::string>& inputs, const Tokenizer& tokenizer,
                                const TokenizeOptions& options,
                                const std::function<void(class TokenWriter&)>& annotate);

}  // namespace sg
