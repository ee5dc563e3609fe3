// Tests of lib/base/json: untrusted JSON is parsed with a depth limit (200,000 nested brackets
// overflowed the stack when a message dumped the value), brackets inside strings do not count,
// files that are no regular files are refused without hanging, and message excerpts stay short
// whatever the value.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <string>

#include "lib/base/error.h"
#include "lib/base/json.h"
#include "tests/support.h"

using Catch::Matchers::Contains;

namespace {

std::string nested(int levels, const std::string& inside = "1") {
  return std::string(static_cast<size_t>(levels), '[') + inside + std::string(static_cast<size_t>(levels), ']');
}

}  // namespace

TEST_CASE("JSON nested up to 64 levels parses, and deeper is an InputError naming the source, even 200,000 deep") {
  const auto ok = sg::parse_json(nested(64), "ok.json");
  const nlohmann::json* inner = &ok;
  int depth = 0;
  while (inner->is_array()) {
    inner = &(*inner)[0];
    ++depth;
  }
  CHECK(depth == 64);
  CHECK(*inner == 1);
  CHECK_THROWS_WITH(sg::parse_json(nested(65), "deep.json"), Contains("deep.json: JSON nested deeper than 64 levels"));
  CHECK_THROWS_AS(sg::parse_json("{\"a\": " + nested(200000) + "}", "config.json"), sg::InputError);
  // Objects count like arrays.
  std::string objects;
  for (int i = 0; i < 70; ++i) objects += "{\"k\": ";
  objects += "0" + std::string(70, '}');
  CHECK_THROWS_WITH(sg::parse_json(objects, "objects.json"), Contains("nested deeper"));
}

TEST_CASE("brackets inside JSON strings, escaped quotes included, do not count as nesting") {
  const std::string brackets(1000, '[');
  const auto value = sg::parse_json("{\"text\": \"\\\"" + brackets + "\", \"n\": [1]}", "strings.json");
  CHECK(value["text"] == "\"" + brackets);
  CHECK(value["n"][0] == 1);
  CHECK_THROWS_WITH(sg::parse_json("{\"a\": [1, 2", "broken.json"), Contains("broken.json: not valid JSON"));
}

TEST_CASE("read_json_file refuses what is not a regular file, without blocking on a FIFO") {
  sg_test::Scratch scratch;
  const auto fifo = scratch / "pipe.json";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(sg::read_json_file(fifo), Contains(fifo) && Contains("not a regular file"));
  CHECK_THROWS_WITH(sg::read_json_file("/dev/zero"), Contains("/dev/zero") && Contains("not a regular file"));
  CHECK_THROWS_WITH(sg::read_json_file(scratch / "missing.json"), Contains("missing.json: no such file"));
  const auto big = scratch / "big.json";
  sg_test::write_bytes(big, "[" + std::string(2048, ' ') + "]");
  CHECK_THROWS_WITH(sg::read_json_file(big, /*max_bytes=*/1024), Contains(big) && Contains("bytes, more than"));
  CHECK(sg::read_json_file(big).empty());
}

TEST_CASE("json_excerpt quotes a value in a few dozen characters, however long or deep") {
  CHECK(sg::json_excerpt(nlohmann::json(12)) == "12");
  CHECK(sg::json_excerpt(nlohmann::json("ab")) == "\"ab\"");
  CHECK(sg::json_excerpt(nlohmann::json::parse("[1, [2, [3, [4, [5]]]]]")) == "[1, [2, [3, […]]]]");
  CHECK(sg::json_excerpt(nlohmann::json::parse("{\"a\": {}}")) == "{\"a\": {}}");
  const auto long_string = sg::json_excerpt(nlohmann::json(std::string(1 << 20, 'x')), 40);
  CHECK(long_string.size() <= 40 + std::string("…").size());
  CHECK(long_string.substr(0, 3) == "\"xx");
  nlohmann::json wide = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) wide.push_back(i);
  const auto excerpt = sg::json_excerpt(wide, 30);
  CHECK(excerpt.size() <= 30 + std::string("…").size());
  CHECK(excerpt.substr(0, 8) == "[0, 1, 2");
}
