// sg-tokenize — turn a text corpus into a token file with GPT-2's byte-level BPE.
//
// Inputs: text files (one document each), JSON Lines files (*.jsonl, one document per line in
// the "text" field), directories (every text file, recursively, in name order, links to files and
// folders followed; files that are not text — HDF5, Parquet, archives, NUL bytes, invalid UTF-8 —
// are skipped and named on stderr) and "-" for stdin. A named file that is not text is refused (exit 3).
// Documents are joined with <|endoftext|>. Output: a token file (lib/SCHEMA.md "Token file")
// with the validation split taken first and the training split after it. Memory stays bounded
// whatever the corpus size; all cores encode; progress (MB, tokens, MB/s, ETA) on stderr.
//
// Examples:
//   sg-tokenize /usr/share/doc/python3.11/html/_sources -o data/pydoc.h5
//   sg-tokenize fineweb/*.jsonl --val-tokens 5200000 -o data/fineweb.h5
//   cat notes.txt | sg-tokenize - --val-tokens 1000 -o notes.h5
#include <iomanip>
#include <sstream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/text/corpus.h"
#include "lib/text/token_file.h"
#include "lib/text/tokenizer.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::vector<std::string> inputs;
  std::string vocab;
  int64_t val_tokens = -1;
  std::string text_field = "text";
  bool jsonl = false;
};

void run(const Options& options, const std::string& command_line) {
  if (options.common.output.empty()) throw sg::UsageError("no output token file", "give -o FILE.h5");
  const std::string vocab = options.vocab.empty() ? sg::default_vocabulary_path() : options.vocab;
  // The corpus, listed once (a named file that is not text is refused here, before any work); its
  // folders protect every file in them, read or skipped, and the vocabulary's files (a vocab.json's
  // merges.txt too) are inputs like the corpus.
  const auto corpus = sg::list_corpus_files(options.inputs);
  const auto& files = corpus.files;
  auto protected_inputs = sg::protected_paths(options.inputs, corpus);
  for (const auto& file : sg::vocabulary_files(vocab)) protected_inputs.push_back(file);
  sg::h5::check_writable(options.common.output, options.common.force, protected_inputs);
  const auto tokenizer = sg::Tokenizer::load(vocab);
  if (tokenizer.vocab_size() > 65536)
    throw sg::InputError(vocab + ": " + std::to_string(tokenizer.vocab_size()) +
                         " token ids, but token files store uint16 ids (vocabularies up to 65,536 tokens)");
  sg::TokenizeOptions tokenize;
  tokenize.output = options.common.output;
  tokenize.force = options.common.force;
  tokenize.val_tokens = options.val_tokens;
  tokenize.threads = options.common.threads;
  tokenize.tokenizer_name = tokenizer.identity().kind == "gpt2" ? "gpt2" : vocab;
  tokenize.corpus.text_field = options.text_field;
  tokenize.corpus.stdin_jsonl = options.jsonl;
  auto inputs = files;  // the vocabulary's files are hashed one by one (a folder is no file to hash)
  for (const auto& file : sg::vocabulary_files(vocab)) inputs.push_back(file);
  const auto provenance = sg::make_provenance("sg-tokenize", command_line, inputs,
                                              "val_tokens=" + std::to_string(options.val_tokens));
  const auto summary = sg::tokenize_corpus(corpus, tokenizer, tokenize, [&](sg::TokenWriter& writer) {
    sg::write_provenance(writer.root(), provenance);
    writer.root().set_attribute("vocabulary", vocab);
  });
  std::ostringstream line;
  line << std::fixed << std::setprecision(1) << "sg-tokenize: " << summary.documents << " documents, "
       << summary.tokens << " tokens (val " << summary.val_tokens << ", train " << summary.train_tokens << ") from "
       << static_cast<double>(summary.bytes) / 1e6 << " MB in " << summary.seconds << " s -> " << options.common.output;
  sg::log::info(line.str());
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-tokenize", "Tokenise text, JSON Lines or directories into a token file (GPT-2 BPE).");
  parser.option("inputs", options.inputs,
                "text files, .jsonl files, directories (their files that are not text skipped), or - for stdin",
                /*required=*/true);
  parser.option("--vocab", options.vocab,
                "vocabulary: gpt2.tiktoken, vocab.json (+ merges.txt) or tokenizer.json (default: $SINKGATE_VOCAB "
                "or the one setup.sh fetched)");
  parser.option("--val-tokens", options.val_tokens,
                "tokens of the validation split, taken first (-1: min(5.2M, a tenth of the corpus))");
  parser.option("--text-field", options.text_field, "JSON Lines field holding the document");
  parser.flag("--jsonl", options.jsonl, "read stdin as JSON Lines");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kThreads | sg::cli::kLogLevel);
  return sg::cli::run_tool(parser, argc, argv, [&] { run(options, parser.command_line()); });
}
