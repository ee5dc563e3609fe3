// checksum.h — CRC32C (Castagnoli), the checksum lib/io/h5 stores with every dataset it writes; and
// lookup3, the one HDF5 keeps on its own metadata (lib/io/h5_headers verifies it).
//
// CRC32C rather than HDF5's Fletcher32: Fletcher32 of a zero-filled chunk is zero, so a lost
// write that left zeros over a whole chunk and its checksum passes it; CRC32C (reflected
// polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF) of zeros is not zero, and
// x86-64's SSE4.2 computes it at several GB/s. The hardware path is taken when the CPU has it
// (checked at run time); the portable one (slice-by-8 tables) gives the same values.
//
// Not here: where the checksum is stored and when it is verified (h5.cpp, lib/SCHEMA.md).
#pragma once
#include <cstddef>
#include <cstdint>

namespace sg {

/// The CRC32C of `size` bytes at `data`, continuing `previous` — the CRC32C of the bytes before
/// them (0 for none) — so that crc32c(b, n, crc32c(a, m)) equals the CRC32C of a then b.
/// crc32c("123456789", 9) == 0xE3069283 (the standard check value).
uint32_t crc32c(const void* data, size_t size, uint32_t previous = 0);

/// The same by the portable table-driven code alone, and by SSE4.2 alone (tests compare them;
/// crc32c_hardware falls back to the portable code on a CPU without SSE4.2).
uint32_t crc32c_portable(const void* data, size_t size, uint32_t previous = 0);
uint32_t crc32c_hardware(const void* data, size_t size, uint32_t previous = 0);

/// Whether crc32c() takes the SSE4.2 path on this CPU.
bool crc32c_has_hardware();

/// Bob Jenkins' lookup3 `hashlittle` of `size` bytes at `data` with `initial` — HDF5's checksum of
/// every metadata block of the 1.10 format (H5_checksum_metadata: initial 0, over the block less its
/// last 4 bytes). lookup3("", 0) == 0xDEADBEEF; lookup3("Four score and seven years ago", 30) ==
/// 0x17770551 (Jenkins' published values).
uint32_t lookup3(const void* data, size_t size, uint32_t initial = 0);

}  // namespace sg
