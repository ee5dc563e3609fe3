// checksum.cpp — CRC32C: slice-by-8 tables, and SSE4.2's crc32 instruction where the CPU has it.
#include "lib/io/checksum.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define SG_CRC32C_X86 1
#endif

namespace sg {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli, bit-reflected

/// tables[0] is the byte-at-a-time table; tables[k][b] is the CRC of byte b followed by k zero bytes.
std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (kPolynomial & (0u - (crc & 1u)));
    tables[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b)
    for (size_t k = 1; k < 8; ++k) tables[k][b] = (tables[k - 1][b] >> 8) ^ tables[0][tables[k - 1][b] & 0xFFu];
  return tables;
}

const std::array<std::array<uint32_t, 256>, 8>& tables() {
  static const auto t = make_tables();
  return t;
}

/// The raw (not inverted) CRC state over `size` bytes, slice-by-8 on little-endian words.
uint32_t update_portable(uint32_t state, const unsigned char* p, size_t size) {
  const auto& t = tables();
  while (size >= 8) {
    uint32_t low, high;
    std::memcpy(&low, p, 4);
    std::memcpy(&high, p + 4, 4);
    low ^= state;
    state = t[7][low & 0xFF] ^ t[6][(low >> 8) & 0xFF] ^ t[5][(low >> 16) & 0xFF] ^ t[4][low >> 24] ^
            t[3][high & 0xFF] ^ t[2][(high >> 8) & 0xFF] ^ t[1][(high >> 16) & 0xFF] ^ t[0][high >> 24];
    p += 8;
    size -= 8;
  }
  while (size-- > 0) state = (state >> 8) ^ t[0][(state ^ *p++) & 0xFF];
  return state;
}

#ifdef SG_CRC32C_X86
__attribute__((target("sse4.2"))) uint32_t update_hardware(uint32_t state, const unsigned char* p, size_t size) {
  uint64_t wide = state;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    wide = _mm_crc32_u64(wide, word);
    p += 8;
    size -= 8;
  }
  auto narrow = static_cast<uint32_t>(wide);
  while (size-- > 0) narrow = _mm_crc32_u8(narrow, *p++);
  return narrow;
}
#endif

}  // namespace

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the slice-by-8 loads assume a little-endian host");

bool crc32c_has_hardware() {
#ifdef SG_CRC32C_X86
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
#else
  return false;
#endif
}

uint32_t crc32c_portable(const void* data, size_t size, uint32_t previous) {
  return ~update_portable(~previous, static_cast<const unsigned char*>(data), size);
}

uint32_t crc32c_hardware(const void* data, size_t size, uint32_t previous) {
#ifdef SG_CRC32C_X86
  if (crc32c_has_hardware()) return ~update_hardware(~previous, static_cast<const unsigned char*>(data), size);
#endif
  return crc32c_portable(data, size, previous);
}

uint32_t crc32c(const void* data, size_t size, uint32_t previous) {
  return crc32c_has_hardware() ? crc32c_hardware(data, size, previous) : crc32c_portable(data, size, previous);
}

namespace {
uint32_t rotate(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }
uint32_t little_word(const unsigned char* p) { return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24); }
}  // namespace

uint32_t lookup3(const void* data, size_t size, uint32_t initial) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t a = 0xDEADBEEFu + static_cast<uint32_t>(size) + initial, b = a, c = a;
  while (size > 12) {  // mix()
    a += little_word(p);
    b += little_word(p + 4);
    c += little_word(p + 8);
    a -= c; a ^= rotate(c, 4);  c += b;
    b -= a; b ^= rotate(a, 6);  a += c;
    c -= b; c ^= rotate(b, 8);  b += a;
    a -= c; a ^= rotate(c, 16); c += b;
    b -= a; b ^= rotate(a, 19); a += c;
    c -= b; c ^= rotate(b, 4);  b += a;
    size -= 12;
    p += 12;
  }
  if (size == 0) return c;
  unsigned char tail[12] = {};
  std::memcpy(tail, p, size);
  a += little_word(tail);
  b += little_word(tail + 4);
  c += little_word(tail + 8);
  c ^= b; c -= rotate(b, 14);  // final()
  a ^= c; a -= rotate(c, 11);
  b ^= a; b -= rotate(a, 25);
  c ^= b; c -= rotate(b, 16);
  a ^= c; a -= rotate(c, 4);
  b ^= a; b -= rotate(a, 14);
  c ^= b; c -= rotate(b, 24);
  return c;
}

}  // namespace sg
