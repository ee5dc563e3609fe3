// Tests of lib/base/text: join, trim, lists, strict numbers and the near misses behind "did you mean".
#include <catch2/catch.hpp>

#include "lib/base/error.h"
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

TEST_CASE("split_list and split_lists: comma lists and repeats give the same items") {
  CHECK(sg::split_list(" a, b ,,c ") == std::vector<std::string>{"a", "b", "c"});
  CHECK(sg::split_list("").empty());
  CHECK(sg::split_lists({"a,b", "c"}) == std::vector<std::string>{"a", "b", "c"});
  CHECK(sg::split_lists({"a", "b", "c"}) == sg::split_lists({"a,b,c"}));
}

TEST_CASE("numbers are parsed strictly: the whole text, or an error naming the option and the text") {
  CHECK(sg::parse_integer("5", "--load") == 5);
  CHECK(sg::parse_integer("-12", "--load") == -12);
  CHECK(sg::parse_integer("+7", "--load") == 7);
  for (const char* bad : {"5x", "x5", "", " 5", "5 ", "1.5", "1e3", "+-5", "-", "99999999999999999999"}) {
    INFO(bad);
    try {
      sg::parse_integer(bad, "--load");
      FAIL("accepted");
    } catch (const sg::UsageError& error) {
      CHECK(std::string(error.what()).find("--load: '" + std::string(bad) + "' is not an integer") == 0);
    }
  }
  CHECK(sg::parse_number("0.2", "--dose") == 0.2);
  CHECK(sg::parse_number("1e-3", "--dose") == 1e-3);
  CHECK(sg::parse_number(".5", "--dose") == 0.5);
  CHECK(sg::parse_number("-2", "--dose") == -2.0);
  for (const char* bad : {"0.2x", "", " 0.2", "0.2 ", "nan", "inf", "1e999", "0x", "--1"}) {
    INFO(bad);
    CHECK_THROWS_AS(sg::parse_number(bad, "--dose"), sg::UsageError);
  }
  CHECK(sg::parse_integers({"1,2", "4"}, "--load") == std::vector<int64_t>{1, 2, 4});
  CHECK(sg::parse_numbers({"0.2,0.4"}, "--dose") == std::vector<double>{0.2, 0.4});
  CHECK_THROWS_AS(sg::parse_integers({""}, "--load"), sg::UsageError);  // no item at all
  CHECK_THROWS_AS(sg::parse_integers({"1,5x"}, "--load"), sg::UsageError);
}
