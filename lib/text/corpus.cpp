// corpus.cpp — document streams and parallel tokenisation.
#include "lib/text/corpus.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/base/json.h"
#include "lib/base/log.h"
#include "lib/io/h5.h"
#include "lib/text/token_file.h"

namespace sg {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_ascii_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/// The last position p in (0, size) where the pre-tokeniser always cuts: an ASCII space after a
/// non-space ASCII byte. 0 when there is none.
size_t safe_cut(const std::string& text) {
  for (size_t p = text.size() - 1; p > 0; --p) {
    const auto before = static_cast<unsigned char>(text[p - 1]);
    if (text[p] == ' ' && before < 0x80 && !is_ascii_space(before)) return p;
  }
  return 0;
}

}  // namespace

namespace {

/// Why a folder's member is skipped when it is neither a regular file nor a folder.
std::string not_regular_reason(const fs::file_status& status) {
  if (fs::is_fifo(status)) return "a FIFO (named pipe)";
  if (fs::is_socket(status)) return "a socket";
  if (fs::is_block_file(status) || fs::is_character_file(status)) return "a device";
  return "not a regular file";
}

/// A folder's identity (device, inode), whatever path reached it.
std::pair<dev_t, ino_t> folder_identity(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw InputError(path + ": cannot be examined: " + std::strerror(errno));
  return {info.st_dev, info.st_ino};
}

/// A corpus folder's walk: links to files and to folders followed. `open` holds the folders
/// being walked, the input first: a link to one of them is a cycle. `walked` maps every folder
/// walked to the path it was first read by.
struct FolderWalk {
  std::vector<std::pair<std::pair<dev_t, ino_t>, std::string>> open;
  std::map<std::pair<dev_t, ino_t>, std::string> walked;
  std::vector<std::string> files;
};

void walk_member(const fs::directory_entry& entry, FolderWalk& walk);

/// Walks `folder` (already in walk.open) in name order. Every member is examined without
/// throwing but for a cycle (of file links, or of folder links), which is an InputError naming it.
void walk_folder(const std::string& folder, FolderWalk& walk) {
  std::error_code error;
  std::vector<fs::directory_entry> entries;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) entries.push_back(*it);
  if (error) throw InputError(folder + ": cannot be read in full: " + error.message());
  std::sort(entries.begin(), entries.end());
  for (const auto& entry : entries) walk_member(entry, walk);
}

void walk_member(const fs::directory_entry& entry, FolderWalk& walk) {
  const std::string member = entry.path().string();
  std::error_code error;
  const auto status = entry.status(error);
  if (error) {
    if (error == std::errc::too_many_symbolic_link_levels)
      throw InputError(member + ": too many levels of symbolic links (a cycle of links?)",
                       "remove the cycle, or the link, from the folder");
    const std::string why = error.message();
    if (!entry.is_symlink(error)) throw InputError(member + ": cannot be examined: " + why);
    log::warn(member + ": skipped: a symbolic link to nothing (dangling)");
    return;
  }
  if (fs::is_regular_file(status)) {
    walk.files.push_back(member);
    return;
  }
  if (!fs::is_directory(status)) {
    log::warn(member + ": skipped: " + not_regular_reason(status) + ", not a regular file");
    return;
  }
  const auto identity = folder_identity(member);
  for (const auto& [walking, path] : walk.open)
    if (walking == identity)
      throw InputError(member + ": a link to the folder " + path + " that holds it: a cycle of folder links",
                       "remove the link, or give the folders it should read on the command line");
  if (const auto first = walk.walked.find(identity); first != walk.walked.end()) {
    log::warn(member + ": skipped: the folder " + first->second + ", read once already");
    return;
  }
  walk.walked.emplace(identity, member);
  walk.open.push_back({identity, member});
  walk_folder(member, walk);
  walk.open.pop_back();
}

}  // namespace

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& input : inputs) {
    if (input == "-") {
      files.push_back(input);
      continue;
    }
    std::error_code error;
    const auto status = fs::status(input, error);
    if (error || !fs::exists(status)) throw InputError(input + ": no such file or directory");
    if (!fs::is_directory(status)) {
      files.push_back(input);
      continue;
    }
    FolderWalk walk;
    const auto identity = folder_identity(input);
    walk.walked.emplace(identity, input);
    walk.open.push_back({identity, input});
    walk_folder(input, walk);
    if (walk.files.empty()) throw InputError(input + ": directory holds no files");
    std::sort(walk.files.begin(), walk.files.end());  // by the whole path, as the order has always been
    files.insert(files.end(), walk.files.begin(), walk.files.end());
  }
  return files;
}

namespace {

/// Binary formats a corpus folder is likely to hold beside its text, by their signature at offset 0.
struct Signature {
  std::string bytes;
  const char* what;
};

const std::vector<Signature>& binary_signatures() {
  using namespace std::string_literals;
  static const std::vector<Signature> list = {
      {"\x89HDF\r\n\x1a\n"s, "an HDF5 file"},
      {"PAR1"s, "a Parquet file"},
      {"\x1f\x8b"s, "a gzip file"},
      {"PK\x03\x04"s, "a zip file"},
      {"PK\x05\x06"s, "a zip file"},
      {"\x28\xb5\x2f\xfd"s, "a zstd file"},
      {"\xfd" "7zXZ\x00"s, "an xz file"},
      {"7z\xbc\xaf\x27\x1c"s, "a 7-Zip file"},
      {"ARROW1"s, "an Arrow file"},
      {"\x93NUMPY"s, "a NumPy file"},
      {"SQLite format 3\x00"s, "an SQLite database"},
      {"%PDF-"s, "a PDF document"},
      {"\x89PNG\r\n\x1a\n"s, "a PNG image"},
      {"\xff\xd8\xff"s, "a JPEG image"},
      {"\x7f" "ELF"s, "an ELF executable"},
  };
  return list;
}

bool starts_with_at(const std::string& text, size_t offset, const std::string& prefix) {
  return text.size() >= offset + prefix.size() && text.compare(offset, prefix.size(), prefix) == 0;
}

/// Length of the valid UTF-8 sequence at text[i] (1 to 4), 0 when the byte starts no valid
/// sequence, -1 when a sequence that could be valid is cut by the end of `text`.
int utf8_length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  int length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  for (int k = 1; k < length; ++k) {
    if (i + k >= text.size()) return -1;
    const unsigned char c = byte(i + k);
    if (k == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xbf)) return 0;
  }
  return length;
}

}  // namespace

std::string not_text_reason(const std::string& head, bool whole) {
  for (const auto& signature : binary_signatures())
    if (starts_with_at(head, 0, signature.bytes)) return signature.what;
  for (size_t offset : {size_t{512}, size_t{1024}, size_t{2048}, size_t{4096}})  // HDF5 after a user block
    if (starts_with_at(head, offset, binary_signatures()[0].bytes)) return binary_signatures()[0].what;
  if (head.find('\0') != std::string::npos) return "a NUL byte";
  size_t invalid = 0, i = 0;
  while (i < head.size()) {
    const int length = utf8_length(head, i);
    if (length < 0 && !whole) break;  // a sequence cut by the end of the prefix
    if (length <= 0) {
      ++invalid;
      ++i;
    } else {
      i += static_cast<size_t>(length);
    }
  }
  if (invalid > 0 && invalid * 100 > i) return "invalid UTF-8";
  return "";
}

std::string file_not_text_reason(const std::string& path) {
  // A pipe is read from the copy resolve_input makes of it, so that the check leaves its bytes.
  auto in = open_input(h5::resolve_input(path));
  // One byte more than the check reads says whether the prefix is the whole file.
  std::string head(static_cast<size_t>(kTextCheckBytes) + 1, '\0');
  size_t got = 0;
  while (got < head.size()) {
    const size_t n = in.read(head.data() + got, head.size() - got);
    if (n == 0) break;
    got += n;
  }
  const bool whole = got <= static_cast<size_t>(kTextCheckBytes);
  head.resize(std::min(got, static_cast<size_t>(kTextCheckBytes)));
  return not_text_reason(head, whole);
}

CorpusFiles list_corpus_files(const std::vector<std::string>& inputs) {
  CorpusFiles out;
  for (const auto& input : inputs) {
    const auto files = expand_inputs({input});
    const bool named = files.size() == 1 && files[0] == input;
    const size_t first_skipped = out.skipped.size();
    size_t kept = 0;
    for (const auto& file : files) {
      const std::string reason = file_not_text_reason(file);
      if (reason.empty()) {
        out.files.push_back(file);
        ++kept;
      } else if (named) {
        throw InputError(h5::display_name(file) + ": not text (" + reason + ")",
                         reason == "a Parquet file"
                             ? "a corpus is text or JSON Lines: convert Parquet with pipelines/parquet_to_jsonl.py"
                             : "a corpus is text or JSON Lines (UTF-8); give its text files or their folder");
      } else {
        out.skipped.push_back({file, reason});
      }
    }
    if (!named && kept == 0)
      throw InputError(input + ": directory holds no text file (" +
                       describe_skipped({out.skipped.begin() + static_cast<std::ptrdiff_t>(first_skipped), out.skipped.end()},
                                        files.size()) +
                       ")");
  }
  return out;
}

std::vector<std::string> protected_paths(const std::vector<std::string>& inputs, const CorpusFiles& corpus) {
  std::vector<std::string> paths = inputs;
  paths.insert(paths.end(), corpus.files.begin(), corpus.files.end());
  for (const auto& skipped : corpus.skipped) paths.push_back(skipped.path);
  return paths;
}

std::string describe_skipped(const std::vector<SkippedFile>& skipped, size_t total) {
  if (skipped.empty()) return "";
  std::vector<std::string> reasons;
  for (const auto& file : skipped)
    if (std::find(reasons.begin(), reasons.end(), file.reason) == reasons.end()) reasons.push_back(file.reason);
  std::string text = "skipped " + std::to_string(skipped.size()) + " of " + std::to_string(total) +
                     " files, not text:";
  for (size_t r = 0; r < reasons.size(); ++r) {
    std::vector<std::string> names;
    for (const auto& file : skipped)
      if (file.reason == reasons[r]) names.push_back(file.path);
    text += (r ? "; " : " ") + reasons[r] + " (" + std::to_string(names.size()) + "): ";
    for (size_t i = 0; i < names.size() && i < 3; ++i) text += (i ? ", " : "") + names[i];
    if (names.size() > 3) text += " and " + std::to_string(names.size() - 3) + " more";
  }
  return text;
}

struct CorpusReader::State {
  std::vector<std::string> files;
  CorpusOptions options;
  size_t index = 0;
  std::unique_ptr<InputStream> file;
  std::istream* in = nullptr;
  bool jsonl = false;
  int64_t line_number = 0;
  std::string carry;  // plain text read but not yet handed out
  std::unique_ptr<char[]> buffer;  // block_bytes, allocated once
  int64_t bytes_read = 0, bytes_total = 0;

  bool open_next() {
    file.reset();
    in = nullptr;
    while (index < files.size()) {
      const auto& name = files[index++];
      line_number = 0;
      carry.clear();
      // stdin is read from the copy that resolve_input made (provenance hashed it already, so
      // std::cin itself is exhausted by now).
      const std::string path = h5::resolve_input(name);
      file = std::make_unique<InputStream>(open_input(path));
      in = file.get();
      jsonl = name == "-" ? options.stdin_jsonl : ends_with(name, ".jsonl") || ends_with(name, ".jsonl.txt");
      return true;
    }
    return false;
  }
  std::string current() const { return files[index - 1] == "-" ? "stdin" : files[index - 1]; }
};

CorpusReader::CorpusReader(std::vector<std::string> files, CorpusOptions options) : state_(std::make_unique<State>()) {
  state_->files = std::move(files);
  state_->options = options;
  for (const auto& name : state_->files) {
    std::error_code error;
    const auto size = fs::file_size(h5::resolve_input(name), error);
    if (!error) state_->bytes_total += static_cast<int64_t>(size);
  }
}

CorpusReader::~CorpusReader() = default;

int64_t CorpusReader::bytes_read() const { return state_->bytes_read; }
int64_t CorpusReader::bytes_total() const { return state_->bytes_total; }

bool CorpusReader::next(std::string& piece, bool& last) {
  auto& s = *state_;
  for (;;) {
    if (!s.in && !s.open_next()) return false;
    if (s.jsonl) {
      std::string line;
      while (std::getline(*s.in, line)) {
        ++s.line_number;
        s.bytes_read += static_cast<int64_t>(line.size()) + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        // Nesting limited (lib/base/json.h): "FILE:LINE: not valid JSON (…)" or "… nested deeper than …".
        const nlohmann::json record = parse_json(line, s.current() + ":" + std::to_string(s.line_number));
        const auto field = record.is_object() ? record.find(s.options.text_field) : record.end();
        if (!record.is_object() || field == record.end() || !field->is_string())
          throw InputError(s.current() + ":" + std::to_string(s.line_number) + ": no string field '" +
                               s.options.text_field + "'",
                           "name the field with --text-field");
        piece = field->get<std::string>();
        last = true;
        return true;
      }
      if (s.in->bad()) throw InputError(s.current() + ": read error");
      s.in = nullptr;
      continue;
    }
    // Plain text: the whole file is one document, handed out in blocks cut at safe points.
    if (!s.buffer) s.buffer.reset(new char[static_cast<size_t>(s.options.block_bytes)]);
    s.in->read(s.buffer.get(), static_cast<std::streamsize>(s.options.block_bytes));
    const std::string block(s.buffer.get(), static_cast<size_t>(s.in->gcount()));
    if (s.in->bad()) throw InputError(s.current() + ": read error");
    s.bytes_read += static_cast<int64_t>(block.size());
    std::string text = std::move(s.carry);
    text += block;
    s.carry.clear();
    const bool at_end = s.in->eof() || block.empty();
    if (at_end) {
      s.in = nullptr;
      piece = std::move(text);
      last = true;
      return true;
    }
    const size_t cut = text.empty() ? 0 : safe_cut(text);
    if (cut == 0) {  // no safe point yet: keep reading
      s.carry = std::move(text);
      continue;
    }
    s.carry = text.substr(cut);
    text.resize(cut);
    piece = std::move(text);
    last = false;
    return true;
  }
}

namespace {

/// The corpus in a message: its first three files and how many more.
std::string corpus_names(const std::vector<std::string>& files) {
  std::string names;
  for (size_t i = 0; i < files.size() && i < 3; ++i) names += (i ? ", " : "") + h5::display_name(files[i]);
  if (files.size() > 3) names += " and " + std::to_string(files.size() - 3) + " more";
  return names.empty() ? "the inputs" : names;
}

/// Each piece encoded, spread over `threads` workers; text the tokeniser cannot encode is an
/// InputError naming the corpus.
std::vector<std::vector<int32_t>> encode_pieces(const std::vector<std::string>& pieces, const Tokenizer& tokenizer,
                                                int64_t threads, const std::string& names) {
  std::vector<std::vector<int32_t>> encoded(pieces.size());
  std::vector<std::future<void>> workers;
  for (int64_t worker = 0; worker < threads; ++worker)
    workers.push_back(std::async(std::launch::async, [&, worker] {
      for (size_t i = static_cast<size_t>(worker); i < pieces.size(); i += static_cast<size_t>(threads))
        encoded[i] = tokenizer.encode(pieces[i]);
    }));
  try {
    for (auto& w : workers) w.get();
  } catch (const InputError& error) {
    for (auto& w : workers)
      if (w.valid()) w.wait();
    throw InputError(names + ": " + error.what(), error.hint());
  }
  return encoded;
}

/// The progress line: megabytes read of the total, tokens, rate and time left.
void log_progress(const CorpusReader& reader, const TokenWriter& writer, double elapsed, bool more) {
  const double rate = static_cast<double>(reader.bytes_read()) / std::max(elapsed, 1e-9);
  std::ostringstream line;
  line.precision(1);
  line << std::fixed << "sg-tokenize: " << static_cast<double>(reader.bytes_read()) / 1e6 << " MB";
  if (reader.bytes_total() > 0) line << " of " << static_cast<double>(reader.bytes_total()) / 1e6 << " MB";
  line << ", " << writer.tokens() << " tokens, " << rate / 1e6 << " MB/s";
  if (reader.bytes_total() > 0 && more)
    line << ", eta " << static_cast<int64_t>((reader.bytes_total() - reader.bytes_read()) / std::max(rate, 1.0)) << " s";
  log::info(line.str());
}

}  // namespace

TokenizeSummary tokenize_corpus(const CorpusFiles& corpus, const Tokenizer& tokenizer,
                                const TokenizeOptions& options, const std::function<void(TokenWriter&)>& annotate) {
  const auto& files = corpus.files;
  if (!corpus.skipped.empty())
    log::warn(describe_skipped(corpus.skipped, corpus.files.size() + corpus.skipped.size()));
  CorpusReader reader(files, options.corpus);
  const std::string names = corpus_names(files);
  if (reader.bytes_total() == 0) throw InputError(names + ": the corpus is empty (0 bytes)", "give the text to tokenise");
  int64_t val_tokens = options.val_tokens;
  if (val_tokens < 0) {  // min(5.2M, a tenth of the corpus's tokens, estimated at four bytes a token)
    const int64_t estimate = reader.bytes_total() / 4;
    val_tokens = std::min<int64_t>(5'200'000, estimate / 10);
  }
  TokenWriter writer(options.output, options.force, val_tokens, options.tokenizer_name, tokenizer.vocab_size(),
                     tokenizer.eot_id());
  write_tokenizer_record(writer.root(), TokenizerRecord::of(tokenizer));
  if (annotate) annotate(writer);
  const int64_t threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  TokenizeSummary summary;

  // A batch of pieces (about threads × block_bytes of text) is encoded in parallel, then
  // written in order; a document's pieces are concatenated before it is added.
  std::vector<int32_t> document;
  bool more = true;
  while (more) {
    std::vector<std::string> pieces;
    std::vector<bool> lasts;
    int64_t batch_bytes = 0;
    while (batch_bytes < threads * options.corpus.block_bytes) {
      std::string piece;
      bool last = false;
      if (!reader.next(piece, last)) {
        more = false;
        break;
      }
      batch_bytes += static_cast<int64_t>(piece.size()) + 64;
      pieces.push_back(std::move(piece));
      lasts.push_back(last);
    }
    const auto encoded = encode_pieces(pieces, tokenizer, threads, names);
    for (size_t i = 0; i < pieces.size(); ++i) {
      document.insert(document.end(), encoded[i].begin(), encoded[i].end());
      if (lasts[i]) {
        writer.add_document(document);
        ++summary.documents;
        document.clear();
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_report).count() > 2.0 || !more) {
      last_report = now;
      log_progress(reader, writer, std::chrono::duration<double>(now - start).count(), more);
    }
  }
  summary.tokens = writer.tokens();
  summary.val_tokens = std::min(summary.tokens, val_tokens);
  summary.train_tokens = summary.tokens - summary.val_tokens;
  summary.bytes = reader.bytes_read();
  try {
    writer.commit();
  } catch (const InputError& error) {  // a corpus too small for the validation split: name it
    throw InputError(names + ": " + error.what(), error.hint());
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace sg
