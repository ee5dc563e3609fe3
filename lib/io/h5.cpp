// h5.cpp — the HDF5 C API behind h5.h (with h5_api and h5_structure, the only modules that include
// HDF5 headers).
#include "lib/io/h5.h"

#include <algorithm>
#include <cctype>
#include <cerrno>

#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <type_traits>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/base/log.h"
#include "lib/base/paths.h"
#include "lib/io/atomic_file.h"
#include "lib/io/checksum.h"
#include "lib/io/h5_api.h"
#include "lib/io/h5_headers.h"
#include "lib/io/h5_structure.h"
#include "sg/version.h"

static_assert(std::is_same_v<hid_t, int64_t>, "h5.h stores hid_t as int64_t (HDF5 >= 1.10)");

namespace sg::h5 {
namespace {

// POSIX rather than std::filesystem: the torch wheel's libtorch.so exports its own copies of
// std::filesystem functions, some of which crash when they bind instead of libstdc++'s.

/// Refuses to follow an external link wherever one is met despite the structure check (an
/// object opened by a path through one): HDF5 would open the other file (or block on a FIFO).
herr_t refuse_external_link(const char*, const char*, const char*, const char*, unsigned*, hid_t, void*) { return -1; }

/// Link- (and dataset-, group-) access properties that refuse external links.
hid_t no_external_links(hid_t list_class) {
  const hid_t list = H5Pcreate(list_class);
  H5Pset_elink_cb(list, refuse_external_link, nullptr);
  return list;
}
hid_t link_access() {
  static const hid_t list = no_external_links(H5P_LINK_ACCESS);
  return list;
}
hid_t dataset_access() {
  static const hid_t list = no_external_links(H5P_DATASET_ACCESS);
  return list;
}
hid_t group_access() {
  static const hid_t list = no_external_links(H5P_GROUP_ACCESS);
  return list;
}

/// Keeps an object's attributes, and a group's first kMaxCompactLinks links, in its object header,
/// whose checksum the library verifies: past 8 of either HDF5 moves them to a fractal heap, and
/// libhdf5 1.10 crashed on a damaged link there (SIGSEGV freeing a half-decoded link table in
/// H5G__dense_get_name_by_idx, found by fuzzing run files). A group of more links (a result table
/// of more than 1,024 columns) goes dense all the same: adding a message to a header scans every
/// message already there, so n links kept compact cost time quadratic in n (10,001 columns took
/// minutes), and every lookup by name scans them too; dense storage indexes names in a B-tree.
/// The bound keeps every model's weights (a few hundred tensors at 350M) compact, where the
/// fuzzing of tests/fuzz.py reaches; dense blocks are checksummed in the 1.10 format, but no
/// campaign has covered them.
constexpr unsigned kMaxCompactLinks = 1024;
void keep_compact(hid_t creation_properties, bool links) {
  constexpr unsigned kMaxCompact = 65535;  // HDF5's bound
  H5Pset_attr_phase_change(creation_properties, kMaxCompact, 0);
  if (links) H5Pset_link_phase_change(creation_properties, kMaxCompactLinks, kMaxCompactLinks - 16);
}

/// Strings are stored fixed-length (NUL-padded UTF-8, `size` bytes each), never variable-length: a
/// variable-length string lives in HDF5's global heap, which carries no checksum, and a damaged
/// heap reference made libhdf5 read through a wild pointer (SIGSEGV in H5HG_read).
Id string_type(size_t size) {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, std::max<size_t>(size, 1));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return type;
}

/// `values` laid out as fixed-length strings of the longest one's size (at least 1 byte).
std::vector<char> pack_strings(const std::vector<std::string>& values, size_t& size) {
  size = 1;
  for (const auto& v : values) size = std::max(size, v.size());
  std::vector<char> packed(values.size() * size, '\0');
  for (size_t i = 0; i < values.size(); ++i) std::memcpy(packed.data() + i * size, values[i].data(), values[i].size());
  return packed;
}

/// The dataset-creation properties of a new dataset of `dims` holding `element` bytes each:
/// chunked (whole rows, chunks of at most 1 GiB) with HDF5's Fletcher32 checksum, so that a damaged
/// file is reported ("checksum failed") rather than decoded; the default (contiguous) for scalars
/// and empty datasets, which cannot be chunked.
Id checksummed_layout(const std::vector<hsize_t>& dims, size_t element) {
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  keep_compact(dcpl, /*links=*/false);
  hsize_t count = 1;
  for (const hsize_t d : dims) count *= d;
  if (dims.empty() || count == 0) return dcpl;
  const hsize_t row = count / dims[0] * element;
  constexpr hsize_t kMaxChunk = hsize_t{1} << 30;
  if (row > kMaxChunk) return dcpl;
  std::vector<hsize_t> chunk = dims;
  chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(dims[0], kMaxChunk / row));
  H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
  H5Pset_fletcher32(dcpl);
  return dcpl;
}

hid_t file_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return H5T_IEEE_F32LE;
    case Dtype::float64: return H5T_IEEE_F64LE;
    case Dtype::bfloat16: return H5T_STD_U16LE;
    case Dtype::int8: return H5T_STD_I8LE;
    case Dtype::int16: return H5T_STD_I16LE;
    case Dtype::int32: return H5T_STD_I32LE;
    case Dtype::int64: return H5T_STD_I64LE;
    case Dtype::uint8: return H5T_STD_U8LE;
    case Dtype::uint16: return H5T_STD_U16LE;
    case Dtype::boolean: return H5T_STD_U8LE;
    case Dtype::string: break;
  }
  throw Error("h5: no fixed file type for strings");
}

hid_t memory_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return H5T_NATIVE_FLOAT;
    case Dtype::float64: return H5T_NATIVE_DOUBLE;
    case Dtype::bfloat16: return H5T_NATIVE_UINT16;
    case Dtype::int8: return H5T_NATIVE_INT8;
    case Dtype::int16: return H5T_NATIVE_INT16;
    case Dtype::int32: return H5T_NATIVE_INT32;
    case Dtype::int64: return H5T_NATIVE_INT64;
    case Dtype::uint8: return H5T_NATIVE_UINT8;
    case Dtype::uint16: return H5T_NATIVE_UINT16;
    case Dtype::boolean: return H5T_NATIVE_UINT8;
    case Dtype::string: break;
  }
  throw Error("h5: no fixed memory type for strings");
}

bool is_plain_integer(Dtype d) {
  return d == Dtype::int8 || d == Dtype::int16 || d == Dtype::int32 || d == Dtype::int64 || d == Dtype::uint8 ||
         d == Dtype::uint16;
}
bool is_plain_float(Dtype d) { return d == Dtype::float32 || d == Dtype::float64; }

/// Whether values stored as `stored` may be converted by HDF5 to (or from) `memory`.
bool convertible(Dtype stored, Dtype memory) {
  if (stored == memory) return true;
  if (is_plain_integer(stored) && is_plain_integer(memory)) return true;
  return is_plain_float(stored) && is_plain_float(memory);
}

std::string join_path(const std::string& base, const std::string& name) {
  if (!name.empty() && name.front() == '/') return name;
  if (base.empty() || base == "/") return "/" + name;
  return base + "/" + name;
}

std::string class_name(H5T_class_t type_class) {
  switch (type_class) {
    case H5T_INTEGER: return "an integer";
    case H5T_FLOAT: return "a float";
    case H5T_STRING: return "a string";
    default: return "of an unsupported type";
  }
}

/// The size in bytes of the file holding `object`, when it is open read-only (0 otherwise: a file
/// being written grows as it is flushed).
uint64_t file_size_of(hid_t object) {
  Id file(H5Iget_file_id(object), H5Fclose);
  unsigned intent = 0;
  hsize_t size = 0;
  if (!file.ok() || H5Fget_intent(file, &intent) < 0 || (intent & H5F_ACC_RDWR) || H5Fget_filesize(file, &size) < 0)
    return 0;
  return size;
}

/// Throws InputError when an attribute or dataset claims more bytes than its file could hold:
/// `count` elements of `element` bytes in a file of `file_bytes` (a damaged dataspace or datatype,
/// which would otherwise become an allocation of many gigabytes). Compressed datasets of other
/// writers may hold up to zlib's ratio (1032:1); sinkgate's own are uncompressed.
void check_plausible(uint64_t count, uint64_t element, uint64_t file_bytes, bool compressed, const std::string& file,
                     const std::string& what) {
  if (file_bytes == 0) return;
  const uint64_t limit = compressed ? file_bytes * 1032 : file_bytes;
  if (element > 0 && count > limit / element)
    throw InputError(file + ": " + what + " claims " + std::to_string(count) + " elements of " +
                     std::to_string(element) + " bytes, more than the file's " + std::to_string(file_bytes) +
                     " bytes could hold: the file is damaged");
}

/// Whether dataset `dataset` passes its data through a compression filter.
bool is_compressed(hid_t dataset) {
  Id dcpl(H5Dget_create_plist(dataset), H5Pclose);
  if (!dcpl.ok()) return false;
  const int filters = H5Pget_nfilters(dcpl);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0;
    size_t elements = 0;
    unsigned values[8];
    char name[64];
    const H5Z_filter_t filter = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &elements, values,
                                               sizeof name, name, nullptr);
    if (filter != H5Z_FILTER_FLETCHER32) return true;
  }
  return false;
}

/// Reads the strings of an attribute (is_attribute) or dataset: fixed length (what sinkgate
/// writes) or variable length (files of sinkgate 0.1, and other writers). With `crc`, sets it to
/// the CRC32C of the stored bytes of fixed-length strings and returns whether it did.
std::vector<std::string> read_string_data(hid_t object, bool is_attribute, const std::string& file,
                                          const std::string& what, uint32_t* crc = nullptr, bool* crc_set = nullptr) {
  Id type(is_attribute ? H5Aget_type(object) : H5Dget_type(object), H5Tclose);
  Id space(is_attribute ? H5Aget_space(object) : H5Dget_space(object), H5Sclose);
  if (!type.ok() || !space.ok()) fail_input(file, "cannot read " + what);
  const hssize_t count = H5Sget_simple_extent_npoints(space);
  std::vector<std::string> values;
  if (crc_set) *crc_set = false;
  if (count <= 0) {
    if (crc) *crc = crc32c(nullptr, 0);
    if (crc_set) *crc_set = true;
    return values;
  }
  // A variable-length string's reference takes 16 bytes in the object, its text more in the heap.
  const bool variable = H5Tis_variable_str(type) > 0;
  check_plausible(static_cast<uint64_t>(count), variable ? 16 : H5Tget_size(type), file_size_of(object),
                  !is_attribute && is_compressed(object), file, what);
  auto read = [&](hid_t memory, void* buffer) {
    return is_attribute ? H5Aread(object, memory, buffer) : H5Dread(object, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer);
  };
  if (variable) {
    Id memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory, H5T_VARIABLE);
    H5Tset_cset(memory, H5Tget_cset(type));
    std::vector<char*> buffer(static_cast<size_t>(count), nullptr);
    if (read(memory, buffer.data()) < 0) fail_input(file, "cannot read " + what);
    for (char* s : buffer) values.emplace_back(s ? s : "");
    H5Dvlen_reclaim(memory, space, H5P_DEFAULT, buffer.data());
  } else {
    const size_t size = H5Tget_size(type);
    Id memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory, size);
    H5Tset_strpad(memory, H5T_STR_NULLPAD);  // all `size` bytes (NULLTERM would drop the last for a NUL)
    H5Tset_cset(memory, H5Tget_cset(type));
    std::vector<char> buffer(static_cast<size_t>(count) * size, '\0');
    if (read(memory, buffer.data()) < 0) fail_input(file, "cannot read " + what);
    if (crc) *crc = crc32c(buffer.data(), buffer.size());
    if (crc_set) *crc_set = true;
    for (hssize_t i = 0; i < count; ++i) {
      const char* begin = buffer.data() + i * size;
      values.emplace_back(begin, strnlen(begin, size));
    }
  }
  return values;
}

/// A group-creation property list that tracks and indexes link creation order. A group that will
/// hold more than kMaxCompactLinks links (`links`, when known) uses dense storage from its first
/// link: libhdf5 1.10 moves a full compact group to dense storage by removing its link messages one
/// at a time, condensing the header after each (a 1,025th column cost over ten minutes).
Id ordered_gcpl(int64_t links = 0) {
  Id gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  keep_compact(gcpl, /*links=*/true);
  if (links > static_cast<int64_t>(kMaxCompactLinks)) H5Pset_link_phase_change(gcpl, 0, 0);
  return gcpl;
}

std::pair<std::string, std::string> split_parent(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return {"", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

/// The temporary copies of stdin and of pipes, by the name given; removed at exit.
struct StreamCopies {
  std::map<std::string, std::string> paths;
  ~StreamCopies() {
    for (const auto& [name, path] : paths) std::remove(path.c_str());
  }
};

/// Copies a stream (stdin, or an opened pipe) into a new temporary file; returns its size.
size_t copy_stream(const std::function<size_t(char*, size_t)>& read, const std::string& temporary,
                   const std::string& name) {
  FILE* out = std::fopen(temporary.c_str(), "wb");  // opens: a temporary of its own, written
  if (!out) throw OutputError("cannot copy " + name + " to " + temporary + ": " + std::strerror(errno),
                              "free space in the temporary folder ($TMPDIR), or point TMPDIR elsewhere");
  std::vector<char> buffer(1 << 20);
  size_t got = 0, total = 0;
  bool ok = true;
  int error = 0;
  while ((got = read(buffer.data(), buffer.size())) > 0) {
    if (ok && std::fwrite(buffer.data(), 1, got, out) != got) {
      ok = false;
      error = errno;
    }
    total += got;
  }
  if (std::fflush(out) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (std::fclose(out) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (!ok)
    throw OutputError("cannot copy " + name + " to " + temporary + ": " + std::strerror(error),
                      "free space in the temporary folder ($TMPDIR), or point TMPDIR elsewhere");
  return total;
}

size_t copy_stream(InputHandle& in, const std::string& temporary, const std::string& name) {
  return copy_stream([&](char* data, size_t n) { return in.read(data, n); }, temporary, name);
}

size_t copy_stream(FILE* in, const std::string& temporary, const std::string& name) {
  const size_t total = copy_stream(
      [&](char* data, size_t n) {
        const size_t got = std::fread(data, 1, n, in);
        if (got == 0 && std::ferror(in)) throw InputError("cannot read " + name + ": " + std::strerror(errno));
        return got;
      },
      temporary, name);
  return total;
}

}  // namespace

std::string to_string(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return "float32";
    case Dtype::float64: return "float64";
    case Dtype::bfloat16: return "bfloat16";
    case Dtype::int8: return "int8";
    case Dtype::int16: return "int16";
    case Dtype::int32: return "int32";
    case Dtype::int64: return "int64";
    case Dtype::uint8: return "uint8";
    case Dtype::uint16: return "uint16";
    case Dtype::boolean: return "bool";
    case Dtype::string: return "string";
  }
  return "?";
}

// --- files on disk -----------------------------------------------------------------------

namespace {

/// The first file under `folder` (links followed to files, not to folders) that is the file
/// `output` (the same device and inode), or "".
std::string file_in_folder(const std::string& folder, const struct stat& output, int depth = 0) {
  if (depth > 64) return "";
  DIR* dir = opendir(folder.c_str());
  if (!dir) return "";
  std::string found;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    const std::string member = folder + "/" + name;
    struct stat info {};
    if (::stat(member.c_str(), &info) != 0) continue;
    if (info.st_dev == output.st_dev && info.st_ino == output.st_ino) found = member;
    struct stat link {};
    if (found.empty() && S_ISDIR(info.st_mode) && ::lstat(member.c_str(), &link) == 0 && S_ISDIR(link.st_mode))
      found = file_in_folder(member, output, depth + 1);
    if (!found.empty()) break;
  }
  closedir(dir);
  return found;
}

}  // namespace

void check_writable(const std::string& path, bool force, const std::vector<std::string>& inputs) {
  struct stat output {};
  if (path != "-" && !path.empty() && stat(path.c_str(), &output) == 0) {
    for (const auto& input : inputs) {
      struct stat other {};
      if (input == "-" || stat(input.c_str(), &other) != 0) continue;
      if (other.st_dev == output.st_dev && other.st_ino == output.st_ino)
        throw OutputError(path + " is also an input (" + input + "): writing it would destroy that input",
                          "write the output to another file");
      // A folder given as an input (a checkpoint folder, a corpus) is read in whole or in part:
      // every file in it is an input no output may replace.
      if (S_ISDIR(other.st_mode) && !S_ISDIR(output.st_mode)) {
        const std::string member = file_in_folder(input, output);
        if (!member.empty())
          throw OutputError(path + " is a file of the input folder " + input + " (" + member +
                                "): writing it would replace that input",
                            "write the output outside the folder");
      }
    }
  }
  if (path == "-") {
    if (isatty(STDOUT_FILENO))
      throw OutputError("refusing to write a binary HDF5 file to a terminal",
                        "redirect stdout to a file, pipe it into another sg- tool, or use -o FILE");
    return;
  }
  if (path.empty()) throw OutputError("empty output path");
  check_replaceable(path);
  struct stat info {};
  if (stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw OutputError(path + " is a directory", "name an output file");
    if (!force) throw OutputError(path + " exists", "use --force to overwrite it");
  }
  const std::string directory = directory_of(path);
  if (stat(directory.c_str(), &info) == 0 && !S_ISDIR(info.st_mode))
    throw OutputError("cannot write " + path + ": " + directory + " is a file, not a directory",
                      "name an output in a directory");
  if (stat(directory.c_str(), &info) != 0) {
    // A missing folder, or one under a file: say which.
    std::string parent = directory;
    while (!parent.empty() && parent != "/" && stat(parent.c_str(), &info) != 0) parent = directory_of(parent);
    if (!parent.empty() && stat(parent.c_str(), &info) == 0 && !S_ISDIR(info.st_mode))
      throw OutputError("cannot write " + path + ": " + parent + " is a file, not a directory",
                        "name an output in a directory");
    throw OutputError("cannot write " + path + ": directory " + directory + " does not exist",
                      "create it first: mkdir -p " + directory);
  }
  if (access(directory.c_str(), W_OK | X_OK) != 0)
    throw OutputError("cannot write " + path + ": directory " + directory + " is not writable");
}

std::string resolve_input(const std::string& path) {
  static StreamCopies copies;
  if (const auto found = copies.paths.find(path); found != copies.paths.end()) return found->second;
  if (path != "-") {
    // A pipe (a FIFO, or process substitution's /dev/fd/N) can be read once: it is copied on the
    // first call, so that hashing it and reading it see the same bytes. A device (/dev/zero,
    // /dev/urandom, a terminal) is no input file: it never ends, or is not data. The kind is that
    // of the opened file (input_file.h): a FIFO with no writer is refused, never waited on.
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode) || S_ISDIR(info.st_mode)) return path;
    auto in = open_input(path, Fifo::read_once);
    const std::string temporary = make_temporary("sinkgate-pipe");
    copies.paths[path] = temporary;
    copy_stream(in, temporary, path);
    return temporary;
  }
  if (isatty(STDIN_FILENO))
    throw InputError("stdin is a terminal, but '-' asks to read an input from it",
                     "pipe a file in, e.g. 'sg-pairdiff runs/*.h5 | sg-tabulate -'");
  const std::string temporary = make_temporary("sinkgate-stdin");
  copies.paths[path] = temporary;
  if (copy_stream(stdin, temporary, "stdin") == 0)
    throw InputError("no input: stdin is empty, but '-' asks to read an input from it",
                     "did the previous command in the pipe fail? Its error is printed above");
  return temporary;
}

std::string display_name(const std::string& path) { return path == "-" ? "stdin" : path; }

bool is_hdf5(const std::string& path) {
  init();
  const std::string local = resolve_input(path);
  const std::string name = display_name(path);
  // The path libhdf5 opens next is checked here, on the opened file (input_file.h).
  if (open_input(local, Fifo::refuse, path == "-" ? "stdin's copy" : "").size() == 0) return false;
  const htri_t answer = H5Fis_hdf5(local.c_str());
  if (answer < 0) fail_input(name, "cannot read");
  return answer > 0;
}

// --- Object --------------------------------------------------------------------------------

Object::Object(int64_t id, std::string file, std::string path) : id_(id), file_(std::move(file)), path_(std::move(path)) {}

Object::Object(const Object& other) : id_(other.id_), file_(other.file_), path_(other.path_) {
  if (id_ >= 0) H5Iinc_ref(id_);
}

Object& Object::operator=(const Object& other) {
  if (this == &other) return *this;
  Object copy(other);
  *this = std::move(copy);
  return *this;
}

Object::Object(Object&& other) noexcept : id_(other.id_), file_(std::move(other.file_)), path_(std::move(other.path_)) {
  other.id_ = -1;
}

Object& Object::operator=(Object&& other) noexcept {
  if (this == &other) return *this;
  if (id_ >= 0) H5Idec_ref(id_);
  id_ = other.id_;
  file_ = std::move(other.file_);
  path_ = std::move(other.path_);
  other.id_ = -1;
  return *this;
}

Object::~Object() {
  // After a file closed with H5F_CLOSE_STRONG the id is stale; the failure is silent.
  if (id_ >= 0) {
    init();
    H5Idec_ref(id_);
  }
}

bool Object::has_attribute(const std::string& name) const {
  init();
  const htri_t exists = H5Aexists(id_, name.c_str());
  if (exists < 0) fail_input(file_, "cannot look up attribute '" + name + "' of " + path_);
  return exists > 0;
}

namespace {
herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

void write_attribute(const Object& object, const std::string& name, hid_t type, hid_t memory, hid_t space,
                     const void* data) {
  init();
  const hid_t id = object.id();
  const htri_t exists = H5Aexists(id, name.c_str());
  if (exists > 0 && H5Adelete(id, name.c_str()) < 0)
    fail_output(object.file(), "cannot replace attribute '" + name + "' of " + object.path());
  Id attribute(H5Acreate2(id, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attribute.ok()) fail_output(object.file(), "cannot create attribute '" + name + "' of " + object.path());
  if (data && H5Awrite(attribute, memory, data) < 0)
    fail_output(object.file(), "cannot write attribute '" + name + "' of " + object.path());
}

Id vector_space(size_t count) {
  if (count == 0) return Id(H5Screate(H5S_NULL), H5Sclose);
  const hsize_t dims[1] = {count};
  return Id(H5Screate_simple(1, dims, nullptr), H5Sclose);
}

/// Opens attribute `name`, checks its class against `expected` (H5T_FLOAT also accepts
/// integers) and, for scalars, that it holds one value; returns it with its element count.
std::pair<Id, hssize_t> open_attribute(const Object& object, const std::string& name, H5T_class_t expected,
                                       bool scalar) {
  init();
  const auto where = "attribute '" + name + "' of " + object.path();
  if (!object.has_attribute(name)) throw InputError(object.file() + ": " + object.path() + " has no attribute '" + name + "'");
  Id attribute(H5Aopen(object.id(), name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attribute.ok()) fail_input(object.file(), "cannot open " + where);
  Id type(H5Aget_type(attribute), H5Tclose);
  Id space(H5Aget_space(attribute), H5Sclose);
  const H5T_class_t actual = H5Tget_class(type);
  const bool class_ok = actual == expected || (expected == H5T_FLOAT && actual == H5T_INTEGER);
  if (!class_ok)
    throw InputError(object.file() + ": " + where + " is " + class_name(actual) + ", expected " +
                     class_name(expected));
  hssize_t count = 0;
  if (H5Sget_simple_extent_type(space) != H5S_NULL) count = H5Sget_simple_extent_npoints(space);
  if (scalar && count != 1)
    throw InputError(object.file() + ": " + where + " holds " + std::to_string(count) + " values, expected one");
  return {std::move(attribute), count};
}
}  // namespace

std::vector<std::string> Object::attribute_names() const {
  init();
  std::vector<std::string> names;
  hsize_t index = 0;
  if (H5Aiterate2(id_, H5_INDEX_NAME, H5_ITER_INC, &index, collect_attribute_name, &names) < 0)
    fail_input(file_, "cannot list the attributes of " + path_);
  return names;
}

void Object::set_attribute(const std::string& name, const std::string& value) {
  init();
  size_t size = 0;
  const auto packed = pack_strings({value}, size);
  Id type = string_type(size);
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  write_attribute(*this, name, type, type, space, packed.data());
}

void Object::set_attribute(const std::string& name, const char* value) { set_attribute(name, std::string(value)); }

void Object::set_attribute(const std::string& name, int64_t value) {
  init();
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  write_attribute(*this, name, H5T_STD_I64LE, H5T_NATIVE_INT64, space, &value);
}

void Object::set_attribute(const std::string& name, double value) {
  init();
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  write_attribute(*this, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space, &value);
}

void Object::set_attribute(const std::string& name, const std::vector<std::string>& values) {
  init();
  size_t size = 0;
  const auto packed = pack_strings(values, size);
  Id type = string_type(size);
  Id space = vector_space(values.size());
  write_attribute(*this, name, type, type, space, values.empty() ? nullptr : packed.data());
}

void Object::set_attribute(const std::string& name, const std::vector<int64_t>& values) {
  init();
  Id space = vector_space(values.size());
  write_attribute(*this, name, H5T_STD_I64LE, H5T_NATIVE_INT64, space, values.empty() ? nullptr : values.data());
}

void Object::set_attribute(const std::string& name, const std::vector<double>& values) {
  init();
  Id space = vector_space(values.size());
  write_attribute(*this, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space, values.empty() ? nullptr : values.data());
}

std::string Object::attribute_string(const std::string& name) const {
  auto [attribute, count] = open_attribute(*this, name, H5T_STRING, /*scalar=*/true);
  return read_string_data(attribute, /*is_attribute=*/true, file_, "attribute '" + name + "'").at(0);
}

std::vector<std::string> Object::attribute_strings(const std::string& name) const {
  auto [attribute, count] = open_attribute(*this, name, H5T_STRING, /*scalar=*/false);
  return read_string_data(attribute, /*is_attribute=*/true, file_, "attribute '" + name + "'");
}

std::vector<int64_t> Object::attribute_ints(const std::string& name) const {
  auto [attribute, count] = open_attribute(*this, name, H5T_INTEGER, /*scalar=*/false);
  std::vector<int64_t> values(static_cast<size_t>(count));
  if (count > 0 && H5Aread(attribute, H5T_NATIVE_INT64, values.data()) < 0)
    fail_input(file_, "cannot read attribute '" + name + "' of " + path_);
  return values;
}

std::vector<double> Object::attribute_doubles(const std::string& name) const {
  auto [attribute, count] = open_attribute(*this, name, H5T_FLOAT, /*scalar=*/false);
  std::vector<double> values(static_cast<size_t>(count));
  if (count > 0 && H5Aread(attribute, H5T_NATIVE_DOUBLE, values.data()) < 0)
    fail_input(file_, "cannot read attribute '" + name + "' of " + path_);
  return values;
}

int64_t Object::attribute_int(const std::string& name) const {
  open_attribute(*this, name, H5T_INTEGER, /*scalar=*/true);
  return attribute_ints(name).at(0);
}

double Object::attribute_double(const std::string& name) const {
  open_attribute(*this, name, H5T_FLOAT, /*scalar=*/true);
  return attribute_doubles(name).at(0);
}

// --- Group ---------------------------------------------------------------------------------

bool Group::exists(const std::string& path) const {
  init();
  if (path.empty() || path == "." || path == "/") return true;
  size_t position = path.front() == '/' ? 1 : 0;
  while (true) {
    const size_t slash = path.find('/', position);
    const std::string prefix = path.substr(0, slash);
    const htri_t found = H5Lexists(id_, prefix.c_str(), link_access());
    if (found < 0) fail_input(file_, "cannot look up " + join_path(path_, prefix));
    if (found == 0) return false;
    if (slash == std::string::npos || slash + 1 >= path.size()) return true;
    position = slash + 1;
  }
}

namespace {
H5I_type_t object_type(const Group& group, const std::string& path) {
  if (!group.exists(path)) return H5I_BADID;
  Id object(H5Oopen(group.id(), path.c_str(), link_access()), H5Oclose);
  if (!object.ok()) return H5I_BADID;
  return H5Iget_type(object);
}
}  // namespace

bool Group::is_group(const std::string& path) const { return object_type(*this, path) == H5I_GROUP; }
bool Group::is_dataset(const std::string& path) const { return object_type(*this, path) == H5I_DATASET; }

namespace {
herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> Group::members() const {
  init();
  // One pass over the links (H5Literate), not one lookup by index per link: in a group of compact
  // storage each lookup sorts every link again, quadratic time for a wide result table.
  unsigned order_flags = 0;
  {
    Id gcpl(H5Gget_create_plist(id_), H5Pclose);
    if (gcpl.ok()) H5Pget_link_creation_order(gcpl, &order_flags);
  }
  std::vector<std::string> names;
  hsize_t index = 0;
  if ((order_flags & H5P_CRT_ORDER_TRACKED) &&
      H5Literate(id_, H5_INDEX_CRT_ORDER, H5_ITER_INC, &index, collect_link_name, &names) >= 0)
    return names;
  H5Eclear2(H5E_DEFAULT);
  names.clear();
  index = 0;
  if (H5Literate(id_, H5_INDEX_NAME, H5_ITER_INC, &index, collect_link_name, &names) < 0)
    fail_input(file_, "cannot list group " + path_);
  return names;
}

Group Group::group(const std::string& path) const {
  init();
  const auto full = join_path(path_, path);
  // One lookup when the group is there (a wide table opens thousands); the diagnosis after.
  const hid_t id = H5Gopen2(id_, path.c_str(), group_access());
  if (id >= 0) return Group(id, file_, full);
  H5Eclear2(H5E_DEFAULT);
  if (!exists(path)) throw InputError(file_ + ": no group " + full);
  if (!is_group(path)) throw InputError(file_ + ": " + full + " is not a group");
  fail_input(file_, "cannot open group " + full);
}

Dataset Group::dataset(const std::string& path) const {
  init();
  const auto full = join_path(path_, path);
  // One lookup when the dataset is there (a wide table opens thousands); the diagnosis after.
  const hid_t id = H5Dopen2(id_, path.c_str(), dataset_access());
  if (id >= 0) return Dataset(id, file_, full);
  H5Eclear2(H5E_DEFAULT);
  if (!exists(path)) throw InputError(file_ + ": no dataset " + full);
  if (!is_dataset(path)) throw InputError(file_ + ": " + full + " is not a dataset");
  fail_input(file_, "cannot open dataset " + full);
}

Group Group::create_group(const std::string& path, int64_t links) {
  init();
  const auto full = join_path(path_, path);
  if (exists(path)) throw OutputError(file_ + ": " + full + " exists");
  const auto [parent, name] = split_parent(path);
  Group where = parent.empty() ? *this : require_group(parent);
  Id gcpl = ordered_gcpl(links);
  const hid_t id = H5Gcreate2(where.id_, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT);
  if (id < 0) fail_output(file_, "cannot create group " + full);
  return Group(id, file_, full);
}

Group Group::require_group(const std::string& path) {
  if (path.empty() || path == "." || (path == "/" && path_ == "/")) return *this;
  return exists(path) ? group(path) : create_group(path);
}

namespace {
/// The attribute holding a dataset's CRC32C: over its elements' little-endian bytes in row-major
/// order (fixed-length strings: all their bytes, NUL padding included), as an int64 in [0, 2^32).
constexpr const char* kChecksum = kChecksumAttribute;

void store_checksum(Dataset& dataset, uint32_t crc) { dataset.set_attribute(kChecksum, static_cast<int64_t>(crc)); }

/// An extendable dataset's chunk table is the int64 dataset beside it named with this suffix
/// (`/tokens/train_chunk_crc32c`): entry i is the CRC32C of chunk i's elements as stored (the
/// last chunk: of the elements it holds so far). Chunks of the table itself: 4,096 entries.
constexpr const char* kChunkTableSuffix = "_chunk_crc32c";
constexpr hsize_t kChunkTableChunk = 4096;

/// Creates dataset `path` under `group` (parents made as needed) with the given type and space.
Dataset create_dataset(Group& group, const std::string& path, hid_t type, hid_t space, hid_t dcpl,
                       const std::function<Dataset(hid_t, const std::string&)>& wrap) {
  const auto full = join_path(group.path(), path);
  if (group.exists(path)) throw OutputError(group.file() + ": " + full + " exists");
  const auto [parent, name] = split_parent(path);
  Group where = parent.empty() ? group : group.require_group(parent);
  const hid_t id = H5Dcreate2(where.id(), name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (id < 0) fail_output(group.file(), "cannot create dataset " + full);
  return wrap(id, full);
}

/// A checksummed vector of `count` 8-byte numbers: of type `stored` in the file, `memory` in `data`.
Dataset write_numbers(Group& group, const std::string& path, hid_t stored, hid_t memory, const void* data, size_t count,
                      const std::function<Dataset(hid_t, const std::string&)>& wrap) {
  init();
  const hsize_t dims[1] = {count};
  Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  Id layout = checksummed_layout({dims[0]}, 8);
  auto dataset = create_dataset(group, path, stored, space, layout, wrap);
  if (count > 0 && H5Dwrite(dataset.id(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail_output(group.file(), "cannot write dataset " + dataset.path());
  store_checksum(dataset, crc32c(data, count * 8));
  return dataset;
}
}  // namespace

Dataset Group::write_array(const std::string& path, Dtype dtype, const std::vector<int64_t>& shape,
                           const void* data) {
  init();
  const auto full = join_path(path_, path);
  if (dtype == Dtype::string) throw OutputError(file_ + ": cannot store " + full + ": strings go through write_strings");
  std::vector<hsize_t> dims;
  hsize_t count = 1;
  for (const int64_t d : shape) {
    if (d < 0) throw OutputError(file_ + ": cannot store " + full + ": negative dimension " + std::to_string(d));
    dims.push_back(static_cast<hsize_t>(d));
    count *= static_cast<hsize_t>(d);
  }
  Id space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
           H5Sclose);
  Id layout = checksummed_layout(dims, H5Tget_size(file_type(dtype)));
  auto dataset = create_dataset(*this, path, file_type(dtype), space, layout,
                                [&](hid_t id, const std::string& name) { return Dataset(id, file_, name); });
  if (dtype == Dtype::bfloat16 || dtype == Dtype::boolean) dataset.set_attribute("sg_dtype", to_string(dtype));
  if (count > 0 && H5Dwrite(dataset.id(), memory_type(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail_output(file_, "cannot write dataset " + full);
  store_checksum(dataset, crc32c(data, count * H5Tget_size(file_type(dtype))));
  return dataset;
}

Dataset Group::write_strings(const std::string& path, const std::vector<std::string>& values) {
  init();
  size_t size = 0;
  const auto packed = pack_strings(values, size);
  Id type = string_type(size);
  const hsize_t dims[1] = {values.size()};
  Id space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  Id layout = checksummed_layout({dims[0]}, size);
  auto dataset = create_dataset(*this, path, type, space, layout,
                                [&](hid_t id, const std::string& name) { return Dataset(id, file_, name); });
  if (!values.empty() && H5Dwrite(dataset.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()) < 0)
    fail_output(file_, "cannot write dataset " + dataset.path());
  store_checksum(dataset, crc32c(packed.data(), values.empty() ? 0 : packed.size()));
  return dataset;
}

Dataset Group::write_doubles(const std::string& path, const std::vector<double>& values) {
  return write_numbers(*this, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data(), values.size(),
                       [&](hid_t id, const std::string& name) { return Dataset(id, file_, name); });
}

Dataset Group::write_ints(const std::string& path, const std::vector<int64_t>& values) {
  return write_numbers(*this, path, H5T_STD_I64LE, H5T_NATIVE_INT64, values.data(), values.size(),
                       [&](hid_t id, const std::string& name) { return Dataset(id, file_, name); });
}

Dataset Group::create_extendable(const std::string& path, Dtype dtype, int64_t chunk) {
  init();
  const auto full = join_path(path_, path);
  if (dtype == Dtype::string || dtype == Dtype::bfloat16 || dtype == Dtype::boolean)
    throw OutputError(file_ + ": cannot create " + full + ": extendable datasets hold plain numbers, not " +
                      to_string(dtype));
  if (chunk < 1) throw OutputError(file_ + ": cannot create " + full + ": chunk size must be positive");
  const hsize_t dims[1] = {0}, max_dims[1] = {H5S_UNLIMITED}, chunk_dims[1] = {static_cast<hsize_t>(chunk)};
  Id space(H5Screate_simple(1, dims, max_dims), H5Sclose);
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_chunk(dcpl, 1, chunk_dims);
  H5Pset_fletcher32(dcpl);
  keep_compact(dcpl, /*links=*/false);
  auto dataset = create_dataset(*this, path, file_type(dtype), space, dcpl,
                                [&](hid_t id, const std::string& name) { return Dataset(id, file_, name); });
  store_checksum(dataset, crc32c(nullptr, 0));  // continued by every append
  // The chunk table: one CRC32C per chunk, extended by every append. It carries no sg_crc32c of its
  // own (its last entry changes with each append): damage to it is Fletcher32's to catch, or a
  // mismatch with the chunk it describes.
  const hsize_t table_chunk[1] = {kChunkTableChunk};
  Id table_dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_chunk(table_dcpl, 1, table_chunk);
  H5Pset_fletcher32(table_dcpl);
  keep_compact(table_dcpl, /*links=*/false);
  create_dataset(*this, path + kChunkTableSuffix, H5T_STD_I64LE, space, table_dcpl,
                 [&](hid_t id, const std::string& name) { return Dataset(id, file_, name); });
  return dataset;
}

// --- Dataset -------------------------------------------------------------------------------

namespace {
/// A dataset's dimensions as stored, unchecked (shape() checks them against the file).
std::vector<hsize_t> extent_of(hid_t dataset, const std::string& file, const std::string& path) {
  Id space(H5Dget_space(dataset), H5Sclose);
  if (!space.ok()) fail_input(file, "cannot read the shape of " + path);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail_input(file, "cannot read the shape of " + path);
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return dims;
}
}  // namespace

std::vector<int64_t> Dataset::shape() const {
  init();
  const auto dims = extent_of(id_, file_, path_);
  // Callers size their buffers from the shape: check it against the file before they allocate.
  uint64_t count = 1;
  for (const hsize_t d : dims) {
    if (d > (uint64_t{1} << 62) || (d > 0 && count > (uint64_t{1} << 62) / d))
      throw InputError(file_ + ": dataset " + path_ + " has an impossible shape: the file is damaged");
    count *= d;
  }
  Id type(H5Dget_type(id_), H5Tclose);
  if (!type.ok()) fail_input(file_, "cannot read the type of " + path_);
  const size_t element = H5Tis_variable_str(type) > 0 ? 16 : H5Tget_size(type);
  // (File::open checked every dataset's storage: inside the file, Fletcher32 the only filter,
  // every chunk present.)
  check_plausible(count, element, file_size_of(id_), /*compressed=*/false, file_, "dataset " + path_);
  return std::vector<int64_t>(dims.begin(), dims.end());
}

int64_t Dataset::numel() const {
  int64_t n = 1;
  for (auto d : shape()) n *= d;
  return n;
}

Dtype Dataset::dtype() const {
  init();
  Id type(H5Dget_type(id_), H5Tclose);
  if (!type.ok()) fail_input(file_, "cannot read the type of " + path_);
  const H5T_class_t type_class = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  std::string tag;
  if (has_attribute("sg_dtype")) tag = attribute_string("sg_dtype");
  if (type_class == H5T_STRING) return Dtype::string;
  if (type_class == H5T_FLOAT) {
    if (size == 4) return Dtype::float32;
    if (size == 8) return Dtype::float64;
  }
  if (type_class == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    if (is_signed && size == 1) return Dtype::int8;
    if (is_signed && size == 2) return Dtype::int16;
    if (is_signed && size == 4) return Dtype::int32;
    if (is_signed && size == 8) return Dtype::int64;
    if (!is_signed && size == 1) return tag == "bool" ? Dtype::boolean : Dtype::uint8;
    if (!is_signed && size == 2) return tag == "bfloat16" ? Dtype::bfloat16 : Dtype::uint16;
  }
  throw InputError(file_ + ": dataset " + path_ + " has an unsupported element type (" + class_name(type_class) +
                   ", " + std::to_string(size) + " bytes)");
}

namespace {
/// The stored type as read into `memory` (bool may be read as its uint8 bytes); InputError when
/// the conversion is not one read_array allows.
Dtype readable_as(Dtype stored, Dtype memory, const std::string& file, const std::string& path) {
  if (stored == Dtype::boolean && memory == Dtype::uint8) stored = Dtype::uint8;
  if (!convertible(stored, memory) || memory == Dtype::string)
    throw InputError(file + ": dataset " + path + " holds " + to_string(stored) + ", which cannot be read as " +
                     to_string(memory));
  return stored;
}
}  // namespace

namespace {
/// The CRC32C dataset `dataset` was written with (`crc`), or false for one written without it
/// (by sinkgate before 0.x, or another program): then nothing is verified.
bool stored_checksum(const Dataset& dataset, uint32_t& crc) {
  if (!dataset.has_attribute(kChecksum)) return false;
  const int64_t value = dataset.attribute_int(kChecksum);
  if (value < 0 || value > int64_t{0xFFFFFFFF})
    throw InputError(dataset.file() + ": dataset " + dataset.path() + "'s attribute '" + kChecksum + "' holds " +
                     std::to_string(value) + ", not a CRC32C");
  crc = static_cast<uint32_t>(value);
  return true;
}

void verify_checksum(const Dataset& dataset, uint32_t expected, uint32_t computed) {
  if (expected == computed) return;
  char text[64];
  std::snprintf(text, sizeof text, "CRC32C %08x, stored %08x", computed, expected);
  throw InputError(dataset.file() + ": dataset " + dataset.path() + " fails its checksum (" + text +
                       "): its data changed after it was written (a lost or damaged write)",
                   "the file is damaged; write it again with the tool that made it");
}

[[noreturn]] void fail_chunk(const Dataset& dataset, int64_t chunk, int64_t begin, int64_t end, uint32_t computed,
                             uint32_t expected) {
  char text[64];
  std::snprintf(text, sizeof text, "CRC32C %08x, stored %08x", computed, expected);
  throw InputError(dataset.file() + ": dataset " + dataset.path() + " fails the checksum of its chunk " +
                       std::to_string(chunk) + " (elements [" + std::to_string(begin) + ", " + std::to_string(end) +
                       "), " + text + "): its data changed after it was written (a lost or damaged write)",
                   "the file is damaged; write it again with the tool that made it");
}
/// How a chunk-table lookup reports a failure: fail_input when reading, fail_output when appending.
using Failure = void (*)(const std::string& file, const std::string& what);

/// The chunk length of `dataset` when it has a chunk table (`<path>_chunk_crc32c`), else 0.
int64_t chunk_table_length(const Dataset& dataset, Failure fail) {
  const std::string name = dataset.path() + kChunkTableSuffix;
  const htri_t found = H5Lexists(dataset.id(), name.c_str(), link_access());
  if (found < 0) fail(dataset.file(), "cannot look up " + name);
  if (found <= 0) return 0;  // none: written before sinkgate kept chunk tables
  Id dcpl(H5Dget_create_plist(dataset.id()), H5Pclose);
  hsize_t chunk[1] = {0};
  if (!dcpl.ok() || H5Pget_chunk(dcpl, 1, chunk) != 1 || chunk[0] == 0)
    fail(dataset.file(), "cannot read the chunk shape of " + dataset.path());
  return static_cast<int64_t>(chunk[0]);
}
}  // namespace

/// A dataset's chunk table as read: `crc[i]` the CRC32C of chunk i (`chunk` elements each, of a
/// dataset of `elements`), and which chunks a read has found to match.
struct Dataset::ChunkTable {
  bool present = false;
  int64_t elements = 0;
  int64_t chunk = 0;
  std::vector<uint32_t> crc;
  std::vector<bool> verified;

  /// Checks chunks [first, last] held at `bytes` (raw stored elements of `size` bytes from chunk
  /// first's start) against the table, and marks them verified.
  void check(const Dataset& dataset, int64_t first, int64_t last, const unsigned char* bytes, size_t size) {
    for (int64_t i = first; i <= last; ++i) {
      const int64_t begin = i * chunk, end = std::min(elements, begin + chunk);
      const uint32_t computed =
          crc32c(bytes + static_cast<size_t>(begin - first * chunk) * size, static_cast<size_t>(end - begin) * size);
      if (computed != crc[static_cast<size_t>(i)]) fail_chunk(dataset, i, begin, end, computed, crc[static_cast<size_t>(i)]);
      verified[static_cast<size_t>(i)] = true;
    }
  }
};

Dataset::ChunkTable& Dataset::chunk_table() const {
  const auto extent = extent_of(id_, file_, path_);
  const int64_t elements = extent.size() == 1 ? static_cast<int64_t>(extent[0]) : -1;
  if (chunks_ && chunks_->elements == elements) return *chunks_;
  auto table = std::make_shared<ChunkTable>();
  table->elements = elements;
  chunks_ = table;
  // Only an extendable 1-D dataset has one: fixed datasets (every result column) skip the lookup.
  {
    Id space(H5Dget_space(id_), H5Sclose);
    hsize_t dims[1] = {0}, max_dims[1] = {0};
    if (elements < 0 || !space.ok() || H5Sget_simple_extent_dims(space, dims, max_dims) != 1 ||
        max_dims[0] != H5S_UNLIMITED)
      return *table;
  }
  const int64_t chunk = chunk_table_length(*this, fail_input);
  if (chunk == 0) return *table;
  const std::string name = path_ + kChunkTableSuffix;
  const hid_t table_id = H5Dopen2(id_, name.c_str(), dataset_access());
  if (table_id < 0) fail_input(file_, "cannot open " + name + " (the chunk table of " + path_ + ")");
  const Dataset stored(table_id, file_, name);
  const auto shape = stored.shape();
  const int64_t chunks = (elements + chunk - 1) / chunk;
  if (shape.size() != 1 || shape[0] != chunks)
    throw InputError(file_ + ": " + name + " has " + (shape.size() == 1 ? std::to_string(shape[0]) : std::string("not")) +
                         " 1-D entries, but " + path_ + " has " + std::to_string(chunks) + " chunks of " +
                         std::to_string(chunk) + " elements: the file is damaged",
                     "the file is damaged; write it again with the tool that made it");
  const auto values = stored.read_ints();
  for (const int64_t value : values)
    if (value < 0 || value > int64_t{0xFFFFFFFF})
      throw InputError(file_ + ": " + name + " holds " + std::to_string(value) + ", not a CRC32C: the file is damaged");
  table->chunk = chunk;
  table->crc.assign(values.begin(), values.end());
  table->verified.assign(values.size(), false);
  table->present = true;
  return *table;
}

namespace {
/// The whole of `dataset` (`count` elements stored as `stored`) into `out` as `memory`, its
/// CRC32C verified when it has one, and its chunk table when it has one: read as stored (into
/// `out` when the memory type is at least as wide, converted there in place), checked, then
/// converted.
void read_whole(const Dataset& dataset, Dtype stored, hid_t memory, int64_t count, void* out,
                Dataset::ChunkTable* table = nullptr) {
  uint32_t expected = 0;
  const bool verify = stored_checksum(dataset, expected);
  const bool by_chunk = table && table->present && count > 0;
  if (count == 0) {
    if (verify) verify_checksum(dataset, expected, crc32c(nullptr, 0));
    return;
  }
  const hid_t id = dataset.id();
  if (!verify && !by_chunk) {
    if (H5Dread(id, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
      fail_input(dataset.file(), "cannot read dataset " + dataset.path());
    return;
  }
  const hid_t raw = memory_type(stored);  // the stored bytes: file types are little-endian, as is the host
  const size_t raw_size = H5Tget_size(raw), memory_size = H5Tget_size(memory);
  const size_t n = static_cast<size_t>(count);
  std::vector<unsigned char> temporary;
  auto* buffer = static_cast<unsigned char*>(out);
  if (memory_size < raw_size) {
    temporary.resize(n * raw_size);
    buffer = temporary.data();
  }
  if (H5Dread(id, raw, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer) < 0)
    fail_input(dataset.file(), "cannot read dataset " + dataset.path());
  if (verify) verify_checksum(dataset, expected, crc32c(buffer, n * raw_size));
  if (by_chunk) table->check(dataset, 0, static_cast<int64_t>(table->crc.size()) - 1, buffer, raw_size);
  if (H5Tequal(raw, memory) > 0) return;
  if (H5Tconvert(raw, memory, n, buffer, nullptr, H5P_DEFAULT) < 0)
    fail_input(dataset.file(), "cannot convert dataset " + dataset.path());
  if (buffer != out) std::memcpy(out, buffer, n * memory_size);
}
}  // namespace

void Dataset::read_array(Dtype memory, void* out) const {
  init();
  const Dtype stored = readable_as(dtype(), memory, file_, path_);
  read_whole(*this, stored, memory_type(memory), numel(), out, &chunk_table());
}

void Dataset::read_slice(int64_t offset, int64_t count, Dtype memory, void* out) const {
  init();
  // The caller's buffer holds `count` elements: the extent bounds the slice, and the per-window
  // reads of a large token file skip shape()'s checks against the file (made when it was opened).
  const auto extent = extent_of(id_, file_, path_);
  const std::vector<int64_t> dims(extent.begin(), extent.end());
  if (dims.size() != 1)
    throw InputError(file_ + ": dataset " + path_ + " has " + std::to_string(dims.size()) +
                     " dimensions; slices need a 1-D dataset");
  if (offset < 0 || count < 0 || offset + count > dims[0])
    throw InputError(file_ + ": slice [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                     ") is outside dataset " + path_ + " of " + std::to_string(dims[0]) + " elements");
  const Dtype stored = readable_as(dtype(), memory, file_, path_);
  if (count == 0) return;
  // The chunks the slice touches, each read whole and checked against the chunk table once: a
  // chunk zeroed with its Fletcher32 reads as zeros that libhdf5 passes.
  auto& table = chunk_table();
  if (table.present) {
    const hid_t raw = memory_type(stored);
    const size_t raw_size = H5Tget_size(raw);
    std::vector<unsigned char> buffer;
    for (int64_t i = offset / table.chunk; i <= (offset + count - 1) / table.chunk; ++i) {
      if (table.verified[static_cast<size_t>(i)]) continue;
      const hsize_t start[1] = {static_cast<hsize_t>(i * table.chunk)};
      const hsize_t size[1] = {static_cast<hsize_t>(std::min(table.elements, (i + 1) * table.chunk) - i * table.chunk)};
      buffer.resize(size[0] * raw_size);
      Id file_space(H5Dget_space(id_), H5Sclose);
      Id memory_space(H5Screate_simple(1, size, nullptr), H5Sclose);
      if (H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, size, nullptr) < 0 ||
          H5Dread(id_, raw, memory_space, file_space, H5P_DEFAULT, buffer.data()) < 0)
        fail_input(file_, "cannot read chunk " + std::to_string(i) + " of " + path_);
      table.check(*this, i, i, buffer.data(), raw_size);
    }
  }
  Id file_space(H5Dget_space(id_), H5Sclose);
  const hsize_t start[1] = {static_cast<hsize_t>(offset)}, size[1] = {static_cast<hsize_t>(count)};
  if (H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, size, nullptr) < 0)
    fail_input(file_, "cannot select a slice of " + path_);
  Id memory_space(H5Screate_simple(1, size, nullptr), H5Sclose);
  if (H5Dread(id_, memory_type(memory), memory_space, file_space, H5P_DEFAULT, out) < 0)
    fail_input(file_, "cannot read a slice of " + path_);
}

std::vector<double> Dataset::read_doubles() const {
  init();
  const Dtype stored = dtype();
  if (!is_plain_float(stored) && !is_plain_integer(stored))
    throw InputError(file_ + ": dataset " + path_ + " holds " + to_string(stored) + ", expected numbers");
  std::vector<double> values(static_cast<size_t>(numel()));
  read_whole(*this, stored, H5T_NATIVE_DOUBLE, static_cast<int64_t>(values.size()), values.data(), &chunk_table());
  return values;
}

std::vector<int64_t> Dataset::read_ints() const {
  init();
  const Dtype stored = dtype();
  if (!is_plain_integer(stored))
    throw InputError(file_ + ": dataset " + path_ + " holds " + to_string(stored) + ", expected integers");
  std::vector<int64_t> values(static_cast<size_t>(numel()));
  read_whole(*this, stored, H5T_NATIVE_INT64, static_cast<int64_t>(values.size()), values.data(), &chunk_table());
  return values;
}

std::vector<std::string> Dataset::read_strings() const {
  init();
  const Dtype stored = dtype();
  if (stored != Dtype::string)
    throw InputError(file_ + ": dataset " + path_ + " holds " + to_string(stored) + ", expected strings");
  uint32_t expected = 0, computed = 0;
  bool computed_set = false;
  const bool verify = stored_checksum(*this, expected);
  auto values = read_string_data(id_, /*is_attribute=*/false, file_, "dataset " + path_, &computed, &computed_set);
  if (verify && computed_set) verify_checksum(*this, expected, computed);
  return values;
}

namespace {
/// Extends the chunk table of `dataset` (when it has one) by `count` elements of `size` bytes,
/// stored as `bytes`, appended after its first `before`: the CRC32C of a partial last chunk is
/// continued, each chunk begun gets its own.
void append_chunk_checksums(const Dataset& dataset, int64_t before, const unsigned char* bytes, int64_t count,
                            size_t size) {
  const int64_t chunk = chunk_table_length(dataset, fail_output);
  if (chunk == 0) return;
  const std::string name = dataset.path() + kChunkTableSuffix;
  Id table(H5Dopen2(dataset.id(), name.c_str(), dataset_access()), H5Dclose);
  if (!table.ok()) fail_output(dataset.file(), "cannot open " + name);
  const int64_t first = before / chunk;
  uint32_t crc = 0;
  if (before % chunk != 0) {  // continue the partial last chunk's CRC32C
    int64_t stored = 0;
    Id file_space(H5Dget_space(table), H5Sclose);
    const hsize_t start[1] = {static_cast<hsize_t>(first)}, one[1] = {1};
    Id memory_space(H5Screate_simple(1, one, nullptr), H5Sclose);
    if (H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, one, nullptr) < 0 ||
        H5Dread(table, H5T_NATIVE_INT64, memory_space, file_space, H5P_DEFAULT, &stored) < 0)
      fail_output(dataset.file(), "cannot read " + name);
    crc = static_cast<uint32_t>(stored);
  }
  std::vector<int64_t> entries;
  for (int64_t position = before, end = before + count; position < end;) {
    const int64_t take = std::min(end, (position / chunk + 1) * chunk) - position;
    crc = crc32c(bytes + static_cast<size_t>(position - before) * size, static_cast<size_t>(take) * size, crc);
    entries.push_back(crc);
    position += take;
    crc = 0;
  }
  const hsize_t extent[1] = {static_cast<hsize_t>(first) + entries.size()};
  if (H5Dset_extent(table, extent) < 0) fail_output(dataset.file(), "cannot extend " + name);
  Id file_space(H5Dget_space(table), H5Sclose);
  const hsize_t start[1] = {static_cast<hsize_t>(first)}, length[1] = {entries.size()};
  Id memory_space(H5Screate_simple(1, length, nullptr), H5Sclose);
  if (H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, length, nullptr) < 0 ||
      H5Dwrite(table, H5T_NATIVE_INT64, memory_space, file_space, H5P_DEFAULT, entries.data()) < 0)
    fail_output(dataset.file(), "cannot write " + name);
}
}  // namespace

void Dataset::append(const void* data, int64_t count, Dtype memory) {
  init();
  Id space(H5Dget_space(id_), H5Sclose);
  if (H5Sget_simple_extent_ndims(space) != 1) throw OutputError(file_ + ": cannot append to " + path_ + ": not 1-D");
  hsize_t dims[1], max_dims[1];
  H5Sget_simple_extent_dims(space, dims, max_dims);
  if (max_dims[0] != H5S_UNLIMITED)
    throw OutputError(file_ + ": cannot append to " + path_ + ": not created extendable");
  const Dtype stored = dtype();
  if (!convertible(stored, memory))
    throw OutputError(file_ + ": cannot append " + to_string(memory) + " values to " + path_ + " (" +
                      to_string(stored) + ")");
  if (count <= 0) return;
  // The values as stored, so that the checksum covers exactly the bytes written.
  const size_t stored_size = H5Tget_size(memory_type(stored)), memory_size = H5Tget_size(memory_type(memory));
  std::vector<unsigned char> converted;
  if (H5Tequal(memory_type(stored), memory_type(memory)) <= 0) {
    converted.resize(static_cast<size_t>(count) * std::max(stored_size, memory_size));
    std::memcpy(converted.data(), data, static_cast<size_t>(count) * memory_size);
    if (H5Tconvert(memory_type(memory), memory_type(stored), static_cast<size_t>(count), converted.data(), nullptr,
                   H5P_DEFAULT) < 0)
      fail_output(file_, "cannot convert the values appended to " + path_);
    data = converted.data();
    memory = stored;
  }
  const hsize_t size[1] = {dims[0] + static_cast<hsize_t>(count)};
  if (H5Dset_extent(id_, size) < 0) fail_output(file_, "cannot extend " + path_);
  Id file_space(H5Dget_space(id_), H5Sclose);
  const hsize_t start[1] = {dims[0]}, length[1] = {static_cast<hsize_t>(count)};
  H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, length, nullptr);
  Id memory_space(H5Screate_simple(1, length, nullptr), H5Sclose);
  if (H5Dwrite(id_, memory_type(memory), memory_space, file_space, H5P_DEFAULT, data) < 0)
    fail_output(file_, "cannot append to " + path_);
  // A dataset created before sinkgate stored checksums gets none (its earlier bytes are unknown).
  if (has_attribute(kChecksum)) {
    const auto previous = static_cast<uint32_t>(attribute_int(kChecksum));
    store_checksum(*this, crc32c(data, static_cast<size_t>(count) * stored_size, previous));
  }
  append_chunk_checksums(*this, static_cast<int64_t>(dims[0]), static_cast<const unsigned char*>(data), count,
                         stored_size);
}

void Dataset::append(const std::vector<uint16_t>& values) {
  append(values.data(), static_cast<int64_t>(values.size()), Dtype::uint16);
}
void Dataset::append(const std::vector<int32_t>& values) {
  append(values.data(), static_cast<int64_t>(values.size()), Dtype::int32);
}
void Dataset::append(const std::vector<int64_t>& values) {
  append(values.data(), static_cast<int64_t>(values.size()), Dtype::int64);
}
// --- File and Writer -----------------------------------------------------------------------

File File::open(const std::string& path) {
  init();
  const std::string name = display_name(path);
  if (!is_hdf5(path)) throw InputError(name + ": not an HDF5 file");
  const std::string local = resolve_input(path);
  // The headers first, on the bytes: libhdf5 decodes them while it opens objects, and has crashed
  // on headers edited with their checksums recomputed (h5_headers.h).
  const std::string problem = check_headers(local);
  if (!problem.empty()) throw InputError(name + ": " + problem, kNotOurs);
  const hid_t file = H5Fopen(local.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);  // opens: checked by is_hdf5 above
  if (file < 0) fail_input(name, "damaged or unreadable HDF5 file");
  try {
    check_structure(file, name);
  } catch (...) {
    H5Fclose(file);
    throw;
  }
  const hid_t root = H5Gopen2(file, "/", H5P_DEFAULT);
  H5Fclose(file);  // the file stays open while the root group (or anything in it) is open
  if (root < 0) fail_input(name, "cannot open the root group");
  return File(root, name, "/");
}

Writer::Writer(const std::string& path, bool force) : path_(path), force_(force) {
  init();
  check_writable(path, force);
  temporary_ = path == "-" ? make_temporary("sinkgate-stdout") : temporary_for(path);
  Id fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  keep_compact(fcpl, /*links=*/true);
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);  // commit() closes every object still open
  // The 1.10 file format or newer: every metadata structure (superblock, object headers, chunk
  // indexes, heaps of links and attributes) carries a checksum that the library verifies on
  // reading, so a damaged file is an error rather than a wild read. (The 1.8 format still indexes
  // chunks by version-1 B-trees, which have none: a damaged key there hid a chunk, and its data
  // read back as zeros.) HDF5 1.10 and later read it, h5py included.
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST);
  file_ = H5Fcreate(temporary_.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  if (file_ < 0) {
    const auto message = hdf5_message();
    std::remove(temporary_.c_str());
    throw OutputError("cannot create " + temporary_ + " (" + message + ")");
  }
  const hid_t root = H5Gopen2(file_, "/", H5P_DEFAULT);
  if (root < 0) fail_output(display_name(path), "cannot open the root group");
  root_ = Group(root, display_name(path), "/");
}

Writer::~Writer() {
  root_ = Group();
  if (file_ >= 0) H5Fclose(file_);
  if (!committed_) std::remove(temporary_.c_str());
}

void Writer::commit() {
  if (committed_) return;
  const std::string name = display_name(path_);
  root_ = Group();
  const herr_t closed = H5Fclose(file_);
  file_ = -1;
  if (closed < 0) fail_output(name, "cannot finish writing " + temporary_);
  if (path_ == "-") {
    std::ifstream in(temporary_, std::ios::binary);  // opens: its own temporary, copied out
    std::cout.flush();
    errno = 0;
    std::cout << in.rdbuf();
    std::cout.flush();
    const int error = errno;
    if (!std::cout && error == EPIPE) throw ReaderGone();
    if (!in) throw OutputError("cannot read back " + temporary_ + " to copy it to stdout");
    if (!std::cout) throw OutputError(stdout_failure_message(error));
    std::remove(temporary_.c_str());
    committed_ = true;
    return;
  }
  move_into_place(temporary_, path_, force_);
  committed_ = true;
}

// --- format convention ---------------------------------------------------------------------

void set_format(Group& root, const std::string& format, int64_t schema_version) {
  root.set_attribute("format", format);
  root.set_attribute("schema_version", schema_version);
}

int64_t check_format(const Group& root, const std::string& format, int64_t newest) {
  const std::string& file = root.file();
  const std::string hint = "this tool reads '" + format + "' files (lib/SCHEMA.md)";
  if (!root.has_attribute("format"))
    throw InputError(file + ": not a sinkgate file (no 'format' attribute on the root group)", hint);
  const std::string found = root.attribute_string("format");
  if (found != format) throw InputError(file + ": is a '" + found + "' file, expected '" + format + "'", hint);
  if (!root.has_attribute("schema_version"))
    throw InputError(file + ": '" + format + "' file without a 'schema_version' attribute", hint);
  const int64_t version = root.attribute_int("schema_version");
  if (version < 1 || version > newest)
    throw InputError(file + ": '" + format + "' schema_version " + std::to_string(version) +
                         " is not one this build reads (1 to " + std::to_string(newest) + ")",
                     "the file comes from another sinkgate version; this is " + std::string(kVersion) + " (" +
                         kGitCommit + ")");
  return version;
}

}  // namespace sg::h5
