// h5_headers.h — sinkgate's own check of an HDF5 file's object headers, made on its bytes before
// libhdf5 opens it.
//
// The 1.10 format checksums every metadata block, and libhdf5 trusts a block whose checksum holds.
// A header edited with its checksum recomputed (a buggy writer, a deliberate edit) is decoded as it
// stands, and libhdf5 1.10 has crashed (SIGSEGV) decoding such headers while a file opens, before
// any call of its API can see the object (docs/guarantees.md, "Header edits"). This check reads the
// superblock and every object header reachable from the root group — through hard links and
// continuation blocks, and for a group or attribute set in dense storage every checksummed header
// of the file — and refuses a header libhdf5 1.10 would not write for sinkgate: a message version or
// flag outside what it writes, a part that runs past its message, a shared message, an address
// outside the file or at a block of another kind, a chunk shape that disagrees with its dataset's
// rank or element size, a datatype class sinkgate never writes. Version-1 headers (no checksum; h5py
// writes them into a sinkgate file) are checked message by message alike.
//
// Not here: what the objects hold (File::open's walk through the API refuses links, layouts,
// filters, types, ranks and sizes sinkgate never writes, with the feature's name) and the data.
// Files of HDF5's oldest format (superblock 0 or 1: sinkgate 0.1, other writers) are left to the
// library, as before; so are the link messages inside a dense group's heap.
#pragma once
#include <string>

namespace sg::h5 {

/// "" when every object header of the HDF5 file at `path` (an existing regular file) passes the
/// check above, or when its superblock is of version 0 or 1; else the problem, led by the object's
/// path (or the header's byte offset), e.g. "/model/w's layout message has a chunk of rank 3 for a
/// dataset of rank 1". Throws nothing.
std::string check_headers(const std::string& path);

}  // namespace sg::h5
