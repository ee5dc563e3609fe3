// Tests of lib/analysis/stats against answers computed by hand (in the comments), including the paper's
// own Table 1 and Table 2 numbers recomputed from its Table 5.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "lib/analysis/stats.h"
#include "lib/base/error.h"

using Catch::Matchers::WithinAbs;
using sg::ColumnType;
using sg::Role;

namespace {

sg::ResultTable runs(const std::vector<std::tuple<std::string, std::string, int64_t, double>>& rows) {
  sg::ResultTable t;
  t.add_column("tier", Role::key, ColumnType::string);
  t.add_column("arm", Role::key, ColumnType::string);
  t.add_column("seed", Role::key, ColumnType::int64);
  t.add_column("val_loss", Role::value, ColumnType::float64);
  for (const auto& [tier, arm, seed, loss] : rows) t.append_row({tier, arm, seed, loss});
  return t;
}

/// The output row whose key columns have these texts.
size_t find_row(const sg::ResultTable& t, const std::map<std::string, std::string>& keys) {
  for (size_t r = 0; r < t.rows(); ++r) {
    bool all = true;
    for (const auto& [name, text] : keys) all = all && t.column(name).text(r) == text;
    if (all) return r;
  }
  FAIL("no such output row");
  return 0;
}

double cell(const sg::ResultTable& t, const std::map<std::string, std::string>& keys, const std::string& column) {
  return t.column(column).number(find_row(t, keys));
}

}  // namespace

TEST_CASE("mean and standard error by hand") {
  // {1, 2, 3, 4}: mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5; sd = √(5/3) =
  // 1.2909944; se = sd / √4 = 0.6454972.
  const auto s = sg::mean_se({1, 2, 3, 4});
  CHECK_THAT(s.mean, WithinAbs(2.5, 1e-12));
  CHECK_THAT(s.se, WithinAbs(0.6454972, 1e-7));
  CHECK(s.n == 4);
  const auto one = sg::mean_se({3.25});
  CHECK(one.mean == 3.25);
  CHECK(std::isnan(one.se));
  CHECK(std::isnan(sg::mean_se({}).mean));
}

TEST_CASE("paired differences on a hand-made table, unpaired seeds left out and reported") {
  // Group A: baseline 1.0, 2.0, 3.0 on seeds 0-2; x 0.9, 1.7, 2.9 on seeds 0-2 plus seed 3 alone.
  // Differences x − baseline: −0.1, −0.3, −0.1 → mean −0.1666667; deviations 0.0666667,
  // −0.1333333, 0.0666667 → sd = √(0.0266667 / 2) = 0.1154701; se = sd / √3 = 0.0666667.
  // Group B: one seed: baseline 5.0, x 4.5 → mean −0.5, se NaN.
  const auto input = runs({{"A", "baseline", 0, 1.0},
                           {"A", "baseline", 1, 2.0},
                           {"A", "baseline", 2, 3.0},
                           {"A", "x", 0, 0.9},
                           {"A", "x", 1, 1.7},
                           {"A", "x", 2, 2.9},
                           {"A", "x", 3, 9.0},
                           {"B", "x", 0, 4.5},
                           {"B", "baseline", 0, 5.0}});
  sg::PairOptions options;
  options.ref_mean = true;
  const auto result = sg::paired_differences(input, options);
  const auto& t = result.table;
  CHECK(t.names() == std::vector<std::string>{"tier", "statistic", "ref", "arm", "mean", "se", "n", "seeds", "unpaired"});
  CHECK(t.key_names() == std::vector<std::string>{"tier", "statistic", "ref", "arm"});
  REQUIRE(t.rows() == 4);
  const std::map<std::string, std::string> a{{"tier", "A"}, {"arm", "x"}, {"statistic", "paired_diff"}};
  CHECK_THAT(cell(t, a, "mean"), WithinAbs(-0.1666667, 1e-7));
  CHECK_THAT(cell(t, a, "se"), WithinAbs(0.0666667, 1e-7));
  CHECK(cell(t, a, "n") == 3);
  CHECK(t.column("seeds").text(find_row(t, a)) == "0,1,2");
  CHECK(t.column("unpaired").text(find_row(t, a)) == "3");
  REQUIRE(result.warnings.size() == 1);
  CHECK_THAT(result.warnings[0], Catch::Contains("tier=A") && Catch::Contains("x vs baseline") && Catch::Contains("3"));
  const std::map<std::string, std::string> b{{"tier", "B"}, {"arm", "x"}};
  CHECK_THAT(cell(t, b, "mean"), WithinAbs(-0.5, 1e-12));
  CHECK(std::isnan(cell(t, b, "se")));
  CHECK(cell(t, b, "n") == 1);
  // The reference's own mean: (1 + 2 + 3) / 3 = 2, se = 1 / √3 = 0.5773503.
  const std::map<std::string, std::string> level{{"tier", "A"}, {"statistic", "mean"}};
  CHECK(t.column("arm").text(find_row(t, level)) == "baseline");
  CHECK_THAT(cell(t, level, "mean"), WithinAbs(2.0, 1e-12));
  CHECK_THAT(cell(t, level, "se"), WithinAbs(0.5773503, 1e-7));
  CHECK(find_row(t, level) == 0);  // first in its group
}

TEST_CASE("the run key names what a row measured and does not split the pairs, labels do") {
  // Each arm's run is another file, so `run` differs between the rows of a pair: it must not be a
  // group key. A label (here lr) is one: its values are separate groups.
  auto input = runs({{"A", "baseline", 0, 1.0}, {"A", "x", 0, 0.8}, {"A", "baseline", 1, 2.0}, {"A", "x", 1, 1.6},
                     {"A", "baseline", 0, 3.0}, {"A", "x", 0, 2.5}});
  input.add_key(sg::kRunKey, std::vector<std::string>{"b0.h5", "x0.h5", "b1.h5", "x1.h5", "b0-lr.h5", "x0-lr.h5"});
  input.add_key("lr", std::vector<std::string>{"6e-4", "6e-4", "6e-4", "6e-4", "3e-4", "3e-4"});
  sg::PairOptions options;
  const auto result = sg::paired_differences(input, options);
  CHECK_FALSE(result.table.has(sg::kRunKey));
  CHECK(result.table.rows() == 2);
  // lr 6e-4: (0.8 - 1.0, 1.6 - 2.0) -> mean -0.3; lr 3e-4: -0.5 on one seed.
  CHECK(std::abs(cell(result.table, {{"lr", "6e-4"}, {"arm", "x"}}, "mean") - -0.3) < 1e-12);
  CHECK(std::abs(cell(result.table, {{"lr", "3e-4"}, {"arm", "x"}}, "mean") - -0.5) < 1e-12);
}

TEST_CASE("the paper's Table 1 entries recomputed from its Table 5 (10M, sink logit)") {
  // Table 5, FineWeb 10M: baseline 4.2141 4.2060 4.2155; sinklogit 4.1981 4.1916 4.1904.
  // Differences −0.0160, −0.0144, −0.0251 → mean −0.0185; deviations 0.0025, 0.0041, −0.0066;
  // squares sum 6.662e-5, / 2 = 3.331e-5, sd = 0.0057715, se = 0.0033322 (paper: −0.0185 ± 0.0033).
  const auto input = runs({{"10M", "baseline", 0, 4.2141},
                           {"10M", "baseline", 1, 4.2060},
                           {"10M", "baseline", 2, 4.2155},
                           {"10M", "sinklogit", 0, 4.1981},
                           {"10M", "sinklogit", 1, 4.1916},
                           {"10M", "sinklogit", 2, 4.1904}});
  const auto t = sg::paired_differences(input, {}).table;
  REQUIRE(t.rows() == 1);
  CHECK_THAT(t.column("mean").reals[0], WithinAbs(-0.0185, 1e-10));
  CHECK_THAT(t.column("se").reals[0], WithinAbs(0.0033322, 1e-7));
}

TEST_CASE("pairing errors name the arm, the reference and the group") {
  const auto input = runs({{"A", "baseline", 0, 1.0}, {"A", "x", 1, 0.9}, {"B", "x", 0, 0.8}});
  sg::PairOptions options;
  options.arms = {"x"};
  // Group A: x shares no seed with baseline.
  try {
    sg::paired_differences(input.where("tier", {"A"}), options);
    FAIL("an arm without a paired seed was accepted");
  } catch (const sg::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("tier=A") && Catch::Contains("x vs baseline") && Catch::Contains("no seed"));
  }
  // Group B has no baseline.
  CHECK_THROWS_WITH(sg::paired_differences(input.where("tier", {"B"}).take({0}), options),
                    Catch::Contains("no arm 'baseline'"));  // absent everywhere: a usage error
  CHECK_THROWS_AS(sg::paired_differences(input.where("tier", {"B"}), options), sg::UsageError);
  const auto ab = runs({{"A", "baseline", 0, 1.0}, {"A", "x", 0, 0.9}, {"B", "x", 0, 0.8}});
  try {
    sg::paired_differences(ab, options);
    FAIL("a group without the reference was accepted");
  } catch (const sg::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("tier=B") && Catch::Contains("'baseline' is absent"));
  }
  sg::PairOptions typo;
  typo.ref = "basline";
  CHECK_THROWS_WITH(sg::paired_differences(ab, typo), Catch::Contains("basline"));
  typo = {};
  typo.value = "loss";
  CHECK_THROWS_WITH(sg::paired_differences(ab, typo), Catch::Contains("no column 'loss'"));
  const auto twice = runs({{"A", "baseline", 0, 1.0}, {"A", "baseline", 0, 1.1}, {"A", "x", 0, 0.9}});
  CHECK_THROWS_WITH(sg::paired_differences(twice, {}), Catch::Contains("two rows") && Catch::Contains("seed=0"));
}

TEST_CASE("the decomposition on the paper's 10M norm-gate numbers: overlap 0.0045, filter -0.0008") {
  // One seed per arm with Table 2's improvements: sink 0.0185, gate 0.0037, both 0.0177.
  // overlap = 0.0185 + 0.0037 − 0.0177 = 0.0045; filter = 0.0177 − 0.0185 = −0.0008.
  // Tier 350M has no gate arm: sink 0.0013, both 0.0087, filter 0.0074 only.
  const auto input = runs({{"10M", "baseline", 0, 4.0},
                           {"10M", "sinklogit", 0, 4.0 - 0.0185},
                           {"10M", "normgate", 0, 4.0 - 0.0037},
                           {"10M", "combo", 0, 4.0 - 0.0177},
                           {"350M", "baseline", 0, 3.0},
                           {"350M", "sinklogit", 0, 3.0 - 0.0013},
                           {"350M", "combo", 0, 3.0 - 0.0087}});
  const auto t = sg::decompose(input, {}).table;
  CHECK(t.key_names() == std::vector<std::string>{"tier", "ref", "sink_arm", "gate_arm", "both_arm", "term"});
  REQUIRE(t.rows() == 8);
  auto term = [&](const std::string& tier, const std::string& name) {
    return cell(t, {{"tier", tier}, {"term", name}}, "mean");
  };
  CHECK_THAT(term("10M", "sink"), WithinAbs(0.0185, 1e-12));
  CHECK_THAT(term("10M", "gate"), WithinAbs(0.0037, 1e-12));
  CHECK_THAT(term("10M", "both"), WithinAbs(0.0177, 1e-12));
  CHECK_THAT(term("10M", "overlap"), WithinAbs(0.0045, 1e-12));
  CHECK_THAT(term("10M", "filter"), WithinAbs(-0.0008, 1e-12));
  CHECK_THAT(term("350M", "sink"), WithinAbs(0.0013, 1e-12));
  CHECK_THAT(term("350M", "both"), WithinAbs(0.0087, 1e-12));
  CHECK_THAT(term("350M", "filter"), WithinAbs(0.0074, 1e-12));
  std::vector<std::string> terms_350;
  for (size_t r = 0; r < t.rows(); ++r)
    if (t.column("tier").text(r) == "350M") terms_350.push_back(t.column("term").text(r));
  CHECK(terms_350 == std::vector<std::string>{"sink", "both", "filter"});
}

TEST_CASE("decomposition terms are paired per seed with their own standard errors") {
  // Seeds 0, 1: baseline 1.0, 2.0; sink 0.9, 1.8; gate 0.95, 1.95; both 0.85, 1.7; seed 2 only for
  // sink (2.7) and both (2.6).
  //   sink = ref − sink: 0.1, 0.2 → 0.15 ± sd(0.0707107)/√2 = 0.05
  //   overlap per seed: 0.1 + 0.05 − 0.15 = 0; 0.2 + 0.05 − 0.3 = −0.05 → −0.025 ± 0.025
  //   filter = sink − both over seeds 0, 1, 2: 0.05, 0.1, 0.1 → 0.0833333; deviations −0.0333333,
  //   0.0166667, 0.0166667 → sd = √(0.0016667 / 2) = 0.0288675, se = 0.0166667
  const auto input = runs({{"T", "baseline", 0, 1.0},
                           {"T", "baseline", 1, 2.0},
                           {"T", "sinklogit", 0, 0.9},
                           {"T", "sinklogit", 1, 1.8},
                           {"T", "sinklogit", 2, 2.7},
                           {"T", "normgate", 0, 0.95},
                           {"T", "normgate", 1, 1.95},
                           {"T", "combo", 0, 0.85},
                           {"T", "combo", 1, 1.7},
                           {"T", "combo", 2, 2.6}});
  const auto result = sg::decompose(input, {});
  const auto& t = result.table;
  CHECK_THAT(cell(t, {{"term", "sink"}}, "mean"), WithinAbs(0.15, 1e-12));
  CHECK_THAT(cell(t, {{"term", "sink"}}, "se"), WithinAbs(0.05, 1e-12));
  CHECK(t.column("unpaired").text(find_row(t, {{"term", "sink"}})) == "2");
  CHECK_THAT(cell(t, {{"term", "overlap"}}, "mean"), WithinAbs(-0.025, 1e-12));
  CHECK_THAT(cell(t, {{"term", "overlap"}}, "se"), WithinAbs(0.025, 1e-12));
  CHECK_THAT(cell(t, {{"term", "filter"}}, "mean"), WithinAbs(0.0833333, 1e-7));
  CHECK_THAT(cell(t, {{"term", "filter"}}, "se"), WithinAbs(0.0166667, 1e-7));
  CHECK(cell(t, {{"term", "filter"}}, "n") == 3);
  CHECK(t.column("seeds").text(find_row(t, {{"term", "filter"}})) == "0,1,2");
  CHECK_FALSE(result.warnings.empty());

  const auto no_both = input.where("arm", {"baseline", "sinklogit", "normgate"});
  CHECK_THROWS_WITH(sg::decompose(no_both, {}), Catch::Contains("combo"));
}

TEST_CASE("summary: every arm's mean and standard deviation over seeds, no pairing") {
  // A/baseline 1, 2, 4 → mean 7/3; deviations −4/3, −1/3, 5/3 → Σ² = 42/9 → sd = √(42/18) = 1.5275252.
  // A/x on seeds 5 and 9 only (nothing to pair with): 3, 5 → mean 4, sd √2. B/baseline one seed: sd NaN.
  const auto table = runs({{"A", "baseline", 0, 1.0}, {"A", "baseline", 1, 2.0}, {"A", "baseline", 2, 4.0},
                           {"A", "x", 5, 3.0}, {"A", "x", 9, 5.0}, {"B", "baseline", 0, 6.0}});
  sg::PairOptions options;
  const auto result = sg::summarize(table, options);
  REQUIRE(result.table.rows() == 3);
  CHECK_THAT(cell(result.table, {{"tier", "A"}, {"arm", "baseline"}}, "mean"), WithinAbs(7.0 / 3.0, 1e-12));
  CHECK_THAT(cell(result.table, {{"tier", "A"}, {"arm", "baseline"}}, "sd"), WithinAbs(1.5275252, 1e-7));
  CHECK_THAT(cell(result.table, {{"tier", "A"}, {"arm", "baseline"}}, "se"), WithinAbs(1.5275252 / std::sqrt(3.0), 1e-7));
  CHECK_THAT(cell(result.table, {{"tier", "A"}, {"arm", "x"}}, "sd"), WithinAbs(std::sqrt(2.0), 1e-12));
  CHECK(result.table.column("seeds").text(find_row(result.table, {{"tier", "A"}, {"arm", "x"}})) == "5,9");
  CHECK(std::isnan(cell(result.table, {{"tier", "B"}, {"arm", "baseline"}}, "sd")));
  CHECK(result.table.column("statistic").text(0) == "mean");
  options.arms = {"x"};
  CHECK(sg::summarize(table, options).table.rows() == 1);
}
