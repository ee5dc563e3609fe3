// corpus.h — reading a text corpus as a stream of documents, and tokenising it into a token
// file with bounded memory on all cores.
//
// Inputs: plain text files (one document each), JSON Lines files (*.jsonl, one document per
// line, the text in a field, "text" by default — how FineWeb-Edu is usually exported),
// directories (walked recursively in name order, links to files and folders followed, every
// regular file that reads as text an input), and "-" for stdin (plain text, or JSON Lines with --jsonl). A file that is not text
// (not_text_reason) is refused when named, and left out, and reported, when a directory holds it.
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

/// The files an input list expands to; "-" stays "-". A directory is walked recursively, its files
/// sorted by path: symbolic links to files and to folders are followed, a folder reached a second
/// time (by another link) is skipped with a warning, and a member that is no regular file or
/// folder (a dangling link, a FIFO, a socket, a device) is skipped with a warning saying which.
/// Throws InputError for a path that does not exist, a cycle of links (a link to a folder that
/// holds it, or a cycle of file links) naming the link, and a directory that holds no file.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs);

/// How much of a file the text check reads: its first 8 KiB (as git's binary check does).
constexpr int64_t kTextCheckBytes = 8192;

/// Why `head`, the first bytes of a file (all of it when `whole`), is not text a corpus can hold,
/// or "" when it is: a binary signature at offset 0 ("an HDF5 file", "a Parquet file", "a gzip
/// file", "a zip file", …; HDF5's also at 512, 1024, 2048 and 4096, after a user block), "a NUL byte",
/// or "invalid UTF-8" when more than 1 % of its bytes (at least one) start no valid UTF-8
/// sequence. A sequence cut by the end of a prefix (`whole` false) is not counted.
std::string not_text_reason(const std::string& head, bool whole);

/// not_text_reason of a file's first kTextCheckBytes ("-": stdin's copy, h5::resolve_input).
/// Throws InputError when it cannot be read.
std::string file_not_text_reason(const std::string& path);

/// A file a directory held that is not text, and why (not_text_reason).
struct SkippedFile {
  std::string path, reason;
};

/// The inputs of a corpus: the text files, and the files of directories left out as not text.
struct CorpusFiles {
  std::vector<std::string> files;
  std::vector<SkippedFile> skipped;
};

/// expand_inputs, with every file checked for text: a file of a directory that is not text is
/// skipped (listed in `skipped`); a file named itself, or stdin, that is not text is an
/// InputError "FILE: not text (an HDF5 file)". InputError too when a directory holds no text file.
CorpusFiles list_corpus_files(const std::vector<std::string>& inputs);

/// The paths an output must not replace (h5::check_writable's inputs): the inputs as named, so
/// that a folder protects every file in it, read or skipped, then every file read or skipped by
/// the path the walk reached it by (through a link into another folder too).
std::vector<std::string> protected_paths(const std::vector<std::string>& inputs, const CorpusFiles& corpus);

/// One paragraph for stderr on the files skipped, grouped by reason, at most three names a
/// reason: "skipped 3 of 10 files, not text: an HDF5 file (2): a.h5, b.h5; a NUL byte (1): c.bin".
/// "" when none was skipped. `total`: the files found, skipped ones included.
std::string describe_skipped(const std::vector<SkippedFile>& skipped, size_t total);

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

/// Tokenises `corpus` (list_corpus_files, called once: its warnings are said once) into a token
/// file (lib/text/token_file.h), documents joined by the end-of-text id, the validation split
/// first; one warning names the files skipped as not text (describe_skipped). `annotate` writes
/// on the root (provenance). Progress (bytes, tokens, MB/s, ETA) goes to the log.
TokenizeSummary tokenize_corpus(const CorpusFiles& corpus, const Tokenizer& tokenizer,
                                const TokenizeOptions& options,
                                const std::function<void(class TokenWriter&)>& annotate);

}  // namespace sg
