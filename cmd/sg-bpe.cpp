// sg-bpe — GPT-2 byte-level BPE on text files: token ids, token counts, or text back from ids.
//
// Encodes each input (a text file, or '-' for stdin) and prints its ids on one line, separated by
// spaces (the ids of tiktoken's "gpt2" encode_ordinary). --count prints only the number of tokens
// of each input, and the throughput on stderr. --decode reads ids (separated by white space) and
// writes the text they stand for. --threads N cuts each input only where the pre-tokeniser always
// cuts and encodes the parts on N threads (0: all cores); the ids are the same for every N.
// The vocabulary (--vocab) is a tiktoken rank file, a tokenizer.json, or a vocab.json with
// merges.txt beside it; by default $SINKGATE_VOCAB, else gpt2.tiktoken in the setup cache.
//
// Examples:
//   printf 'Hello world' | sg-bpe -            # 15496 995
//   sg-bpe --count --threads 1 corpus.txt
//   sg-bpe notes.txt | sg-bpe --decode - > roundtrip.txt
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/base/log.h"
#include "lib/base/paths.h"
#include "lib/text/tokenizer.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::vector<std::string> inputs = {"-"};
  std::string vocab = sg::default_vocabulary_path();
  bool count = false;
  bool decode = false;
};

/// An input opened as every input is (lib/base/input_file.h): a regular file, or a pipe read once.
sg::InputHandle open_text(const std::string& path) {
  try {
    return sg::open_input(path, sg::Fifo::read_once);
  } catch (const sg::InputError& error) {
    throw sg::InputError("cannot open input '" + path + "': " + sg::input_reason(error.what(), path));
  }
}

std::string read_input(const std::string& path, sg::InputHandle* file) {
  if (path == "-") {
    std::ostringstream content;
    content << std::cin.rdbuf();
    return content.str();
  }
  return file->read_all(uint64_t{4} << 30, "input");
}

std::vector<int32_t> parse_ids(const std::string& text, const std::string& path) {
  std::vector<int32_t> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (true) {
    while (p < end && std::isspace(static_cast<unsigned char>(*p))) ++p;
    if (p == end) return ids;
    const char* word = p;
    while (p < end && !std::isspace(static_cast<unsigned char>(*p))) ++p;
    int32_t id = 0;
    const auto [stop, error] = std::from_chars(word, p, id);
    if (error != std::errc() || stop != p)
      throw sg::InputError(path + ": '" + std::string(word, p) + "' is not a token id",
                           "--decode reads ids separated by white space");
    ids.push_back(id);
  }
}

void write_ids(const std::vector<int32_t>& ids) {
  std::string line;
  line.reserve(ids.size() * 6 + 1);
  char buffer[16];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, ids[i]).ptr);
  }
  line += '\n';
  std::cout.write(line.data(), static_cast<std::streamsize>(line.size()));
}

void run(const Options& options) {
  if (options.count && options.decode) throw sg::UsageError("--count and --decode exclude each other");
  // Every input opened before any output (a missing one fails first), and read from that handle.
  std::vector<std::unique_ptr<sg::InputHandle>> files;
  for (const auto& path : options.inputs) {
    std::error_code error;
    if (path != "-" && std::filesystem::is_directory(path, error))
      throw sg::InputError("input '" + path + "' is a directory, expected a text file");
    files.push_back(path == "-" ? nullptr : std::make_unique<sg::InputHandle>(open_text(path)));
  }
  const auto tokenizer = sg::Tokenizer::load(options.vocab);
  for (size_t i = 0; i < options.inputs.size(); ++i) {
    const auto& path = options.inputs[i];
    const std::string text = read_input(path, files[i].get());
    if (options.decode) {
      const std::string decoded = tokenizer.decode(parse_ids(text, path));
      std::cout.write(decoded.data(), static_cast<std::streamsize>(decoded.size()));
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tokenizer.encode_parallel(text, options.common.threads);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!options.count) {
      write_ids(ids);
      continue;
    }
    std::cout << ids.size() << "\n";
    std::ostringstream report;
    report << "sg-bpe: " << path << ": " << ids.size() << " tokens from " << text.size() << " bytes in " << seconds
           << " s (" << text.size() / 1e6 / std::max(seconds, 1e-9) << " MB/s)";
    sg::log::info(report.str());
  }
  std::cout.flush();
  if (!std::cout) throw sg::OutputError(sg::stdout_failure_message(errno));
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-bpe", "GPT-2 byte-level BPE: text files to token ids (or counts), and ids back to text.");
  parser.common(options.common, sg::cli::kThreads | sg::cli::kLogLevel);
  parser.option("inputs", options.inputs, "text files ('-' for stdin); with --decode, files of ids");
  parser.option("--vocab", options.vocab, "gpt2.tiktoken rank file, tokenizer.json, or vocab.json (+ merges.txt)");
  parser.flag("--count", options.count, "print only the number of tokens of each input (throughput on stderr)");
  parser.flag("--decode", options.decode, "read token ids and write the text");
  return sg::cli::run_tool(parser, argc, argv, [&] { run(options); });
}
