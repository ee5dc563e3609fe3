// Tests of lib/safetensors: decoding of every supported dtype from hand-made files, the metadata,
// sharded folders, and an InputError naming the file and the problem for each kind of damage
// (malformed header, truncated data, offsets outside the file, byte lengths that do not fit the
// shape, unknown dtypes, overlapping tensors, broken indexes). Files written by Python's
// safetensors are read in tests/test_pretrained.cpp.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "lib/error.h"
#include "lib/safetensors.h"
#include "tests/support.h"

using Catch::Matchers::Contains;

namespace {

using sg_test::Scratch;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  REQUIRE(out.good());
}

/// The 8-byte little-endian length, the header, the data.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return bytes + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// A valid file: a (2, 3) F32, a (2) F16, a (2) BF16, a (3) I64, a scalar F32 and an empty tensor.
std::string valid_file() {
  const std::string f32 = raw<float>({1, 2, 3, 4, 5, 6});
  const std::string f16 = raw<uint16_t>({0x3E00, 0xC000});  // 1.5, -2
  const std::string bf16 = raw<uint16_t>({0x3FC0, 0xC040});  // 1.5, -3
  const std::string i64 = raw<int64_t>({-3, 0, 1LL << 40});
  const std::string scalar = raw<float>({0.25f});
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("h":{"dtype":"F16","shape":[2],"data_offsets":[24,28]},)"
      R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[28,32]},)"
      R"("i":{"dtype":"I64","shape":[3],"data_offsets":[32,56]},)"
      R"("s":{"dtype":"F32","shape":[],"data_offsets":[56,60]},)"
      R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[60,60]}}   )";  // padded with spaces, as allowed
  return safetensors_bytes(header, f32 + f16 + bf16 + i64 + scalar);
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

TEST_CASE("safetensors: every supported dtype decodes to its values", "[safetensors]") {
  Scratch scratch;
  write_bytes(scratch / "ok.safetensors", valid_file());
  const auto file = sg::SafetensorsFile::open(scratch / "ok.safetensors");
  CHECK(file.names() == std::vector<std::string>{"w", "h", "b", "i", "s", "e"});
  CHECK(file.metadata().at("format") == "pt");
  const auto w = file.load("w");
  CHECK(w.scalar_type() == torch::kFloat32);
  CHECK(w.sizes() == torch::IntArrayRef({2, 3}));
  CHECK(torch::equal(w, torch::arange(1, 7, torch::kFloat32).view({2, 3})));
  const auto h = file.load("h");
  CHECK(h.scalar_type() == torch::kFloat16);
  CHECK(torch::equal(h.to(torch::kFloat32), torch::tensor({1.5f, -2.0f})));
  const auto b = file.load("b");
  CHECK(b.scalar_type() == torch::kBFloat16);
  CHECK(torch::equal(b.to(torch::kFloat32), torch::tensor({1.5f, -3.0f})));
  const auto i = file.load("i");
  CHECK(i.scalar_type() == torch::kInt64);
  CHECK(i[0].item<int64_t>() == -3);
  CHECK(i[2].item<int64_t>() == (1LL << 40));
  CHECK(file.load("s").dim() == 0);
  CHECK(file.load("s").item<float>() == 0.25f);
  CHECK(file.load("e").numel() == 0);
  CHECK(file.entry("i").dtype == sg::SafetensorsDtype::I64);
  CHECK_THROWS_AS(file.load("absent"), sg::InputError);
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
    CHECK(folder.load("a").item<float>() == 7);
    CHECK_THROWS_WITH(folder.load("b"), Contains("no tensor 'b'"));
  }
  SECTION("shards listed by an index") {
    write_bytes(scratch / "model-00001-of-00002.safetensors", one);
    write_bytes(scratch / "model-00002-of-00002.safetensors", two);
    write_bytes(scratch / "model.safetensors.index.json",
                R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
    const auto folder = sg::SafetensorsFolder::open(scratch.dir);
    CHECK(folder.names() == std::vector<std::string>{"a", "b"});
    CHECK(folder.load("b").item<float>() == 8);
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
