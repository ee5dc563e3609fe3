// safetensors.cpp — the safetensors header parser, tensor reader and writer (format in safetensors.h).
#include "lib/io/safetensors.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <limits>
#include <nlohmann/json.hpp>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/base/json.h"

namespace sg {
namespace {

using json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; so does this one.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

const std::vector<std::pair<std::string, SafetensorsDtype>>& dtype_names() {
  static const std::vector<std::pair<std::string, SafetensorsDtype>> names = {
      {"F64", SafetensorsDtype::F64}, {"F32", SafetensorsDtype::F32}, {"F16", SafetensorsDtype::F16},
      {"BF16", SafetensorsDtype::BF16}, {"I64", SafetensorsDtype::I64}, {"I32", SafetensorsDtype::I32},
      {"I16", SafetensorsDtype::I16}, {"I8", SafetensorsDtype::I8}, {"U8", SafetensorsDtype::U8},
      {"BOOL", SafetensorsDtype::BOOL}};
  return names;
}

InputError malformed(const std::string& path, const std::string& problem) {
  return InputError(path + ": not a valid safetensors file: " + problem,
                    "re-download the file, or re-save it with safetensors / transformers' save_pretrained");
}

/// A non-negative JSON integer, or the InputError `what`.
uint64_t unsigned_value(const json& value, const std::string& path, const std::string& what) {
  if (!value.is_number_unsigned()) {
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<uint64_t>();
    throw malformed(path, what + " must be a non-negative integer, not " + json_excerpt(value));
  }
  return value.get<uint64_t>();
}

SafetensorsEntry parse_entry(const std::string& name, const json& value, const std::string& path) {
  const std::string where = "tensor '" + name + "'";
  if (!value.is_object()) throw malformed(path, where + " is not a JSON object");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field)) throw malformed(path, where + " lacks \"" + field + "\"");
  SafetensorsEntry entry;
  entry.name = name;
  const auto& dtype = value["dtype"];
  if (!dtype.is_string()) throw malformed(path, where + ": dtype must be a string");
  const auto text = dtype.get<std::string>();
  const auto& names = dtype_names();
  const auto found = std::find_if(names.begin(), names.end(), [&](const auto& p) { return p.first == text; });
  if (found == names.end())
    throw InputError(path + ": " + where + " has dtype " + text + ", which this reader does not support",
                     "supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL");
  entry.dtype = found->second;
  const auto& shape = value["shape"];
  if (!shape.is_array()) throw malformed(path, where + ": shape must be an array");
  uint64_t count = 1;
  for (const auto& extent : shape) {
    const uint64_t e = unsigned_value(extent, path, where + ": a shape entry");
    if (e > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (e != 0 && count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / e))
      throw malformed(path, where + ": shape " + json_excerpt(shape) + " is too large");
    count *= e;
    entry.shape.push_back(static_cast<int64_t>(e));
  }
  const auto& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) throw malformed(path, where + ": data_offsets must be [begin, end]");
  entry.begin = unsigned_value(offsets[0], path, where + ": data_offsets");
  entry.end = unsigned_value(offsets[1], path, where + ": data_offsets");
  if (entry.end < entry.begin) throw malformed(path, where + ": data_offsets " + json_excerpt(offsets) + " end before they begin");
  const uint64_t size = static_cast<uint64_t>(element_size(entry.dtype));
  if (count > std::numeric_limits<uint64_t>::max() / size || entry.end - entry.begin != count * size)
    throw malformed(path, where + ": data_offsets " + json_excerpt(offsets) + " span " + std::to_string(entry.end - entry.begin) +
                              " bytes, but shape " + json_excerpt(shape) + " of " + text + " needs " +
                              std::to_string(count * size));
  return entry;
}

}  // namespace

std::string to_string(SafetensorsDtype dtype) {
  for (const auto& [name, value] : dtype_names())
    if (value == dtype) return name;
  return "?";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string dtype_name(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::F32: return "float32";
    case SafetensorsDtype::F16: return "float16";
    case SafetensorsDtype::BF16: return "bfloat16";
    case SafetensorsDtype::F64: return "float64";
    default: return to_string(dtype);
  }
}

int64_t element_size(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::F64: case SafetensorsDtype::I64: return 8;
    case SafetensorsDtype::F32: case SafetensorsDtype::I32: return 4;
    case SafetensorsDtype::F16: case SafetensorsDtype::BF16: case SafetensorsDtype::I16: return 2;
    case SafetensorsDtype::I8: case SafetensorsDtype::U8: case SafetensorsDtype::BOOL: return 1;
  }
  return 1;
}

int64_t SafetensorsEntry::numel() const {
  int64_t n = 1;
  for (auto e : shape) n *= e;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  // The size is that of the opened file (a FIFO, a device or a folder is refused by name there).
  auto in = open_input(path);
  const uint64_t size = in.size();
  if (size < 8) throw malformed(path, "only " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  unsigned char length_bytes[8];
  in.read_at(0, reinterpret_cast<char*>(length_bytes), 8, "the header length");
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | length_bytes[i];
  if (header_length > kMaxHeaderBytes)
    throw malformed(path, "header length " + std::to_string(header_length) + " exceeds the format's limit of 100 MB");
  if (header_length > size - 8)
    throw malformed(path, "header length " + std::to_string(header_length) + " exceeds the " + std::to_string(size - 8) +
                              " bytes after it (truncated file?)");
  std::string text(header_length, '\0');
  in.read_at(8, text.data(), header_length, "the header");

  SafetensorsFile file;
  file.path_ = path;
  file.data_start_ = 8 + header_length;
  json header;
  try {
    header = parse_json(text, "the header");
  } catch (const InputError& e) {
    throw malformed(path, e.what());
  }
  if (!header.is_object()) throw malformed(path, "the header is not a JSON object");
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) throw malformed(path, "__metadata__ is not an object");
      for (const auto& [key, item] : value.items()) {
        if (!item.is_string()) throw malformed(path, "__metadata__ value of '" + key + "' is not a string");
        file.metadata_[key] = item.get<std::string>();
      }
      continue;
    }
    file.entries_[name] = parse_entry(name, value, path);
  }

  // The tensors must lie inside the data section and tile it from byte 0 without gaps or overlaps.
  const uint64_t data_size = size - file.data_start_;
  std::vector<const SafetensorsEntry*> order;
  for (const auto& [name, entry] : file.entries_) order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (const auto* entry : order)
    if (entry->end > data_size)
      throw InputError(path + ": tensor '" + entry->name + "' occupies bytes [" + std::to_string(entry->begin) + ", " +
                           std::to_string(entry->end) + ") of the data section, but the file holds only " +
                           std::to_string(data_size) + " data bytes: offsets outside the file (truncated download?)",
                       "re-download the file");
  uint64_t expected = 0;
  for (const auto* entry : order) {
    if (entry->begin != expected)
      throw malformed(path, "tensor '" + entry->name + "' starts at data byte " + std::to_string(entry->begin) +
                                (entry->begin < expected ? ", overlapping the tensor before it" : ", leaving a gap") +
                                " (expected " + std::to_string(expected) + ")");
    expected = entry->end;
  }
  if (expected != data_size)
    throw malformed(path, std::to_string(data_size - expected) + " bytes after the last tensor (the tensors end at data byte " +
                              std::to_string(expected) + " of " + std::to_string(data_size) + ")");
  return file;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<const SafetensorsEntry*> order;
  for (const auto& [name, entry] : entries_) order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  std::vector<std::string> names;
  for (const auto* entry : order) names.push_back(entry->name);
  return names;
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  const auto found = entries_.find(name);
  if (found == entries_.end()) throw InputError(path_ + ": has no tensor '" + name + "'");
  return found->second;
}

void SafetensorsFile::read(const std::string& name, void* out) const {
  const auto& e = entry(name);
  const uint64_t bytes = e.bytes();
  if (bytes == 0) return;
  const auto in = open_input(path_);
  if (in.size() < data_start_ + e.end)
    throw InputError(path_ + ": cannot read the " + std::to_string(bytes) + " bytes of tensor '" + name +
                         "': the file shrank to " + std::to_string(in.size()) + " bytes since its header was read",
                     "the file changed or is truncated; re-download it");
  in.read_at(data_start_ + e.begin, static_cast<char*>(out), bytes, "tensor '" + name + "'");
}

std::shared_ptr<const char> SafetensorsFile::map(const std::string& name) const {
  const auto& e = entry(name);
  if (!mapping_) {
    const auto in = open_input(path_);
    const uint64_t size = in.size();
    if (size < data_start_ + e.end)
      throw InputError(path_ + ": cannot map tensor '" + name + "': the file shrank to " + std::to_string(size) +
                           " bytes since its header was read",
                       "the file changed or is truncated; re-download it");
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, in.descriptor(), 0);
    if (address == MAP_FAILED)
      throw InputError(path_ + ": cannot be memory-mapped (" + std::strerror(errno) + ")",
                       "is it on a file system that supports mmap? is the address space limited (ulimit -v)?");
    const auto length = static_cast<size_t>(size);
    mapping_ = std::shared_ptr<const char>(static_cast<const char*>(address),
                                           [length](const char* p) { ::munmap(const_cast<char*>(p), length); });
  }
  // The aliasing constructor: a pointer to the tensor that keeps the whole map alive.
  return std::shared_ptr<const char>(mapping_, mapping_.get() + data_start_ + e.begin);
}

SafetensorsFolder SafetensorsFolder::open(const std::string& folder) {
  struct stat info {};
  if (stat(folder.c_str(), &info) != 0) throw InputError(folder + ": no such folder");
  if (!S_ISDIR(info.st_mode)) throw InputError(folder + ": not a folder (a checkpoint folder holds config.json and model.safetensors)");
  SafetensorsFolder result;
  result.folder_ = folder;
  const std::string index_path = folder + "/model.safetensors.index.json";
  const std::string single_path = folder + "/model.safetensors";
  if (lstat(index_path.c_str(), &info) == 0) {
    const json index = read_json_file(index_path, /*max_bytes=*/std::size_t{64} << 20);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      throw InputError(index_path + ": lacks the \"weight_map\" object of tensor name -> shard file");
    std::map<std::string, size_t> shard_of_file;
    std::map<std::string, std::string> assigned;
    for (const auto& [name, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) throw InputError(index_path + ": the shard of '" + name + "' is not a file name");
      const auto file_name = shard.get<std::string>();
      if (file_name.find('/') != std::string::npos || file_name.empty() || file_name == "..")
        throw InputError(index_path + ": shard name '" + file_name + "' is not a plain file name");
      if (!shard_of_file.count(file_name)) {
        shard_of_file[file_name] = result.files_.size();
        result.files_.push_back(SafetensorsFile::open(folder + "/" + file_name));
      }
      assigned[name] = file_name;
    }
    for (const auto& [name, file_name] : assigned) {
      const size_t i = shard_of_file[file_name];
      if (!result.files_[i].contains(name))
        throw InputError(index_path + ": assigns tensor '" + name + "' to " + file_name + ", which does not hold it",
                         "the download is incomplete or mixes two revisions; re-download the folder");
      result.where_[name] = i;
    }
    // Tensors a shard holds beyond the index (e.g. buffers) are readable too, unless ambiguous.
    for (size_t i = 0; i < result.files_.size(); ++i)
      for (const auto& name : result.files_[i].names()) {
        const auto found = result.where_.find(name);
        if (found == result.where_.end()) result.where_[name] = i;
        else if (found->second != i && !assigned.count(name))
          throw InputError(folder + ": tensor '" + name + "' is in both " + result.files_[found->second].path() +
                           " and " + result.files_[i].path());
      }
    return result;
  }
  if (lstat(single_path.c_str(), &info) == 0) {
    result.files_.push_back(SafetensorsFile::open(single_path));
    for (const auto& name : result.files_[0].names()) result.where_[name] = 0;
    return result;
  }
  throw InputError(folder + ": holds neither model.safetensors nor model.safetensors.index.json",
                   "download the safetensors weights (docs/data.md shows how), or convert "
                   "pytorch_model.bin with transformers' save_pretrained(safe_serialization=True)");
}

std::vector<std::string> SafetensorsFolder::names() const {
  std::vector<std::string> names;
  for (const auto& [name, i] : where_) names.push_back(name);
  return names;
}

const SafetensorsFile& SafetensorsFolder::file_of(const std::string& name) const {
  const auto found = where_.find(name);
  if (found == where_.end()) throw InputError(folder_ + ": the checkpoint has no tensor '" + name + "'");
  return files_[found->second];
}

const SafetensorsEntry& SafetensorsFolder::entry(const std::string& name) const { return file_of(name).entry(name); }

void SafetensorsFolder::read(const std::string& name, void* out) const { file_of(name).read(name, out); }

std::vector<std::string> SafetensorsFolder::paths() const {
  std::vector<std::string> paths;
  for (const auto& f : files_) paths.push_back(f.path());
  return paths;
}

SafetensorsWriter::SafetensorsWriter(const std::string& path, std::vector<SafetensorsEntry> entries,
                                     const std::map<std::string, std::string>& metadata)
    : path_(path), entries_(std::move(entries)) {
  // An ordered JSON object keeps the declared order in the header (the data order is the offsets').
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (auto& entry : entries_) {
    if (entry.name.empty() || entry.name == "__metadata__" || !seen.insert(entry.name).second)
      throw UsageError("safetensors: tensor name '" + entry.name + "' is empty, reserved or repeated");
    entry.begin = offset;
    entry.end = offset + static_cast<uint64_t>(entry.numel()) * static_cast<uint64_t>(element_size(entry.dtype));
    offset = entry.end;
    header[entry.name] = {{"dtype", to_string(entry.dtype)}, {"shape", entry.shape}, {"data_offsets", {entry.begin, entry.end}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  file_ = std::fopen(path.c_str(), "wb");  // opens: the file it writes
  if (!file_) throw OutputError(path + ": cannot be written: " + std::strerror(errno));
  const uint64_t length = text.size();
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(length >> (8 * i));
  if (std::fwrite(prefix, 1, 8, file_) != 8 || std::fwrite(text.data(), 1, text.size(), file_) != text.size())
    throw OutputError(path + ": cannot be written: " + std::strerror(errno));
}

SafetensorsWriter::~SafetensorsWriter() {
  if (file_) std::fclose(file_);
}

void SafetensorsWriter::write(const std::string& name, const void* data, uint64_t bytes) {
  if (next_ >= entries_.size() || entries_[next_].name != name)
    throw UsageError("safetensors: '" + name + "' is not the next declared tensor of " + path_);
  if (entries_[next_].bytes() != bytes)
    throw UsageError("safetensors: '" + name + "' has " + std::to_string(bytes) + " bytes, declared " +
                     std::to_string(entries_[next_].bytes()));
  if (bytes > 0 && std::fwrite(data, 1, bytes, file_) != bytes)
    throw OutputError(path_ + ": cannot be written: " + std::strerror(errno), "is the disk full?");
  ++next_;
}

void SafetensorsWriter::finish() {
  if (next_ != entries_.size())
    throw UsageError("safetensors: " + path_ + ": tensor '" + entries_[next_].name + "' was declared but not written");
  const bool flushed = std::fflush(file_) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) throw OutputError(path_ + ": cannot be written: " + std::strerror(errno), "is the disk full?");
}

}  // namespace sg
