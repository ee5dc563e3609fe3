// tokenizer_record.cpp — the /tokenizer group of token and run files over the HDF5 layer.
#include "lib/text/tokenizer_record.h"

#include "lib/base/error.h"
#include "lib/io/provenance.h"

namespace sg {
namespace {

const char* const kKinds[] = {"gpt2", "tiktoken", "tokenizer.json", "vocab.json+merges.txt"};

// The files each kind embeds, in order.
std::vector<std::string> files_of(const std::string& kind) {
  if (kind == "tokenizer.json") return {"tokenizer.json"};
  if (kind == "vocab.json+merges.txt") return {"vocab.json", "merges.txt"};
  if (kind == "tiktoken") return {"vocabulary.tiktoken"};
  return {};
}

}  // namespace

TokenizerRecord TokenizerRecord::of(const Tokenizer& tokenizer) {
  TokenizerRecord record;
  record.identity = tokenizer.identity();
  record.source = tokenizer.path();
  if (record.identity.kind != "gpt2") record.files = tokenizer.files();
  return record;
}

void write_tokenizer_record(h5::Group& root, const TokenizerRecord& record) {
  auto group = root.create_group("tokenizer");
  group.set_attribute("kind", record.identity.kind);
  group.set_attribute("sha256", record.identity.sha256);
  group.set_attribute("vocab_size", record.identity.vocab_size);
  group.set_attribute("eot_id", record.identity.eot_id);
  group.set_attribute("source", record.source);
  std::vector<std::string> names;
  for (const auto& file : record.files) {
    names.push_back(file.name);
    group.write_array("files/" + file.name, h5::Dtype::uint8, {static_cast<int64_t>(file.bytes.size())},
                      file.bytes.data());
  }
  if (!names.empty()) group.set_attribute("files", names);  // absent for GPT-2's: no files
}

TokenizerRecord read_tokenizer_record(const h5::Group& root, const std::string& file) {
  TokenizerRecord record;
  if (!root.exists("tokenizer")) return record;
  const auto group = root.group("tokenizer");
  const std::string where = file + ": /tokenizer";
  auto& identity = record.identity;
  identity.kind = group.attribute_string("kind");
  identity.sha256 = group.attribute_string("sha256");
  identity.vocab_size = group.attribute_int("vocab_size");
  identity.eot_id = group.attribute_int("eot_id");
  if (group.has_attribute("source")) record.source = group.attribute_string("source");
  bool kind_known = false;
  for (const char* kind : kKinds) kind_known = kind_known || identity.kind == kind;
  if (!kind_known)
    throw InputError(where + " names the tokenizer kind '" + identity.kind +
                         "', not gpt2, tiktoken, tokenizer.json or vocab.json+merges.txt",
                     "the file is damaged, or was written by a newer sinkgate");
  if (identity.vocab_size <= 0 || identity.eot_id < 0 || identity.eot_id >= identity.vocab_size)
    throw InputError(where + ": vocab_size " + std::to_string(identity.vocab_size) + " and eot_id " +
                         std::to_string(identity.eot_id) + " are inconsistent",
                     "the file is damaged");
  const auto names = group.has_attribute("files") ? group.attribute_strings("files") : std::vector<std::string>{};
  if (names != files_of(identity.kind))
    throw InputError(where + ": a " + identity.kind + " vocabulary embeds " +
                         (files_of(identity.kind).empty() ? std::string("no files") : "the files named in lib/SCHEMA.md") +
                         ", not those the attribute 'files' names",
                     "the file is damaged");
  int64_t total = 0;
  std::string all;
  for (const auto& name : names) {
    const auto dataset = group.dataset("files/" + name);
    const auto shape = dataset.shape();
    if (shape.size() != 1 || dataset.dtype() != h5::Dtype::uint8)
      throw InputError(where + "/files/" + name + " is not a 1-D uint8 dataset", "the file is damaged");
    total += shape[0];
    if (total > kMaxEmbeddedVocabularyBytes)
      throw InputError(where + "/files holds more than " + std::to_string(kMaxEmbeddedVocabularyBytes >> 20) +
                           " MiB, the largest vocabulary sinkgate reads",
                       "the file is damaged");
    VocabularyFile embedded{name, std::string(static_cast<size_t>(shape[0]), '\0')};
    if (shape[0] > 0) dataset.read_array(h5::Dtype::uint8, embedded.bytes.data());
    all += embedded.bytes;
    record.files.push_back(std::move(embedded));
  }
  if (!names.empty() && sha256_bytes(all) != identity.sha256)
    throw InputError(where + ": the embedded vocabulary does not hash to its sha256 " + identity.sha256,
                     "the file is damaged");
  return record;
}

void check_same_vocabulary(const TokenizerRecord& record, const std::string& file, const Tokenizer& tokenizer) {
  if (!record.known() || record.identity.same_vocabulary(tokenizer.identity())) return;
  throw InputError("the vocabulary " + tokenizer.path() + " (" + tokenizer.identity().kind + ", sha256 " +
                       tokenizer.identity().sha256 + ") is not the one " + file + " records (" +
                       record.identity.kind + " from " + (record.source.empty() ? "?" : record.source) +
                       ", sha256 " + record.identity.sha256 + ")",
                   "leave out --vocab: the file's own vocabulary decodes its ids");
}

Tokenizer tokenizer_for(const TokenizerRecord& record, const std::string& file, const std::string& given) {
  if (!given.empty()) {
    auto tokenizer = Tokenizer::load(given);
    check_same_vocabulary(record, file, tokenizer);
    return tokenizer;
  }
  if (!record.known()) return Tokenizer::load(default_vocabulary_path());
  if (!record.files.empty()) {
    auto tokenizer = Tokenizer::load_files(record.files, file + ":/tokenizer");
    check_same_vocabulary(record, file, tokenizer);
    return tokenizer;
  }
  auto tokenizer = Tokenizer::load(default_vocabulary_path());
  if (tokenizer.identity().kind != "gpt2")
    throw InputError(file + " was made with GPT-2's vocabulary, but the default vocabulary " + tokenizer.path() +
                         " is not GPT-2's (" + tokenizer.identity().describe() + ")",
                     "unset SINKGATE_VOCAB, or give GPT-2's vocabulary with --vocab");
  return tokenizer;
}

}  // namespace sg
