// h5_structure.h — the structure check of File::open: a walk, through the HDF5 API, over every
// link and object of an open file that refuses what sinkgate never writes, naming the feature and
// the object's path: links other than hard links, committed datatypes, virtual datasets, external
// raw-data storage, filters other than Fletcher32, element types, ranks and sizes that
// lib/SCHEMA.md does not allow, sizes beyond the file's, and chunks never written (which HDF5
// would read as fill values). Nothing outside the file is opened on the way.
//
// Not here: the check of the object headers' bytes before the library opens the file
// (h5_headers.h), reading and writing the data (h5.h).
#pragma once
#include <cstdint>
#include <string>

namespace sg::h5 {

/// The hint of every refusal of a file that sinkgate did not write as it stands.
extern const char* const kNotOurs;

/// Throws InputError (with the hint kNotOurs) unless every link in the open file `file` (an HDF5
/// file identifier, hid_t) is a hard link and every object one that sinkgate writes (see the file
/// comment); `name` names the file in messages.
void check_structure(int64_t file, const std::string& name);

}  // namespace sg::h5
