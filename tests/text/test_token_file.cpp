// Tests of lib/text/token_file: the splits of a written token file, reads, and the errors.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "lib/base/error.h"
#include "lib/io/h5.h"
#include "lib/text/token_file.h"
#include "tests/support.h"

TEST_CASE("token file: the validation split is the first tokens, the training split the rest") {
  sg_test::Scratch scratch;
  const auto path = scratch / "splits.h5";
  sg_test::write_counting_tokens(path, 50, 1000);
  const auto tokens = sg::TokenFile::open(path);
  CHECK(tokens.info().documents == 50);
  CHECK(tokens.info().val_tokens == 1000);
  CHECK(tokens.info().train_tokens == 50 * 97 - 1000);
  CHECK(tokens.info().eot_id == 50256);
  // The stream was 0, 1, 2, … with 50256 at every 97th position.
  const auto val = tokens.read(sg::Split::val, 0, 1000);
  const auto train = tokens.read(sg::Split::train, 0, tokens.size(sg::Split::train));
  auto stream = val;
  stream.insert(stream.end(), train.begin(), train.end());
  REQUIRE(stream.size() == 50 * 97);
  for (size_t p = 0; p < stream.size(); ++p) {
    const int64_t expected = (p % 97 == 96) ? 50256 : static_cast<int64_t>(p % 50000);
    if (stream[p] != expected) FAIL("position " << p);
  }
  CHECK(val[0] == 0);
  CHECK(train[0] == stream[1000]);
  // Reads into a buffer, and reads outside a split.
  std::vector<int64_t> buffer(3);
  tokens.read(sg::Split::train, 5, 3, buffer.data());
  CHECK(buffer == std::vector<int64_t>(stream.begin() + 1005, stream.begin() + 1008));
  CHECK_THROWS_WITH(tokens.read(sg::Split::val, 999, 2), Catch::Contains(path) && Catch::Contains("[999, 1001)"));
  CHECK_THROWS_AS(tokens.read(sg::Split::train, -1, 1), sg::InputError);
}

TEST_CASE("token file: a split too large to keep in memory is read window by window, with the same tokens") {
  sg_test::Scratch scratch;
  const auto path = scratch / "streamed.h5";
  sg_test::write_counting_tokens(path, 20, 300);
  const auto resident = sg::TokenFile::open(path);
  setenv("SINKGATE_RESIDENT_TOKENS", "0", /*overwrite=*/1);
  const auto streamed = sg::TokenFile::open(path);
  unsetenv("SINKGATE_RESIDENT_TOKENS");
  for (auto split : {sg::Split::val, sg::Split::train})
    CHECK(streamed.read(split, 7, 250) == resident.read(split, 7, 250));
}

TEST_CASE("token file: errors name the file") {
  sg_test::Scratch scratch;
  CHECK_THROWS_AS(sg::TokenFile::open("/nonexistent/tokens.h5"), sg::InputError);
  const std::string text = scratch / "not_h5.txt";
  { std::FILE* f = std::fopen(text.c_str(), "w"); std::fputs("hello", f); std::fclose(f); }
  CHECK_THROWS_WITH(sg::TokenFile::open(text), Catch::Contains(text));
  // A corpus shorter than the validation split is refused, and nothing is left behind.
  const std::string path = scratch / "short.h5";
  {
    sg::TokenWriter writer(path, true, 1000, "test", 50257, 50256);
    writer.add_document({1, 2, 3});
    CHECK_THROWS_AS(writer.commit(), sg::InputError);
  }
  CHECK_FALSE(sg_test::exists(path));
}

TEST_CASE("a token file of float ids, or whose split sizes disagree with its data, is refused") {
  sg_test::Scratch scratch;
  auto write = [&](const std::string& name, sg::h5::Dtype dtype, int64_t val_attribute) {
    const auto path = scratch / name;
    sg::h5::Writer writer(path, false);
    auto& root = writer.root();
    sg::h5::set_format(root, sg::kTokenFormat, sg::kTokenSchemaVersion);
    root.set_attribute("tokenizer", "test");
    root.set_attribute("vocab_size", int64_t{10});
    root.set_attribute("eot_id", int64_t{9});
    root.set_attribute("documents", int64_t{1});
    root.set_attribute("val_tokens", val_attribute);
    root.set_attribute("train_tokens", int64_t{4});
    const std::vector<float> floats{1, 2, 3, 4};
    const std::vector<uint16_t> ids{1, 2, 3, 4};
    for (const char* split : {"tokens/val", "tokens/train"})
      root.write_array(split, dtype, {4}, dtype == sg::h5::Dtype::float32 ? static_cast<const void*>(floats.data())
                                                                          : static_cast<const void*>(ids.data()));
    writer.commit();
    return path;
  };
  CHECK(sg::TokenFile::open(write("good.h5", sg::h5::Dtype::uint16, 4)).size(sg::Split::val) == 4);
  const auto floats = write("floats.h5", sg::h5::Dtype::float32, 4);
  CHECK_THROWS_WITH(sg::TokenFile::open(floats), Catch::Contains(floats) && Catch::Contains("holds float32"));
  const auto sizes = write("sizes.h5", sg::h5::Dtype::uint16, 7);
  CHECK_THROWS_WITH(sg::TokenFile::open(sizes),
                    Catch::Contains(sizes) && Catch::Contains("val_tokens (7) disagrees with tokens/val (4 ids)"));
}
