// Tests of lib/io/h5_headers: files written by lib/io/h5 pass; header edits with their checksums
// recomputed, each of a kind that crashed libhdf5 1.10 inside H5Fopen's walk (docs/guarantees.md),
// are refused by File::open naming the file and the field. The edits are made here on the bytes,
// by a parser of the format written for this test; libhdf5 itself shows the resealing right (an
// edit of free space, resealed, still opens).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "lib/base/error.h"
#include "lib/io/checksum.h"
#include "lib/io/h5.h"
#include "lib/io/h5_headers.h"
#include "tests/support.h"

using sg::h5::Dtype;
using sg_test::Scratch;
using sg_test::slurp;

namespace {

using Bytes = std::vector<uint8_t>;

Bytes read_bytes(const std::string& path) {
  const std::string text = slurp(path);
  return Bytes(text.begin(), text.end());
}

void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

uint64_t little(const Bytes& b, size_t at, int width) {
  uint64_t value = 0;
  for (int i = 0; i < width; ++i) value |= uint64_t{b[at + i]} << (8 * i);
  return value;
}

void put(Bytes& b, size_t at, int width, uint64_t value) {
  for (int i = 0; i < width; ++i) b[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

/// One message of a version-2 header chunk: where its header and body lie, and the checksummed
/// block (OHDR or OCHK) that holds it.
struct Found {
  unsigned type;
  size_t head;  // the message's 4- or 6-byte header
  size_t body;
  size_t size;
  size_t block_start, block_end;  // the block, its checksum in the last 4 bytes
};

bool sealed(const Bytes& b, size_t start, size_t end) {
  return end <= b.size() && end >= start + 8 && sg::lookup3(b.data() + start, end - start - 4) == little(b, end - 4, 4);
}

void reseal(Bytes& b, size_t start, size_t end) { put(b, end - 4, 4, sg::lookup3(b.data() + start, end - start - 4)); }

void messages_of(const Bytes& b, size_t from, size_t to, bool order, size_t start, size_t end, std::vector<Found>& out,
                 std::vector<std::pair<size_t, size_t>>& continuations) {
  const size_t head = order ? 6 : 4;
  for (size_t at = from; at + head <= to;) {
    const size_t size = little(b, at + 1, 2);
    if (at + head + size > to) break;
    out.push_back({b[at], at, at + head, size, start, end});
    if (b[at] == 0x10) continuations.emplace_back(little(b, at + head, 8), little(b, at + head + 8, 8));
    at += head + size;
  }
}

/// Every message of every version-2 header of the file (found by signature and checksum) and of
/// the continuation blocks they name.
std::vector<Found> all_messages(const Bytes& b) {
  std::vector<Found> out;
  for (size_t at = 0; at + 8 < b.size(); ++at) {
    if (std::memcmp(b.data() + at, "OHDR", 4) != 0 || b[at + 4] != 2) continue;
    const unsigned flags = b[at + 5];
    const size_t fields = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
    const int width = 1 << (flags & 3);
    const size_t size = little(b, at + fields, width);
    const size_t end = at + fields + width + size + 4;
    if (!sealed(b, at, end)) continue;
    std::vector<std::pair<size_t, size_t>> continuations;
    messages_of(b, at + fields + width, end - 4, flags & 4, at, end, out, continuations);
    while (!continuations.empty()) {
      const auto [chunk, length] = continuations.back();
      continuations.pop_back();
      if (std::memcmp(b.data() + chunk, "OCHK", 4) == 0 && sealed(b, chunk, chunk + length))
        messages_of(b, chunk + 4, chunk + length - 4, flags & 4, chunk, chunk + length, out, continuations);
    }
  }
  return out;
}

const Found& first(const std::vector<Found>& messages, unsigned type) {
  for (const auto& m : messages)
    if (m.type == type) return m;
  FAIL("no message of type " << type << " in the file");
  return messages.front();
}

/// A file like the ones sinkgate writes: a 2-D float weight, curves, strings, a token stream, and
/// enough attributes on the root to push its header into a continuation block.
void write_sample(const std::string& path) {
  sg::h5::Writer writer(path, false);
  auto& root = writer.root();
  sg::h5::set_format(root, "sinkgate-run", 1);
  std::vector<float> w(64 * 32, 0.25f);
  root.write_array("model/w", Dtype::float32, {64, 32}, w.data());
  root.write_doubles("curves/val_loss", {5.255, 5.1, 4.9});
  root.write_ints("curves/step", {1, 2, 3});
  root.write_strings("table/arm", {"baseline", "combo2"});
  auto tokens = root.create_extendable("tokens/train", Dtype::uint16, 256);
  tokens.append(std::vector<uint16_t>(700, 7));
  for (int i = 0; i < 40; ++i) root.set_attribute("note_" + std::to_string(i), std::string(40, 'a' + i % 26));
  writer.commit();
}

std::string open_error(const std::string& path) {
  try {
    sg::h5::File::open(path);
  } catch (const sg::InputError& e) {
    return e.what();
  }
  return "(opened)";
}

}  // namespace

TEST_CASE("lib/io/h5's own files pass the header check, and lookup3 reseals a header as libhdf5 checks it") {
  Scratch scratch;
  const auto path = scratch / "sample.h5";
  write_sample(path);
  CHECK(sg::h5::check_headers(path).empty());
  REQUIRE_NOTHROW(sg::h5::File::open(path));
  const Bytes good = read_bytes(path);
  const auto messages = all_messages(good);
  REQUIRE(messages.size() > 50);
  // A continuation block is there (the root's 40 attributes), so its edits below reach one.
  const Found& continuation = first(messages, 0x10);
  CHECK(std::memcmp(good.data() + little(good, continuation.body, 8), "OCHK", 4) == 0);

  // Free space (a NIL message) changed and resealed: libhdf5 opens it, so the reseal is its checksum.
  Bytes edited = good;
  const Found& nil = first(messages, 0x00);
  REQUIRE(nil.size > 0);
  edited[nil.body] ^= 0x5A;
  reseal(edited, nil.block_start, nil.block_end);
  const auto resealed = scratch / "nil.h5";
  write_bytes(resealed, edited);
  CHECK(sg::h5::check_headers(resealed).empty());
  CHECK_NOTHROW(sg::h5::File::open(resealed).dataset("model/w").read_doubles());

  // Not resealed: the check refuses it by its checksum before libhdf5 sees it.
  edited = good;
  edited[nil.body] ^= 0x5A;
  const auto damaged = scratch / "damaged.h5";
  write_bytes(damaged, edited);
  CHECK_THAT(sg::h5::check_headers(damaged), Catch::Contains("fails its checksum"));
}

TEST_CASE("header edits with their checksums recomputed are refused, naming the file and the field") {
  Scratch scratch;
  const auto path = scratch / "sample.h5";
  write_sample(path);
  const Bytes good = read_bytes(path);
  const auto messages = all_messages(good);
  constexpr uint64_t kUndefined = ~uint64_t{0};

  struct Case {
    const char* name;
    std::function<void(Bytes&)> edit;  // resealing the block it edits
    const char* expected;
  };
  auto in_message = [&](unsigned type, std::function<void(Bytes&, const Found&)> change) {
    return [&messages, type, change](Bytes& b) {
      const Found& m = first(messages, type);
      change(b, m);
      reseal(b, m.block_start, m.block_end);
    };
  };
  const std::vector<Case> cases = {
      // The attribute-info message's heap address (version, flags, heap): set to the superblock's end.
      {"attribute info: a heap address", in_message(0x15, [](Bytes& b, const Found& m) {
         put(b, m.body + 2 + ((b[m.body + 1] & 1) ? 2 : 0), 8, 48);
       }), "where no 'FRHP' block begins"},
      // An attribute's name size (version 3: version, flags, name size) past its message.
      {"attribute: the name size", in_message(0x0C, [](Bytes& b, const Found& m) { put(b, m.body + 2, 2, 0x7000); }),
       "runs past its end"},
      // An attribute's name made unterminated: its size shortened by one.
      {"attribute: an unterminated name", in_message(0x0C, [](Bytes& b, const Found& m) {
         put(b, m.body + 2, 2, little(b, m.body + 2, 2) - 1);
       }), "not one NUL-terminated string"},
      // An attribute's datatype version.
      {"attribute: its datatype's version", in_message(0x0C, [](Bytes& b, const Found& m) {
         const size_t type = m.body + 9 + little(b, m.body + 2, 2);
         b[type] = static_cast<uint8_t>(b[type] & 0x0F);
       }), "is of version 0"},
      // A link's name length set to 0 (version, flags, [type], [order], [charset], length).
      {"link: an empty name", in_message(0x06, [](Bytes& b, const Found& m) {
         const unsigned flags = b[m.body + 1];
         size_t at = m.body + 2 + ((flags & 8) ? 1 : 0) + ((flags & 4) ? 8 : 0) + ((flags & 16) ? 1 : 0);
         put(b, at, 1 << (flags & 3), 0);
       }), "has an empty name"},
      {"link: a reserved link type", in_message(0x06, [](Bytes& b, const Found& m) {
         REQUIRE((b[m.body + 1] & 8) == 0);  // a hard link: no type byte written
         b[m.body + 1] = static_cast<uint8_t>(b[m.body + 1] | 0x20);
       }), "bits 5 to 7 are reserved"},
      {"link info: a heap address", in_message(0x02, [](Bytes& b, const Found& m) {
         put(b, m.body + 2 + ((b[m.body + 1] & 1) ? 8 : 0), 8, 48);
       }), "where no 'FRHP' block begins"},
      {"dataspace: marked shared", in_message(0x01, [](Bytes& b, const Found& m) { b[m.head + 3] |= 0x02; }),
       "marked shared"},
      {"dataspace: 40 dimensions", in_message(0x01, [](Bytes& b, const Found& m) { b[m.body + 1] = 40; }),
       "40 dimensions"},
      {"layout: a chunk dimension of 0", in_message(0x08, [](Bytes& b, const Found& m) {
         REQUIRE(b[m.body] == 4);
         REQUIRE(b[m.body + 1] == 2);
         put(b, m.body + 5, b[m.body + 4], 0);
       }), "chunk dimension of 0"},
      {"layout: a chunk rank that is not the dataset's", in_message(0x08, [](Bytes& b, const Found& m) {
         // dimensionality one less, the element-size dimension dropped: the message stays parseable
         b[m.body + 3] = static_cast<uint8_t>(b[m.body + 3] - 1);
       }), "layout message"},
      {"continuation: an address past the end", in_message(0x10, [](Bytes& b, const Found& m) {
         put(b, m.body, 8, kUndefined);
       }), "past the end of the file"},
      {"continuation: 2 bytes long", in_message(0x10, [](Bytes& b, const Found& m) { put(b, m.body + 8, 8, 2); }),
       "too short"},
      {"filter pipeline: 40 filters", in_message(0x0B, [](Bytes& b, const Found& m) { b[m.body + 1] = 40; }),
       "40 filters"},
      {"fill value: reserved flags", in_message(0x05, [](Bytes& b, const Found& m) { b[m.body + 1] |= 0x80; }),
       "reserved"},
      {"a message of a type sinkgate never writes", in_message(0x00, [](Bytes& b, const Found& m) { b[m.head] = 0x0D; }),
       "object comment"},
      {"superblock: the root past the end", [](Bytes& b) {
         put(b, 36, 8, b.size() + 4096);
         put(b, 44, 4, sg::lookup3(b.data(), 44));
       }, "past the end of the file"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    Bytes edited = good;
    c.edit(edited);
    REQUIRE(edited != good);
    const auto out = scratch / "edited.h5";
    write_bytes(out, edited);
    CHECK_THAT(open_error(out), Catch::Contains(out) && Catch::Contains(c.expected));
  }
}

TEST_CASE("a group in dense storage: the headers of its members are found and checked too") {
  Scratch scratch;
  const auto path = scratch / "wide.h5";
  {
    sg::h5::Writer writer(path, false);
    auto& root = writer.root();
    sg::h5::set_format(root, "sinkgate-results", 1);
    auto table = root.create_group("table", 1030);  // past 1,024 links: dense from the start
    for (int i = 0; i < 1030; ++i) table.write_ints("c" + std::to_string(i), {i});
    writer.commit();
  }
  CHECK(sg::h5::check_headers(path).empty());
  REQUIRE_NOTHROW(sg::h5::File::open(path));
  const Bytes good = read_bytes(path);
  const auto messages = all_messages(good);
  // The group's link info names a heap; a member's header is reached only through it.
  bool dense = false;
  for (const auto& m : messages)
    if (m.type == 0x02 && little(good, m.body + 2 + ((good[m.body + 1] & 1) ? 8 : 0), 8) != ~uint64_t{0}) dense = true;
  REQUIRE(dense);
  // The last dataspace in the file is a member's: its version made 9, resealed.
  const Found* last = nullptr;
  for (const auto& m : messages)
    if (m.type == 0x01) last = &m;
  REQUIRE(last != nullptr);
  Bytes edited = good;
  edited[last->body] = 9;
  reseal(edited, last->block_start, last->block_end);
  const auto out = scratch / "member.h5";
  write_bytes(out, edited);
  CHECK_THAT(open_error(out), Catch::Contains(out) && Catch::Contains("dataspace message is of version 9"));
}
