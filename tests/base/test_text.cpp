// Tests of lib/base/text: join and trim.
#include <catch2/catch.hpp>

#include "lib/base/text.h"

TEST_CASE("join puts the separator between items only") {
  CHECK(sg::join({}, ", ").empty());
  CHECK(sg::join({"a"}, ", ") == "a");
  CHECK(sg::join({"a", "", "c"}, ",") == "a,,c");
}

TEST_CASE("trim drops leading and trailing spaces, tabs, carriage returns and newlines") {
  CHECK(sg::trim("  lr_peak = 1e-3\r\n") == "lr_peak = 1e-3");
  CHECK(sg::trim("\t x \t") == "x");
  CHECK(sg::trim(" \t\r\n").empty());
  CHECK(sg::trim("").empty());
  CHECK(sg::trim("a b") == "a b");  // inner whitespace stays
}
