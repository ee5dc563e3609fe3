// safetensors.h — reading Hugging Face safetensors files and sharded checkpoint folders.
//
// The format (https://github.com/huggingface/safetensors): 8 bytes, the header length N as an
// unsigned little-endian integer; N bytes of UTF-8 JSON, an object mapping each tensor name to
// {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]} plus an optional "__metadata__"
// object of strings; then the data section, whose tensors are raw little-endian, row-major, at
// [begin, end) relative to the start of the data section. The parser is as strict as the
// reference implementation: every tensor's byte length must equal its element count times its
// dtype's size, the tensors must tile the data section from byte 0 without gaps or overlaps, and
// the file must hold all of it (trailing bytes after the last tensor are tolerated).
//
// A checkpoint folder holds either model.safetensors or shards listed by
// model.safetensors.index.json ({"weight_map": {tensor name: shard file name}}).
//
// Mapping: SafetensorsFile::map gives a tensor's bytes inside a read-only, private memory map of
// the whole file (mapped once, on first use, and unmapped when the last pointer into it goes), so a
// model read this way holds its weights in the page cache, as stored, instead of a copy of them.
//
// Writing: SafetensorsWriter writes one file tensor by tensor (the header first, from the declared
// entries), so that a whole model never needs a second copy in memory.
//
// Not here: what the tensors mean (pretrained.h, export.h).
// Little-endian hosts only (x86-64, AArch64).
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sg {

/// The element types of the format that this reader accepts (lib/model/tensors.h maps them to
/// LibTorch dtypes).
enum class SafetensorsDtype { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

/// "F32" etc. (the format's spelling).
std::string to_string(SafetensorsDtype dtype);
/// Bytes per element.
int64_t element_size(SafetensorsDtype dtype);
/// The floating-point types as config.json's "dtype" (and torch) spell them ("float32", "bfloat16",
/// "float16", "float64"); the others as to_string.
std::string dtype_name(SafetensorsDtype dtype);
/// A tensor shape as "[2, 3]", for messages.
std::string shape_text(const std::vector<int64_t>& shape);

/// One tensor's header entry.
struct SafetensorsEntry {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets within the data section
  int64_t numel() const;
  uint64_t bytes() const { return end - begin; }
};

/// One .safetensors file: the header is parsed and checked on open; tensors are read on demand.
class SafetensorsFile {
 public:
  /// Parses and checks the header. Throws InputError naming the file and the problem: missing
  /// or unreadable file, a file shorter than its header, a header that is not a JSON object of
  /// valid entries, an unknown dtype, a byte length that does not fit the shape and dtype, offsets
  /// outside the file (a truncated file), overlapping or gapped tensors.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  /// Tensor names in the order of their data offsets.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  /// The header entry; InputError naming the file when absent.
  const SafetensorsEntry& entry(const std::string& name) const;
  /// The "__metadata__" strings (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  /// Reads one tensor's raw bytes (entry(name).bytes() of them: little-endian, row-major, of
  /// the entry's dtype) into `out`. Throws InputError when the name is absent or the bytes cannot
  /// be read.
  void read(const std::string& name, void* out) const;

  /// One tensor's raw bytes (as read() gives them) inside a read-only memory map of the file; the
  /// map lives while any returned pointer does. Throws InputError when the name is absent, the
  /// file shrank since its header was read, or it cannot be mapped. Writing through the pointer
  /// is a fault; a file truncated while mapped is a SIGBUS on the next read of the lost pages.
  std::shared_ptr<const char> map(const std::string& name) const;

 private:
  std::string path_;
  uint64_t data_start_ = 0;  // 8 + header length
  mutable std::shared_ptr<const char> mapping_;  // the whole file, mapped on the first map()
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

/// The tensors of a checkpoint folder: model.safetensors, or the shards that
/// model.safetensors.index.json lists (the index is preferred when both exist).
class SafetensorsFolder {
 public:
  /// Opens every file (headers are checked as in SafetensorsFile::open). Throws InputError
  /// naming the folder when it has neither form, the index is malformed or names a missing
  /// shard, a shard lacks a tensor the index assigns to it, or two files hold the same name.
  static SafetensorsFolder open(const std::string& folder);

  const std::string& folder() const { return folder_; }
  /// Every tensor name, sorted.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return where_.count(name) > 0; }
  /// The header entry and the file that holds it; InputError naming the folder when absent.
  const SafetensorsEntry& entry(const std::string& name) const;
  const SafetensorsFile& file_of(const std::string& name) const;
  /// As SafetensorsFile::read, from the file that holds the tensor.
  void read(const std::string& name, void* out) const;
  /// As SafetensorsFile::map, from the file that holds the tensor.
  std::shared_ptr<const char> map(const std::string& name) const { return file_of(name).map(name); }
  /// The paths of the files read (for provenance).
  std::vector<std::string> paths() const;

 private:
  std::string folder_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t> where_;  // tensor name -> index into files_
};

/// Writes one safetensors file: the header from the declared tensors (in order, each at the next
/// offset, no gaps; the header padded with spaces to a multiple of 8 bytes, as the reference
/// implementation does), then each tensor's bytes, in the declared order.
class SafetensorsWriter {
 public:
  /// Declares the tensors (name, dtype, shape: begin and end are computed) and the "__metadata__"
  /// strings, opens `path` (created or truncated) and writes the header. Throws UsageError for a
  /// repeated or empty name, OutputError when the file cannot be written.
  SafetensorsWriter(const std::string& path, std::vector<SafetensorsEntry> entries,
                    const std::map<std::string, std::string>& metadata);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  /// Writes the next declared tensor's bytes (little-endian, row-major); `name` and `bytes` must
  /// be the next entry's (UsageError otherwise). Throws OutputError on a failed write.
  void write(const std::string& name, const void* data, uint64_t bytes);
  /// Checks that every declared tensor was written, flushes and closes the file. Throws
  /// UsageError (a tensor missing) or OutputError.
  void finish();

 private:
  std::string path_;
  std::vector<SafetensorsEntry> entries_;
  size_t next_ = 0;
  std::FILE* file_ = nullptr;
};

}  // namespace sg
