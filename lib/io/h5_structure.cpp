// h5_structure.cpp — the structure check of File::open (see h5_structure.h).
#include "lib/io/h5_structure.h"

#include <algorithm>
#include <vector>

#include "lib/base/error.h"
#include "lib/io/h5_api.h"

namespace sg::h5 {
namespace {

/// The deepest rank a sinkgate dataset or attribute has (weights are 2-D, optimizer state too).
constexpr int kMaxRank = 8;

/// A hard link met by the walk: the object's address and the first path that reaches it.
struct Visit {
  std::vector<std::pair<std::string, haddr_t>> hard;
  std::string refused;  // "path: what", the first link that is not a hard link
};

herr_t visit_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* visit = static_cast<Visit*>(data);
  const std::string path = std::string("/") + name;
  if (info->type == H5L_TYPE_HARD) {
    visit->hard.emplace_back(path, info->u.address);
    return 0;
  }
  visit->refused = path + " is " +
                   (info->type == H5L_TYPE_SOFT       ? std::string("a soft link")
                    : info->type == H5L_TYPE_EXTERNAL ? std::string("an external link (to another file)")
                                                      : "a user-defined link (type " + std::to_string(info->type) + ")");
  return 1;  // stop: one refusal is enough
}

/// Why `type` is not an element type sinkgate stores, or "" when it is one: integers of 1, 2, 4
/// or 8 bytes, IEEE floats of 4 or 8, strings (fixed length of at most `max_string` bytes, or
/// variable length).
std::string unsupported_type(hid_t type, uint64_t max_string) {
  const H5T_class_t type_class = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  switch (type_class) {
    case H5T_INTEGER:
      if (size == 1 || size == 2 || size == 4 || size == 8) return "";
      return "an integer type of " + std::to_string(size) + " bytes";
    case H5T_FLOAT: {
      if (size != 4 && size != 8) return "a float type of " + std::to_string(size) + " bytes";
      Id ieee(H5Tcopy(size == 4 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE), H5Tclose);
      size_t sign = 0, exponent = 0, exponent_bits = 0, mantissa = 0, mantissa_bits = 0;
      size_t want[5] = {0, 0, 0, 0, 0};
      H5Tget_fields(type, &sign, &exponent, &exponent_bits, &mantissa, &mantissa_bits);
      H5Tget_fields(ieee, &want[0], &want[1], &want[2], &want[3], &want[4]);
      if (sign != want[0] || exponent != want[1] || exponent_bits != want[2] || mantissa != want[3] ||
          mantissa_bits != want[4] || H5Tget_ebias(type) != H5Tget_ebias(ieee))
        return "a float type that is not IEEE binary" + std::to_string(size * 8);
      return "";
    }
    case H5T_STRING:
      if (H5Tis_variable_str(type) > 0) return "";
      if (size == 0 || size > max_string) return "a string type of " + std::to_string(size) + " bytes";
      return "";
    case H5T_COMPOUND: return "a compound type";
    case H5T_ENUM: return "an enum type";
    case H5T_VLEN: return "a variable-length sequence type";
    case H5T_ARRAY: return "an array type";
    case H5T_REFERENCE: return "a reference type";
    case H5T_OPAQUE: return "an opaque type";
    case H5T_BITFIELD: return "a bitfield type";
    case H5T_TIME: return "a time type";
    default: return "an unknown type";
  }
}

/// The element count of a dataspace, or -1 with `why` set when it is not one sinkgate writes
/// (null, scalar, or simple of rank at most kMaxRank) or its count overflows.
int64_t space_count(hid_t space, std::string& why) {
  const H5S_class_t space_class = H5Sget_simple_extent_type(space);
  if (space_class == H5S_NULL) return 0;
  if (space_class == H5S_SCALAR) return 1;
  if (space_class != H5S_SIMPLE) {
    why = "an unknown kind of dataspace";
    return -1;
  }
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0 || rank > kMaxRank) {
    why = std::to_string(rank) + " dimensions (sinkgate writes at most " + std::to_string(kMaxRank) + ")";
    return -1;
  }
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0) {
    why = "an unreadable shape";
    return -1;
  }
  uint64_t count = 1;
  for (const hsize_t d : dims) {
    if (d > (uint64_t{1} << 62) || (d > 0 && count > (uint64_t{1} << 62) / d)) {
      why = "an impossible shape";
      return -1;
    }
    count *= d;
  }
  return static_cast<int64_t>(count);
}

/// The structure check's state: the file's name and size, and the first problem found.
struct Check {
  std::string file;
  uint64_t file_bytes = 0;
  std::string problem;  // "path: what"
  bool dataset = false, checksum = false;  // of the object check_object looked at last
};

herr_t check_attribute(hid_t object, const char* name, const H5A_info_t*, void* data) {
  auto* check = static_cast<Check*>(data);
  const std::string where = std::string("attribute '") + name + "'";
  Id attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  Id type(attribute.ok() ? H5Aget_type(attribute) : -1, H5Tclose);
  Id space(attribute.ok() ? H5Aget_space(attribute) : -1, H5Sclose);
  if (!type.ok() || !space.ok()) {
    check->problem = "'s " + where + " cannot be read (" + hdf5_message() + ")";
    return 1;
  }
  std::string why = unsupported_type(type, check->file_bytes);
  const int64_t count = why.empty() ? space_count(space, why) : 0;
  const uint64_t element = H5Tis_variable_str(type) > 0 ? 16 : H5Tget_size(type);
  if (why.empty() && check->file_bytes > 0 && element > 0 && static_cast<uint64_t>(count) > check->file_bytes / element)
    why = "a size of " + std::to_string(count) + " × " + std::to_string(element) + " bytes, more than the file holds";
  if (!why.empty()) {
    check->problem = "'s " + where + " has " + why;
    return 1;
  }
  return 0;
}

/// How a dataset is stored (its creation properties): "" or the problem. Sets *filters to the
/// number of its filters.
std::string check_storage(hid_t dcpl, int* filters) {
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout == H5D_VIRTUAL) return " is a virtual dataset (its data would come from other datasets or files)";
  if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT)
    return " is a dataset of an unknown storage layout (" + std::to_string(layout) + ")";
  if (H5Pget_external_count(dcpl) != 0)
    return " is a dataset with external raw-data storage (its data would be read from other files)";
  *filters = H5Pget_nfilters(dcpl);
  for (int i = 0; i < *filters; ++i) {
    unsigned flags = 0, values[8];
    size_t elements = 8;
    char filter_name[64] = "";
    const H5Z_filter_t filter =
        H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &elements, values, sizeof filter_name, filter_name, nullptr);
    if (filter != H5Z_FILTER_FLETCHER32)
      return " is a dataset with the filter " + std::to_string(filter) + (*filter_name ? " (" + std::string(filter_name) + ")" : "") +
             " (sinkgate writes Fletcher32 alone)";
  }
  return "";
}

/// Whether every chunk of a chunked dataset is stored whole: "" or the problem. Chunk by chunk
/// rather than H5Dget_storage_size: that walks the chunk index up to a bound the index's header
/// states, and a header edited to a huge bound (checksum recomputed) made it loop for hours; a
/// lookup per chunk origin is bounded by the chunk count, itself bounded by the file's size.
std::string check_chunks(hid_t object, hid_t space, hid_t dcpl, uint64_t element, bool filtered, const Check& check) {
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0))), chunk(dims.size());
  if (rank <= 0 || H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0 || H5Pget_chunk(dcpl, rank, chunk.data()) != rank)
    return "'s chunk shape cannot be read (" + hdf5_message() + ")";
  uint64_t chunks = 1, chunk_elements = 1;
  for (int i = 0; i < rank; ++i) {
    if (chunk[i] == 0) return " is a dataset with an empty chunk shape";
    chunks *= (dims[i] + chunk[i] - 1) / chunk[i];  // at most the element count: no overflow
    chunk_elements = std::min<uint64_t>(chunk_elements * chunk[i], uint64_t{1} << 40);
  }
  const uint64_t chunk_bytes = chunk_elements * element + (filtered ? 4 : 0);
  const uint64_t expected = chunks * chunk_bytes;
  if (chunk_elements >= (uint64_t{1} << 40) || expected / chunks != chunk_bytes)
    return " is a dataset with chunks of an impossible size";
  if (check.file_bytes > 0 && expected > check.file_bytes)
    return " is a dataset of " + std::to_string(chunks) + " chunks of " + std::to_string(chunk_bytes) +
           " bytes, more than the file's " + std::to_string(check.file_bytes) + " bytes hold";
  std::vector<hsize_t> origin(dims.size(), 0);
  for (uint64_t n = 0; n < chunks; ++n) {
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(object, origin.data(), &mask, &address, &size) < 0)
      return "'s chunk index cannot be read (" + hdf5_message() + ")";
    if (address == HADDR_UNDEF || size != chunk_bytes) {
      std::string at;
      for (size_t i = 0; i < origin.size(); ++i) at += (i ? ", " : "") + std::to_string(origin[i]);
      return " is a dataset whose chunk at [" + at + "] " +
             (address == HADDR_UNDEF ? std::string("was never written")
                                     : "stores " + std::to_string(size) + " of its " + std::to_string(chunk_bytes) + " bytes") +
             " (chunks never written, or lost, would read as fill values)";
    }
    for (size_t i = origin.size(); i-- > 0;) {  // the next chunk origin, the last dimension fastest
      origin[i] += chunk[i];
      if (origin[i] < dims[i]) break;
      origin[i] = 0;
    }
  }
  return "";
}

/// A dataset's storage, type, shape and stored size: "" or the problem.
std::string check_dataset(hid_t object, const Check& check) {
  Id dcpl(H5Dget_create_plist(object), H5Pclose);
  if (!dcpl.ok()) return "'s storage properties cannot be read (" + hdf5_message() + ")";
  int filters = 0;
  if (std::string problem = check_storage(dcpl, &filters); !problem.empty()) return problem;
  Id type(H5Dget_type(object), H5Tclose);
  Id space(H5Dget_space(object), H5Sclose);
  if (!type.ok() || !space.ok()) return "'s type or shape cannot be read (" + hdf5_message() + ")";
  if (H5Tcommitted(type) > 0) return " is a dataset of a committed (shared) datatype";
  std::string why = unsupported_type(type, check.file_bytes);
  if (!why.empty()) return " is a dataset of " + why;
  const int64_t count = space_count(space, why);
  if (count < 0) return " is a dataset of " + why;
  // Before anything walks the chunk index: a huge extent over a few stored chunks (a sparse
  // dataset) is refused by its size, which an index of 10^12 slots would take hours to list.
  const bool variable = H5Tis_variable_str(type) > 0;
  const uint64_t element = variable ? 16 : H5Tget_size(type);
  if (check.file_bytes > 0 && element > 0 && static_cast<uint64_t>(count) > check.file_bytes / element)
    return " is a dataset of " + std::to_string(count) + " elements of " + std::to_string(element) +
           " bytes, more than the file's " + std::to_string(check.file_bytes) + " bytes hold (a sparse or damaged dataset)";
  // Every chunk of a sinkgate dataset is written: storage short of the shape means chunks never
  // written (sparse) or lost, whose elements HDF5 would quietly read as the fill value. A chunked
  // dataset stores every chunk whole (edge chunks too), each with Fletcher32's 4 bytes.
  if (variable || count == 0) return "";
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) return check_chunks(object, space, dcpl, element, filters > 0, check);
  const uint64_t expected = static_cast<uint64_t>(count) * element;
  const uint64_t stored = H5Dget_storage_size(object);
  if (stored < expected)
    return " is a dataset that stores " + std::to_string(stored) + " of its " + std::to_string(expected) +
           " bytes (chunks never written, or lost, would read as fill values)";
  return "";
}

/// Checks the attributes of `object`, then, for a dataset, how and where its data are stored.
/// Returns "" or the problem.
std::string check_object(hid_t object, Check& check) {
  hsize_t index = 0;
  if (H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_NATIVE, &index, check_attribute, &check) < 0)
    return "'s attributes cannot be listed (" + hdf5_message() + ")";
  if (!check.problem.empty()) return check.problem;
  const H5I_type_t kind = H5Iget_type(object);
  check.dataset = kind == H5I_DATASET;
  check.checksum = check.dataset && H5Aexists(object, kChecksumAttribute) > 0;
  if (kind == H5I_DATATYPE) return " is a committed datatype (sinkgate files hold groups and datasets only)";
  if (kind != H5I_DATASET) return "";
  return check_dataset(object, check);
}

}  // namespace

const char* const kNotOurs =
    "sinkgate reads only what its own tools write; was the file changed by another program? Write it again with the tool that made it";

void check_structure(int64_t file, const std::string& name) {
  const std::string hint = kNotOurs;
  Id root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
  if (!root.ok()) fail_input(name, "cannot open the root group");
  Visit visit;
  if (H5Lvisit(root, H5_INDEX_NAME, H5_ITER_NATIVE, visit_link, &visit) < 0)
    fail_input(name, "cannot list the file's groups");
  if (!visit.refused.empty())
    throw InputError(name + ": " + visit.refused + ", which sinkgate files never contain (they hold hard links only)", hint);
  Check check;
  check.file = name;
  hsize_t size = 0;
  if (H5Fget_filesize(file, &size) >= 0) check.file_bytes = size;
  std::string problem = check_object(root, check);
  if (!problem.empty()) throw InputError(name + ": /" + problem, hint);
  std::vector<haddr_t> seen;
  seen.reserve(visit.hard.size());
  for (const auto& [path, address] : visit.hard) seen.push_back(address);
  std::sort(seen.begin(), seen.end());
  std::vector<bool> done(seen.size(), false);
  // The file-level rule of the checksums: a file that carries sg_crc32c on any dataset was written
  // by a version that writes it on every dataset (all but the chunk tables, which carry none), so
  // a dataset without one there lost it; only a file with none at all (sinkgate 0.2.0 and earlier,
  // or another program) is read unverified.
  std::string first_checksummed, first_without;
  const auto is_chunk_table = [](const std::string& path) {
    const std::string suffix = "_chunk_crc32c";
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const auto& [path, address] : visit.hard) {
    const size_t at = static_cast<size_t>(std::lower_bound(seen.begin(), seen.end(), address) - seen.begin());
    if (done[at]) continue;  // a second hard link to an object already checked
    done[at] = true;
    Id object(H5Oopen_by_addr(file, address), H5Oclose);
    if (!object.ok()) fail_input(name, "cannot open " + path);
    problem = check_object(object, check);
    if (!problem.empty()) throw InputError(name + ": " + path + problem, hint);
    if (check.dataset && check.checksum && first_checksummed.empty()) first_checksummed = path;
    if (check.dataset && !check.checksum && first_without.empty() && !is_chunk_table(path)) first_without = path;
  }
  if (!first_checksummed.empty() && !first_without.empty())
    throw InputError(name + ": dataset " + first_without + " has no " + kChecksumAttribute + " attribute, though " +
                         first_checksummed + " has one: the version that wrote the file gives every dataset its "
                         "checksum, so this one was removed and its data cannot be verified",
                     "the file was changed after it was written; write it again with the tool that made it");
}

}  // namespace sg::h5
