// Tests of lib/io/safetensors: the header and bytes of every supported dtype from hand-made files,
// the metadata, sharded folders, and an InputError naming the file and the problem for each kind
// of damage (malformed header, truncated data, offsets outside the file, byte lengths that do not
// fit the shape, unknown dtypes, overlapping tensors, broken indexes). Decoding to tensors:
// tests/model/test_tensors.cpp; files written by Python's safetensors: tests/hf/test_pretrained.cpp.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "lib/base/error.h"
#include "lib/io/safetensors.h"
#include "tests/support.h"

using Catch::Matchers::Contains;

namespace {

using sg_test::Scratch;

using sg_test::raw;
using sg_test::safetensors_bytes;
using sg_test::write_bytes;

/// The bytes a tensor of `file` holds.
std::string bytes_of(const sg::SafetensorsFile& file, const std::string& name) {
  std::string bytes(file.entry(name).bytes(), '\0');
  file.read(name, bytes.data());
  return bytes;
}

/// Expects opening `bytes` (written to a file) to throw an InputError naming the file and containing `problem`.
void expect_refused(const Scratch& scratch, const std::string& bytes, const std::string& problem) {
  const auto path = scratch / "bad.safetensors";
  write_bytes(path, bytes);
  try {
    sg::SafetensorsFile::open(path);
    FAIL("no error for a file that should be refused for: " << problem);
  } catch (const sg::InputError& e) {
    CHECK_THAT(e.what(), Contains(path));
    CHECK_THAT(e.what(), Contains(problem));
  }
}

}  // namespace

TEST_CASE("safetensors: every supported dtype reads as its header says", "[safetensors]") {
  Scratch scratch;
  write_bytes(scratch / "ok.safetensors", sg_test::valid_safetensors());
  const auto file = sg::SafetensorsFile::open(scratch / "ok.safetensors");
  CHECK(file.names() == std::vector<std::string>{"w", "h", "b", "i", "s", "e"});
  CHECK(file.metadata().at("format") == "pt");
  CHECK(file.entry("w").dtype == sg::SafetensorsDtype::F32);
  CHECK(file.entry("w").shape == std::vector<int64_t>{2, 3});
  CHECK(file.entry("w").numel() == 6);
  CHECK(bytes_of(file, "w") == raw<float>({1, 2, 3, 4, 5, 6}));
  CHECK(file.entry("h").dtype == sg::SafetensorsDtype::F16);
  CHECK(bytes_of(file, "h") == raw<uint16_t>({0x3E00, 0xC000}));
  CHECK(file.entry("b").dtype == sg::SafetensorsDtype::BF16);
  CHECK(bytes_of(file, "b") == raw<uint16_t>({0x3FC0, 0xC040}));
  CHECK(file.entry("i").dtype == sg::SafetensorsDtype::I64);
  CHECK(bytes_of(file, "i") == raw<int64_t>({-3, 0, 1LL << 40}));
  CHECK(file.entry("s").shape.empty());
  CHECK(bytes_of(file, "s") == raw<float>({0.25f}));
  CHECK(file.entry("e").numel() == 0);
  CHECK(bytes_of(file, "e").empty());
  CHECK(sg::element_size(sg::SafetensorsDtype::BF16) == 2);
  CHECK(sg::to_string(sg::SafetensorsDtype::I64) == "I64");
  std::string buffer(8, '\0');
  CHECK_THROWS_AS(file.read("absent", buffer.data()), sg::InputError);
}

TEST_CASE("safetensors: damaged files are refused with the file and the problem named", "[safetensors]") {
  Scratch scratch;
  const std::string data = raw<float>({1, 2});
  const std::string good = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  SECTION("shorter than the length field") { expect_refused(scratch, "abc", "shorter than the 8-byte header length"); }
  SECTION("header length beyond the file") {
    auto bytes = safetensors_bytes(good, data);
    bytes[0] = static_cast<char>(0xff);
    bytes[1] = static_cast<char>(0x7f);
    expect_refused(scratch, bytes, "header length");
  }
  SECTION("header not JSON") { expect_refused(scratch, safetensors_bytes("{\"x\": [1, 2", data), "not valid JSON"); }
  SECTION("header not an object") { expect_refused(scratch, safetensors_bytes("[1, 2]", data), "not a JSON object"); }
  SECTION("entry without offsets") {
    expect_refused(scratch, safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2]}})", data), "lacks \"data_offsets\"");
  }
  SECTION("negative shape") {
    expect_refused(scratch, safetensors_bytes(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data),
                   "non-negative integer");
  }
  SECTION("unknown dtype") {
    expect_refused(scratch, safetensors_bytes(R"({"x":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", data),
                   "does not support");
  }
  SECTION("byte length does not fit shape and dtype") {
    expect_refused(scratch, safetensors_bytes(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data),
                   "needs 12");
  }
  SECTION("truncated data: offsets outside the file") {
    const std::string big = R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
    expect_refused(scratch, safetensors_bytes(big, data), "offsets outside the file");
  }
  SECTION("overlapping tensors") {
    const std::string overlap =
        R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    expect_refused(scratch, safetensors_bytes(overlap, data), "overlapping");
  }
  SECTION("a gap before the first tensor") {
    const std::string gap = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    expect_refused(scratch, safetensors_bytes(gap, data), "gap");
  }
  SECTION("metadata that is not strings") {
    expect_refused(scratch, safetensors_bytes(R"({"__metadata__":{"a":1},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data),
                   "not a string");
  }
  SECTION("a missing file") {
    CHECK_THROWS_WITH(sg::SafetensorsFile::open(scratch / "absent.safetensors"), Contains("absent.safetensors"));
  }
}

TEST_CASE("safetensors: folders with one file or shards and an index", "[safetensors]") {
  Scratch scratch;
  const std::string one = safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", raw<float>({7}));
  const std::string two = safetensors_bytes(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", raw<float>({8}));
  SECTION("model.safetensors") {
    write_bytes(scratch / "model.safetensors", one);
    const auto folder = sg::SafetensorsFolder::open(scratch.dir);
    CHECK(folder.names() == std::vector<std::string>{"a"});
    float value = 0;
    folder.read("a", &value);
    CHECK(value == 7);
    CHECK_THROWS_WITH(folder.read("b", &value), Contains("no tensor 'b'"));
  }
  SECTION("shards listed by an index") {
    write_bytes(scratch / "model-00001-of-00002.safetensors", one);
    write_bytes(scratch / "model-00002-of-00002.safetensors", two);
    write_bytes(scratch / "model.safetensors.index.json",
                R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
    const auto folder = sg::SafetensorsFolder::open(scratch.dir);
    CHECK(folder.names() == std::vector<std::string>{"a", "b"});
    float value = 0;
    folder.read("b", &value);
    CHECK(value == 8);
    CHECK(folder.paths().size() == 2);
  }
  SECTION("an index naming a missing shard") {
    write_bytes(scratch / "model-00001-of-00002.safetensors", one);
    write_bytes(scratch / "model.safetensors.index.json",
                R"({"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
    CHECK_THROWS_WITH(sg::SafetensorsFolder::open(scratch.dir), Contains("model-00002-of-00002.safetensors"));
  }
  SECTION("an index assigning a tensor to the wrong shard") {
    write_bytes(scratch / "model-00001-of-00002.safetensors", one);
    write_bytes(scratch / "model-00002-of-00002.safetensors", two);
    write_bytes(scratch / "model.safetensors.index.json",
                R"({"weight_map":{"a":"model-00002-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
    CHECK_THROWS_WITH(sg::SafetensorsFolder::open(scratch.dir), Contains("does not hold it"));
  }
  SECTION("a malformed index") {
    write_bytes(scratch / "model.safetensors.index.json", R"({"weights":{}})");
    CHECK_THROWS_WITH(sg::SafetensorsFolder::open(scratch.dir), Contains("weight_map"));
  }
  SECTION("no weights at all") {
    CHECK_THROWS_WITH(sg::SafetensorsFolder::open(scratch.dir), Contains("neither model.safetensors"));
  }
}
