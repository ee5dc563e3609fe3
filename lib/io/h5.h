// h5.h — RAII over the HDF5 C API: files, groups, attributes, datasets, atomic writes.
//
// HDF5's headers stay behind this interface: only the h5 modules of io/ (h5, h5_api, h5_structure)
// include them, which tests/layers.cmake checks. Every HDF5 failure becomes
// an sg exception naming the file: InputError when reading, OutputError when writing. HDF5's own
// error printing is silenced. Numbers cross this interface as plain vectors or as raw arrays of
// a Dtype; no LibTorch here (lib/model/tensors.h carries tensors across it).
//
// Storage conventions (lib/SCHEMA.md, "General conventions"): little-endian IEEE floats and
// two's-complement integers; bfloat16 is stored as uint16 with the attribute sg_dtype="bfloat16";
// bool as uint8 with sg_dtype="bool"; strings as fixed-length UTF-8 (variable-length ones are read
// too); the HDF5 1.10 format (checksummed metadata) and Fletcher32 on every chunked dataset, so
// that a damaged file is an InputError, never a crash or wrong data. Every sinkgate file has the
// root attributes `format` and `schema_version` (set_format / check_format).
//
// Not here: what a particular file kind contains (results.h, checkpoint, token files).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sg::h5 {

/// Element types a dataset can hold (the stored type; bfloat16 and boolean per the convention above).
enum class Dtype { float32, float64, bfloat16, int8, int16, int32, int64, uint8, uint16, boolean, string };

/// The name of a Dtype ("float32", …, "bool", "string").
std::string to_string(Dtype dtype);

/// Throws OutputError unless `path` can be created: it exists and force is false, it is a
/// directory, or its directory is missing or not writable. "-" (stdout) fails when stdout is a
/// terminal (a binary file would garble it). Also when `path` is (the same file as) one of
/// `inputs`: writing it would destroy an input (--force or not). Call it before any expensive work.
void check_writable(const std::string& path, bool force, const std::vector<std::string>& inputs = {});

/// The path a reader should open for `path`: itself, or for "-" a temporary copy of stdin, and for
/// a pipe (a FIFO, process substitution's /dev/fd/N) a temporary copy of it, made on the first
/// call and removed at exit (so that the input can be read, and hashed, more than once and gives
/// the same bytes each time). Throws InputError when stdin is a terminal, cannot be read or is
/// empty (an upstream failure), or when `path` is a device (/dev/zero never ends).
std::string resolve_input(const std::string& path);

/// The name of `path` in messages: "stdin" for "-", else the path.
std::string display_name(const std::string& path);

/// True if `path` ("-" allowed) is an HDF5 file. Throws InputError if it does not exist or
/// cannot be read.
bool is_hdf5(const std::string& path);

class Dataset;

/// An open HDF5 object (file, group or dataset); copies share the handle, the last one closes it.
class Object {
 public:
  Object() = default;
  Object(const Object& other);
  Object& operator=(const Object& other);
  Object(Object&& other) noexcept;
  Object& operator=(Object&& other) noexcept;
  ~Object();

  bool valid() const { return id_ >= 0; }
  /// The file's name in messages, and this object's path inside it ("/" for the root).
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  /// The raw hid_t (for h5.cpp).
  int64_t id() const { return id_; }

  bool has_attribute(const std::string& name) const;
  std::vector<std::string> attribute_names() const;
  /// Writes (or replaces) an attribute. Throws OutputError.
  void set_attribute(const std::string& name, const std::string& value);
  void set_attribute(const std::string& name, const char* value);
  void set_attribute(const std::string& name, int64_t value);
  void set_attribute(const std::string& name, int value) { set_attribute(name, static_cast<int64_t>(value)); }
  void set_attribute(const std::string& name, double value);
  void set_attribute(const std::string& name, const std::vector<std::string>& values);
  void set_attribute(const std::string& name, const std::vector<int64_t>& values);
  void set_attribute(const std::string& name, const std::vector<double>& values);
  /// Reads an attribute. Throws InputError naming the file, object and attribute when it is
  /// missing or of another kind (a string asked as a number, a vector asked as a scalar, …).
  /// Integer attributes are accepted where a double is asked.
  std::string attribute_string(const std::string& name) const;
  int64_t attribute_int(const std::string& name) const;
  double attribute_double(const std::string& name) const;
  std::vector<std::string> attribute_strings(const std::string& name) const;
  std::vector<int64_t> attribute_ints(const std::string& name) const;
  std::vector<double> attribute_doubles(const std::string& name) const;

 protected:
  Object(int64_t id, std::string file, std::string path);
  int64_t id_ = -1;
  std::string file_;
  std::string path_;
};

/// A group (or a file's root group). Paths are relative to this group ("a/b") or absolute ("/a").
class Group : public Object {
 public:
  Group() = default;

  /// True if a link `path` exists (every component checked).
  bool exists(const std::string& path) const;
  bool is_group(const std::string& path) const;
  bool is_dataset(const std::string& path) const;
  /// Member names in creation order where the group tracks it (groups made here do), else by name.
  std::vector<std::string> members() const;

  /// Opens an existing group or dataset; InputError if absent or of the other kind.
  Group group(const std::string& path) const;
  Dataset dataset(const std::string& path) const;
  /// Creates a group (and missing parents) that tracks creation order. OutputError if it exists.
  /// `links`: how many links the group will hold, when known (0: unknown); a group of more than
  /// 1,024 (a wide result table) is then made in HDF5's dense storage from the start.
  Group create_group(const std::string& path, int64_t links = 0);
  /// Opens the group if it exists, else creates it.
  Group require_group(const std::string& path);

  /// Writes a row-major array of `dtype` elements and any rank (an empty shape makes a scalar
  /// dataset) as a new dataset (chunked with Fletcher32; scalars and empty arrays contiguous); `data` holds the product of `shape` elements (bfloat16
  /// as its uint16 bits, bool as uint8 0/1). Throws OutputError (also for strings).
  Dataset write_array(const std::string& path, Dtype dtype, const std::vector<int64_t>& shape, const void* data);

  /// 1-D datasets from plain vectors (no LibTorch needed by the caller).
  Dataset write_strings(const std::string& path, const std::vector<std::string>& values);
  Dataset write_doubles(const std::string& path, const std::vector<double>& values);
  Dataset write_ints(const std::string& path, const std::vector<int64_t>& values);

  /// Creates an empty 1-D dataset with unlimited length, chunked by `chunk` elements, to be
  /// filled with Dataset::append (token streams: uint16 for GPT-2 ids, or int32), and beside it
  /// its chunk table `<path>_chunk_crc32c` (int64, one CRC32C per chunk of `chunk` elements,
  /// kept by every append), which lets slice reads verify what they read.
  Dataset create_extendable(const std::string& path, Dtype dtype, int64_t chunk = int64_t{1} << 20);

 protected:
  using Object::Object;
  friend class File;
  friend class Writer;
};

/// A dataset: shape, dtype, whole and partial reads, appends to extendable 1-D datasets.
/// Copies share the handle and what slice reads have verified.
class Dataset : public Object {
 public:
  Dataset() = default;

  std::vector<int64_t> shape() const;  // empty for a scalar dataset
  int64_t numel() const;
  Dtype dtype() const;  // InputError for a type outside Dtype

  /// The whole dataset into `out` (numel() elements of `memory` type, row-major); integers
  /// convert to any integer type, floats to any float type; bfloat16 only to itself, bool to
  /// itself or uint8 (0/1); strings not at all (read_strings). InputError on a mismatch, and
  /// when the data fail their CRC32C (`sg_crc32c`) or the chunk table of an extendable dataset.
  void read_array(Dtype memory, void* out) const;
  /// Elements [offset, offset + count) of a 1-D dataset into `out`, read without touching the
  /// rest of the file, converting as read_array. InputError if the range is outside the dataset
  /// or it is not 1-D. A dataset with a chunk table (create_extendable) has each chunk the slice
  /// touches read whole and checked against its CRC32C the first time: InputError naming the file,
  /// the dataset and the chunk when one fails (a chunk zeroed with its Fletcher32).
  void read_slice(int64_t offset, int64_t count, Dtype memory, void* out) const;

  /// Whole 1-D datasets as plain vectors: numbers convert (int to double is allowed, double to
  /// int is not); strings read variable- and fixed-length strings. InputError on a mismatch.
  std::vector<double> read_doubles() const;
  std::vector<int64_t> read_ints() const;
  std::vector<std::string> read_strings() const;

  /// Appends `count` elements of `memory` type to an extendable 1-D dataset (converting to the
  /// stored integer/float type). OutputError if the dataset is not extendable or on failure.
  void append(const void* data, int64_t count, Dtype memory);
  void append(const std::vector<uint16_t>& values);
  void append(const std::vector<int32_t>& values);
  void append(const std::vector<int64_t>& values);

  struct ChunkTable;  // (h5.cpp)

 private:
  using Object::Object;
  friend class Group;
  /// The chunk table (create_extendable), loaded and checked on first use; `present` false for a
  /// dataset without one (not extendable, or written before sinkgate kept them).
  ChunkTable& chunk_table() const;
  mutable std::shared_ptr<ChunkTable> chunks_;
};

/// An HDF5 file opened for reading; its root group.
class File : public Group {
 public:
  File() = default;
  /// Opens `path` ("-": stdin) read-only. Throws InputError naming the file when it is missing,
  /// unreadable, not an HDF5 file or damaged.
  static File open(const std::string& path);

 private:
  using Group::Group;
  friend class Writer;
};

/// Writes a new HDF5 file atomically: everything goes to "<path>.tmp.<pid>" (for "-": a
/// temporary file), and commit() renames it into place (for "-": copies it to stdout). Without
/// commit (an exception, a kill) the final name is never touched; the destructor removes the
/// temporary file.
class Writer {
 public:
  /// Checks check_writable(path, force) and creates the temporary file. Throws OutputError.
  Writer(const std::string& path, bool force);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// The root group of the file being written.
  Group& root() { return root_; }
  /// Closes the file and moves it into place. Throws OutputError (then nothing is in place).
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temporary_;
  bool force_;
  bool committed_ = false;
  int64_t file_ = -1;  // the hid_t of the file being written
  Group root_;
};

/// Sets the root attributes `format` and `schema_version`.
void set_format(Group& root, const std::string& format, int64_t schema_version);

/// Checks that `root` is a file of kind `format` with a schema_version in [1, newest]; returns the
/// version. Throws InputError with a hint: not a sinkgate file, another kind of sinkgate file, or
/// a version this build does not know.
int64_t check_format(const Group& root, const std::string& format, int64_t newest);

}  // namespace sg::h5
