// Tests of lib/io/checksum: CRC32C against the standard check value and other published vectors
// (RFC 3720's iSCSI examples), the hardware and portable paths against each other and against a
// bit-at-a-time reference, and continuation across pieces.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/io/checksum.h"

namespace {
/// The textbook bit-at-a-time CRC32C: the independent reference.
uint32_t reference(const std::vector<unsigned char>& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}
}  // namespace

TEST_CASE("CRC32C gives the published check values on both paths") {
  const std::string check = "123456789";
  CHECK(sg::crc32c(check.data(), check.size()) == 0xE3069283u);
  CHECK(sg::crc32c_portable(check.data(), check.size()) == 0xE3069283u);
  CHECK(sg::crc32c_hardware(check.data(), check.size()) == 0xE3069283u);
  // RFC 3720, B.4: 32 bytes of zeros, of 0xFF, ascending and descending.
  std::vector<unsigned char> zeros(32, 0), ones(32, 0xFF), up(32), down(32);
  for (int i = 0; i < 32; ++i) up[i] = static_cast<unsigned char>(i), down[i] = static_cast<unsigned char>(31 - i);
  for (auto f : {sg::crc32c_portable, sg::crc32c_hardware}) {
    CHECK(f(zeros.data(), 32, 0) == 0x8A9136AAu);
    CHECK(f(ones.data(), 32, 0) == 0x62A8AB43u);
    CHECK(f(up.data(), 32, 0) == 0x46DD794Eu);
    CHECK(f(down.data(), 32, 0) == 0x113FDB5Cu);
  }
  CHECK(sg::crc32c(nullptr, 0) == 0u);
  INFO("SSE4.2 on this CPU: " << sg::crc32c_has_hardware());
}

TEST_CASE("CRC32C: both paths agree with the bit-at-a-time reference at every length and alignment, and continue across pieces") {
  std::mt19937 random(7);
  std::vector<unsigned char> bytes(4096 + 16);
  for (auto& b : bytes) b = static_cast<unsigned char>(random());
  for (size_t length : {0, 1, 7, 8, 9, 15, 16, 63, 64, 65, 1000, 4096}) {
    for (size_t offset : {0, 1, 3, 8}) {
      const std::vector<unsigned char> piece(bytes.begin() + offset, bytes.begin() + offset + length);
      const uint32_t want = reference(piece);
      INFO("length " << length << ", offset " << offset);
      CHECK(sg::crc32c_portable(bytes.data() + offset, length) == want);
      CHECK(sg::crc32c_hardware(bytes.data() + offset, length) == want);
      for (size_t cut : {size_t{0}, length / 3, length}) {
        const uint32_t first = sg::crc32c(bytes.data() + offset, cut);
        CHECK(sg::crc32c(bytes.data() + offset + cut, length - cut, first) == want);
        CHECK(sg::crc32c_portable(bytes.data() + offset + cut, length - cut, sg::crc32c_hardware(bytes.data() + offset, cut)) == want);
      }
    }
  }
}

TEST_CASE("lookup3 gives Jenkins' published values (HDF5's metadata checksum)") {
  // driver5() of Bob Jenkins' lookup3.c.
  CHECK(sg::lookup3("", 0) == 0xDEADBEEFu);
  CHECK(sg::lookup3("", 0, 0xDEADBEEFu) == 0xBD5B7DDEu);
  const std::string text = "Four score and seven years ago";
  CHECK(sg::lookup3(text.data(), text.size()) == 0x17770551u);
  CHECK(sg::lookup3(text.data(), text.size(), 1) == 0xCD628161u);
}
