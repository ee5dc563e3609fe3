// token_file.cpp — token files over the HDF5 layer.
#include "lib/text/token_file.h"

#include <algorithm>
#include <cstdlib>

#include "lib/base/error.h"
#include "lib/io/h5.h"

namespace sg {
namespace {

/// Splits kept in memory up to this many tokens (SINKGATE_RESIDENT_TOKENS overrides).
int64_t resident_limit() {
  if (const char* text = std::getenv("SINKGATE_RESIDENT_TOKENS")) return std::atoll(text);
  return int64_t{1} << 31;  // 8 GiB as int32
}

/// Throws InputError naming the file, the split and the position of the first id in [first, last)
/// outside [0, vocab_size); `offset` is first's position in the split.
template <typename It>
void check_ids(It first, It last, int64_t vocab_size, const std::string& path, Split split, int64_t offset) {
  const auto bad = std::find_if(first, last, [vocab_size](auto id) { return id < 0 || id >= vocab_size; });
  if (bad == last) return;
  throw InputError(path + ": token id " + std::to_string(*bad) + " at " + to_string(split) + " position " +
                   std::to_string(offset + (bad - first)) + " is outside [0, vocab_size = " + std::to_string(vocab_size) +
                   ")");
}

TokenFileInfo read_attributes(const h5::File& file, const std::string& path) {
  h5::check_format(file, kTokenFormat, kTokenSchemaVersion);
  TokenFileInfo info;
  info.tokenizer = file.attribute_string("tokenizer");
  info.vocab_size = file.attribute_int("vocab_size");
  info.eot_id = file.attribute_int("eot_id");
  info.documents = file.attribute_int("documents");
  if (file.has_attribute("vocabulary")) info.vocabulary = file.attribute_string("vocabulary");
  info.tokenizer_record = read_tokenizer_record(file, path);
  const auto& identity = info.tokenizer_record.identity;
  if (identity.known() && (identity.vocab_size != info.vocab_size || identity.eot_id != info.eot_id))
    throw InputError(path + ": /tokenizer says " + std::to_string(identity.vocab_size) + " ids and end-of-text " +
                         std::to_string(identity.eot_id) + ", the file's attributes " + std::to_string(info.vocab_size) +
                         " and " + std::to_string(info.eot_id),
                     "the token file is damaged");
  return info;
}

}  // namespace

TokenFileInfo TokenFile::read_info(const std::string& path) {
  const auto file = h5::File::open(path);
  return read_attributes(file, path);
}

std::string to_string(Split split) { return split == Split::val ? "val" : "train"; }

struct TokenFile::State {
  h5::File file;
  h5::Dataset datasets[2];
  std::vector<int32_t> resident[2];  // in-memory copies of the splits up to resident_limit()
  bool is_resident[2] = {false, false};
};

TokenFile TokenFile::open(const std::string& path) {
  TokenFile tokens;
  tokens.path_ = path;
  tokens.state_ = std::make_shared<State>();
  auto& state = *tokens.state_;
  state.file = h5::File::open(path);
  auto& info = tokens.info_;
  info = read_attributes(state.file, path);
  for (Split split : {Split::val, Split::train}) {
    auto& dataset = state.datasets[static_cast<int>(split)];
    dataset = state.file.dataset("tokens/" + to_string(split));
    const auto shape = dataset.shape();
    const std::string where = path + ": tokens/" + to_string(split);
    if (shape.size() != 1) throw InputError(where + " is not one-dimensional");
    const auto dtype = dataset.dtype();
    if (dtype != h5::Dtype::uint16 && dtype != h5::Dtype::int32 && dtype != h5::Dtype::int64 &&
        dtype != h5::Dtype::uint8 && dtype != h5::Dtype::int16)
      throw InputError(where + " holds " + h5::to_string(dtype) + ", not integer token ids (uint16)");
    (split == Split::val ? info.val_tokens : info.train_tokens) = shape[0];
    const std::string attribute = to_string(split) + "_tokens";
    if (state.file.has_attribute(attribute) && state.file.attribute_int(attribute) != shape[0])
      throw InputError(path + ": the attribute " + attribute + " (" + std::to_string(state.file.attribute_int(attribute)) +
                       ") disagrees with tokens/" + to_string(split) + " (" + std::to_string(shape[0]) + " ids)");
    if (shape[0] <= resident_limit()) {
      auto& all = state.resident[static_cast<int>(split)];
      all.resize(static_cast<size_t>(shape[0]));
      dataset.read_array(h5::Dtype::int32, all.data());
      state.is_resident[static_cast<int>(split)] = true;
      check_ids(all.begin(), all.end(), info.vocab_size, path, split, 0);
    }
  }
  return tokens;
}

void TokenFile::read(Split split, int64_t offset, int64_t count, int64_t* out) const {
  if (offset < 0 || count < 0 || offset + count > size(split))
    throw InputError(path_ + ": read of tokens [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                     ") outside the " + to_string(split) + " split of " + std::to_string(size(split)) + " tokens");
  const int index = static_cast<int>(split);
  if (state_->is_resident[index]) {
    std::copy_n(state_->resident[index].begin() + offset, count, out);
    return;
  }
  // A window read from the file: its chunks are checked against the chunk table (lib/io/h5), and
  // its ids against the vocabulary here, as a resident split's are when it is loaded.
  state_->datasets[index].read_slice(offset, count, h5::Dtype::int64, out);
  check_ids(out, out + count, info_.vocab_size, path_, split, offset);
}

std::vector<int64_t> TokenFile::read(Split split, int64_t offset, int64_t count) const {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(count, 0)));
  read(split, offset, count, out.data());
  return out;
}

struct TokenWriter::State {
  std::unique_ptr<h5::Writer> writer;
  h5::Dataset val, train;
  int64_t val_target = 0, val_count = 0, train_count = 0, documents = 0;
  int64_t vocab_size = 0, eot_id = 0;
  std::vector<uint16_t> buffer_val, buffer_train;
  std::string path;

  void push(int32_t id) {
    if (id < 0 || id >= vocab_size)
      throw InputError("token id " + std::to_string(id) + " outside the vocabulary of " + std::to_string(vocab_size));
    if (val_count < val_target) {
      buffer_val.push_back(static_cast<uint16_t>(id));
      ++val_count;
    } else {
      buffer_train.push_back(static_cast<uint16_t>(id));
      ++train_count;
    }
  }
  void flush(bool all) {
    const size_t threshold = all ? 0 : (size_t{1} << 20);
    if (buffer_val.size() > threshold || (all && !buffer_val.empty())) {
      val.append(buffer_val);
      buffer_val.clear();
    }
    if (buffer_train.size() > threshold || (all && !buffer_train.empty())) {
      train.append(buffer_train);
      buffer_train.clear();
    }
  }
};

TokenWriter::TokenWriter(const std::string& path, bool force, int64_t val_tokens, const std::string& tokenizer,
                         int64_t vocab_size, int64_t eot_id)
    : state_(std::make_unique<State>()) {
  if (vocab_size > 65536) throw UsageError("token files store uint16 ids: vocabularies up to 65,536 tokens");
  if (val_tokens < 0) throw UsageError("the validation split cannot be negative");
  state_->path = path;
  state_->writer = std::make_unique<h5::Writer>(path, force);
  auto& root = state_->writer->root();
  h5::set_format(root, kTokenFormat, kTokenSchemaVersion);
  root.set_attribute("tokenizer", tokenizer);
  root.set_attribute("vocab_size", vocab_size);
  root.set_attribute("eot_id", eot_id);
  state_->val = root.create_extendable("tokens/val", h5::Dtype::uint16);
  state_->train = root.create_extendable("tokens/train", h5::Dtype::uint16);
  state_->val_target = val_tokens;
  state_->vocab_size = vocab_size;
  state_->eot_id = eot_id;
}

TokenWriter::~TokenWriter() = default;

void TokenWriter::add_document(const std::vector<int32_t>& tokens) {
  for (int32_t id : tokens) state_->push(id);
  state_->push(static_cast<int32_t>(state_->eot_id));
  ++state_->documents;
  state_->flush(false);
}

int64_t TokenWriter::tokens() const { return state_->val_count + state_->train_count; }

h5::Group& TokenWriter::root() { return state_->writer->root(); }

void TokenWriter::commit() {
  auto& state = *state_;
  if (state.val_count < state.val_target)
    throw InputError("the corpus has " + std::to_string(state.val_count) + " tokens, fewer than the validation split of " +
                         std::to_string(state.val_target),
                     "choose a smaller --val-tokens");
  state.flush(true);
  auto& root = state.writer->root();
  root.set_attribute("documents", state.documents);
  root.set_attribute("val_tokens", state.val_count);
  root.set_attribute("train_tokens", state.train_count);
  state.writer->commit();
}

}  // namespace sg
