// Tests of lib/text/sampler: the paired counter-based window sampler.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "lib/base/error.h"
#include "lib/text/sampler.h"
#include "tests/support.h"

namespace {

/// FNV-1a over the input tokens (each row's first `length - 1`) of a set of windows.
uint64_t inputs_hash(const sg::Windows& windows) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t r = 0; r < windows.count; ++r)
    for (int64_t t = 0; t + 1 < windows.length; ++t)
      h = (h ^ static_cast<uint64_t>(windows.row(r)[t])) * 1099511628211ull;
  return h;
}

}  // namespace

TEST_CASE("the sampler pairs runs: the same seed gives the same windows, another seed others") {
  sg_test::Scratch scratch;
  const auto path = scratch / "pairing.h5";
  sg_test::write_counting_tokens(path, 200, 2000);
  const auto tokens = sg::TokenFile::open(path);
  // The stream depends on (seed, split, index) only: nothing about arms enters it.
  const auto a = sg::sample_windows(tokens, sg::Split::train, 7, 0, 64, 32);
  const auto b = sg::sample_windows(tokens, sg::Split::train, 7, 0, 64, 32);
  const auto c = sg::sample_windows(tokens, sg::Split::train, 8, 0, 64, 32);
  REQUIRE(a.count == 64);
  REQUIRE(a.length == 33);
  CHECK(inputs_hash(a) == inputs_hash(b));
  CHECK(inputs_hash(a) != inputs_hash(c));
  // Micro-batch 16 x 4 draws gives the same windows as 64 x 1.
  std::vector<int64_t> parts;
  for (int micro = 0; micro < 4; ++micro) {
    const auto part = sg::sample_windows(tokens, sg::Split::train, 7, micro * 16, 16, 32);
    parts.insert(parts.end(), part.tokens.begin(), part.tokens.end());
  }
  CHECK(parts == a.tokens);
  // Each window is consecutive tokens of the training split: the stream counts up by one, but for
  // the end-of-text ids, and the training split starts at stream position 2000.
  for (int64_t r = 0; r < a.count; ++r)
    for (int64_t t = 0; t + 1 < a.length; ++t) {
      const int64_t now = a.row(r)[t], next = a.row(r)[t + 1];
      if (now != 50256 && next != 50256 && next != now + 1 && !(now == 49999 && next == 0))
        FAIL("window " << r << " is not consecutive at " << t << ": " << now << ", " << next);
    }
  // Validation windows come from the validation split only (its tokens are < 2000 here).
  const auto val = sg::sample_windows(tokens, sg::Split::val, 7, 0, 64, 32);
  for (const int64_t id : val.tokens) CHECK((id < 2000 || id == 50256));
}

TEST_CASE("window starts are uniform over their range") {
  const int64_t range = 10, draws = 100000;
  std::vector<int64_t> counts(range, 0);
  for (int64_t k = 0; k < draws; ++k) ++counts[sg::window_start(3, sg::Split::train, k, range)];
  for (auto c : counts) CHECK(std::abs(c - draws / range) < 5 * std::sqrt(draws / range));  // 5 sigma
  std::set<int64_t> seen;
  for (int64_t k = 0; k < 2000; ++k) seen.insert(sg::window_start(3, sg::Split::train, k, 1000));
  CHECK(seen.size() > 800);
  CHECK(sg::window_start(3, sg::Split::train, 5, 1000) != sg::window_start(3, sg::Split::val, 5, 1000));
  CHECK_THROWS_AS(sg::window_start(3, sg::Split::train, 5, 0), sg::UsageError);
}

TEST_CASE("a split no longer than the context is refused with a hint") {
  sg_test::Scratch scratch;
  const auto path = scratch / "context.h5";
  sg_test::write_counting_tokens(path, 3, 100);
  const auto tokens = sg::TokenFile::open(path);
  try {
    sg::sample_windows(tokens, sg::Split::val, 0, 0, 1, 100);
    FAIL("a split of 100 tokens gave windows of 101");
  } catch (const sg::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("context length 100") && Catch::Contains(path));
    CHECK_FALSE(e.hint().empty());
  }
}
