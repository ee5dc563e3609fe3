// h5_api.h — what the HDF5 modules of io/ (h5, h5_structure) share of the HDF5 C API: the
// library's start-up, a scoped identifier, and the error stack as a message. Only the h5 modules
// include this header, and with it hdf5.h (tests/layers.cmake holds every other file to that).
//
// Not here: anything a caller outside io/h5* sees (h5.h).
#pragma once
#include <hdf5.h>

#include <string>

namespace sg::h5 {

/// The attribute holding a dataset's CRC32C (lib/SCHEMA.md, "General conventions").
inline constexpr const char* kChecksumAttribute = "sg_crc32c";

/// Starts the library once per thread: no automatic error printing, no exit-time closing of files
/// that our own code did not close (see h5_api.cpp).
void init();

/// The current HDF5 error stack as one line (API-level message: innermost cause), then cleared.
std::string hdf5_message();

/// InputError / OutputError "file: what (HDF5's message)".
[[noreturn]] void fail_input(const std::string& file, const std::string& what);
[[noreturn]] void fail_output(const std::string& file, const std::string& what);

/// A temporary HDF5 identifier (type, dataspace, property list, attribute) closed on scope exit.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id(Id&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Id& operator=(Id&&) = delete;
  operator hid_t() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

}  // namespace sg::h5
