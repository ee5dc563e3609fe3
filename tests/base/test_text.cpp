// Tests of lib/base/text: join, trim and the near misses behind "did you mean".
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

TEST_CASE("closest finds the choice a typo meant, and nothing for a word far from every choice") {
  const std::vector<std::string> tiers = {"10M", "50M", "124M", "350M", "tiny", "quick", "small", "cpu"};
  CHECK(sg::closest("Tiny", tiers) == "tiny");   // case only
  CHECK(sg::closest("10m", tiers) == "10M");
  CHECK(sg::closest("smal", tiers) == "small");  // one deletion
  CHECK(sg::closest("qiuck", tiers) == "quick"); // two substitutions in five letters
  CHECK(sg::closest("huge", tiers).empty());
  CHECK(sg::closest("", tiers).empty());
  // Ties give no guess: "x0M" is one substitution from both.
  CHECK(sg::closest("x0M", {"10M", "50M"}).empty());
  CHECK(sg::closest("iteration", {"iterations", "warmup"}) == "iterations");
  CHECK(sg::did_you_mean("basline", {"baseline", "combo"}) == "did you mean 'baseline'? ");
  CHECK(sg::did_you_mean("zzz", {"baseline"}).empty());
  // Short words allow fewer edits: "ab" is not "cd".
  CHECK(sg::closest("ab", {"cd"}).empty());
}
