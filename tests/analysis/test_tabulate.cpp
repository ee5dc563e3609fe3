// Tests of lib/analysis/tabulate: pivots rendered as Markdown, LaTeX, CSV and TSV compared with expected
// text written out here, plus the flat (unpivoted) forms and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "lib/analysis/tabulate.h"
#include "lib/base/error.h"

using sg::ColumnType;
using sg::Role;

namespace {

/// A small pairdiff-like table: tier × arm with mean and se; 50M has no offbyone, one se is NaN.
sg::ResultTable improvements() {
  sg::ResultTable t;
  t.add_column("tier", Role::key, ColumnType::string);
  t.add_column("arm", Role::key, ColumnType::string);
  t.add_column("mean", Role::value, ColumnType::float64);
  t.add_column("se", Role::value, ColumnType::float64);
  t.add_column("n", Role::value, ColumnType::int64);
  t.append_row({"50M", "sinklogit", -0.00677, 0.00034, 3});
  t.append_row({"10M", "sinklogit", -0.0185, 0.00333, 3});
  t.append_row({"10M", "offbyone", -0.016, 0.0027, 3});
  t.append_row({"350M", "sinklogit", -0.0013, std::nan(""), 1});
  t.append_row({"10M", "renorm", 0.0017, 0.0014, 3});
  return t;
}

}  // namespace

TEST_CASE("a pivot renders as the expected Markdown") {
  sg::TabulateOptions o;
  o.rows = {"arm"};
  o.cols = {"tier"};
  o.order = {{"arm", {"offbyone", "sinklogit"}}, {"tier", {"10M", "50M"}}};
  o.labels = {{"", "offbyone", "off-by-one"}, {"arm", "sinklogit", "sink logit"}};
  o.headers = {{"arm", "Arm"}};
  o.signed_numbers = true;
  const std::string expected =
      "| Arm | 10M | 50M | 350M |\n"
      "| :--- | ---: | ---: | ---: |\n"
      "| off-by-one | -0.0160 ± 0.0027 | – | – |\n"
      "| sink logit | -0.0185 ± 0.0033 | -0.0068 ± 0.0003 | -0.0013 |\n"
      "| renorm | +0.0017 ± 0.0014 | – | – |\n";
  CHECK(sg::render(improvements(), o) == expected);

  o.se = "none";
  o.signed_numbers = false;
  o.decimals = 2;
  o.missing = "n/a";
  const std::string bare =
      "| Arm | 10M | 50M | 350M |\n"
      "| :--- | ---: | ---: | ---: |\n"
      "| off-by-one | -0.02 | n/a | n/a |\n"
      "| sink logit | -0.02 | -0.01 | -0.00 |\n"
      "| renorm | 0.00 | n/a | n/a |\n";
  CHECK(sg::render(improvements(), o) == bare);
}

TEST_CASE("whole rows print counts without decimals, other rows keep theirs") {
  sg::ResultTable t;
  t.add_column("token", Role::key, ColumnType::string);
  t.add_column("statistic", Role::key, ColumnType::string);
  t.add_column("value", Role::value, ColumnType::float64);
  t.append_row({"the", "mean_gate", 0.5});
  t.append_row({"the", "occurrences", 39.0});
  t.append_row({"a", "mean_gate", 2.0});
  t.append_row({"a", "occurrences", 2.5});  // not whole: printed with its decimals
  sg::TabulateOptions o;
  o.rows = {"token"};
  o.cols = {"statistic"};
  o.cell = "value";
  o.decimals = 2;
  o.signed_numbers = true;
  o.whole = {{"statistic", "occurrences"}};
  CHECK(sg::render(t, o) ==
        "| token | mean_gate | occurrences |\n"
        "| :--- | ---: | ---: |\n"
        "| the | +0.50 | 39 |\n"
        "| a | +2.00 | 2.50 |\n");
}

TEST_CASE("sections, plain rows, several row keys and a row mean, in Markdown and LaTeX") {
  sg::ResultTable t;
  t.add_column("statistic", Role::key, ColumnType::string);
  t.add_column("tier", Role::key, ColumnType::string);
  t.add_column("arm", Role::key, ColumnType::string);
  t.add_column("seed", Role::key, ColumnType::int64);
  t.add_column("mean", Role::value, ColumnType::float64);
  t.add_column("se", Role::value, ColumnType::float64);
  t.append_row({"diff", "10M", "combo", 0, 0.5, 0.25});
  t.append_row({"level", "10M", "baseline", 0, 4.0, 0.5});
  t.append_row({"level", "10M", "baseline", 1, 5.0, 0.5});
  t.append_row({"level", "50M", "baseline", 0, 3.0, 0.5});
  t.append_row({"diff", "10M", "combo", 1, 1.5, 0.25});
  sg::TabulateOptions o;
  o.sections = {"statistic"};
  o.rows = {"tier", "arm"};
  o.cols = {"seed"};
  o.order = {{"statistic", {"level", "diff"}}};
  o.section_labels = {{"level", "Loss"}};
  o.labels = {{"seed", "*", "seed *"}};
  o.plain = {{"statistic", "level"}};
  o.signed_numbers = true;
  o.row_mean = true;
  o.decimals = 1;
  // Row means: (4 + 5) / 2 = 4.5; 3.0; (0.5 + 1.5) / 2 = 1.0.
  const std::string markdown =
      "| tier | arm | seed 0 | seed 1 | mean |\n"
      "| :--- | :--- | ---: | ---: | ---: |\n"
      "| **Loss** |  |  |  |  |\n"
      "| 10M | baseline | 4.0 | 5.0 | 4.5 |\n"
      "| 50M | baseline | 3.0 | – | 3.0 |\n"
      "| **diff** |  |  |  |  |\n"
      "| 10M | combo | +0.5 ± 0.2 | +1.5 ± 0.2 | 1.0 |\n";
  CHECK(sg::render(t, o) == markdown);

  o.format = sg::Format::latex;
  o.section_labels = {{"level", "Loss & more"}};
  const std::string latex =
      "\\begin{tabular}{llrrr}\n"
      "\\toprule\n"
      "tier & arm & seed 0 & seed 1 & mean \\\\\n"
      "\\midrule\n"
      "\\multicolumn{5}{l}{Loss \\& more} \\\\\n"
      "10M & baseline & $4.0$ & $5.0$ & $4.5$ \\\\\n"
      "50M & baseline & $3.0$ & -- & $3.0$ \\\\\n"
      "\\midrule\n"
      "\\multicolumn{5}{l}{diff} \\\\\n"
      "10M & combo & $+0.5\\pm 0.2$ & $+1.5\\pm 0.2$ & $1.0$ \\\\\n"
      "\\bottomrule\n"
      "\\end{tabular}\n";
  CHECK(sg::render(t, o) == latex);
}

TEST_CASE("outer row keys print once per run of equal values") {
  sg::ResultTable t;
  t.add_key("tier", std::vector<std::string>{"10M", "10M", "50M"});
  t.add_key("arm", std::vector<std::string>{"a", "b", "a"});
  t.add_value("val_loss", std::vector<double>{1, 2, 3});
  sg::TabulateOptions o;
  o.rows = {"tier", "arm"};
  o.cols = {};
  o.decimals = 0;
  // No --cols: one printed column per value (its header is empty: the column has no key values).
  const std::string expected =
      "| tier | arm |  |\n"
      "| :--- | :--- | ---: |\n"
      "| 10M | a | 1 |\n"
      "|  | b | 2 |\n"
      "| 50M | a | 3 |\n";
  CHECK(sg::render(t, o) == expected);
}

TEST_CASE("CSV and TSV pivots keep full precision, raw names and a column per se") {
  sg::TabulateOptions o;
  o.rows = {"arm"};
  o.cols = {"tier"};
  o.order = {{"tier", {"10M", "50M", "350M"}}};
  o.labels = {{"", "offbyone", "off-by-one"}};  // not used in CSV/TSV
  o.format = sg::Format::tsv;
  const std::string tsv =
      "# arm\t10M\t10M_se\t50M\t50M_se\t350M\t350M_se\n"
      "sinklogit\t-0.0185\t0.00333\t-0.00677\t0.00034\t-0.0013\tNaN\n"
      "offbyone\t-0.016\t0.0027\tNaN\tNaN\tNaN\tNaN\n"
      "renorm\t0.0017\t0.0014\tNaN\tNaN\tNaN\tNaN\n";
  CHECK(sg::render(improvements(), o) == tsv);
  o.format = sg::Format::csv;
  o.se = "none";
  const std::string csv =
      "arm,10M,50M,350M\n"
      "sinklogit,-0.0185,-0.00677,-0.0013\n"
      "offbyone,-0.016,,\n"
      "renorm,0.0017,,\n";
  CHECK(sg::render(improvements(), o) == csv);
}

TEST_CASE("without a pivot the table prints as it is, its CSV form reads back the same") {
  sg::TabulateOptions o;
  o.decimals = 5;
  const auto t = improvements().take({1, 3});
  const std::string markdown =
      "| tier | arm | mean | se | n |\n"
      "| :--- | :--- | ---: | ---: | ---: |\n"
      "| 10M | sinklogit | -0.01850 | 0.00333 | 3 |\n"
      "| 350M | sinklogit | -0.00130 | – | 1 |\n";
  CHECK(sg::render(t, o) == markdown);
  o.format = sg::Format::csv;
  std::istringstream in(sg::render(improvements(), o));
  const auto back = sg::read_csv(in, "rendered.csv");
  REQUIRE(back.names() == improvements().names());
  CHECK(back.key_names() == improvements().key_names());
  CHECK(back.column("mean").reals[0] == -0.00677);
  CHECK(std::isnan(back.column("se").reals[3]));
  CHECK(back.column("n").type == ColumnType::int64);
  o.format = sg::Format::tsv;
  o.order = {{"tier", {"350M"}}};
  CHECK_THAT(sg::render(improvements(), o), Catch::StartsWith("# tier\tarm\tmean\tse\tn\n350M\tsinklogit\t-0.0013\tNaN\t1\n"));
}

TEST_CASE("a run name with a line break keeps its row on one line in Markdown, LaTeX and TSV") {
  sg::ResultTable t;
  t.add_column("run", Role::key, ColumnType::string);
  t.add_column("arm", Role::key, ColumnType::string);
  t.add_column("val_loss", Role::value, ColumnType::float64);
  t.append_row({"two\nlines", "baseline", 3.5});
  t.append_row({"cr\r\nlf|pipe", "baseline", 3.25});
  const auto lines = [](const std::string& text) { return std::count(text.begin(), text.end(), '\n'); };
  for (const bool pivot : {false, true}) {
    sg::TabulateOptions o;
    if (pivot) {
      o.rows = {"run"};
      o.cols = {"arm"};
    }
    const std::string markdown = sg::render(t, o);
    CHECK(lines(markdown) == 4);  // header, rule, two rows
    CHECK_THAT(markdown, Catch::Contains("| two<br>lines |") && Catch::Contains("| cr<br>lf\\|pipe |"));
    o.format = sg::Format::latex;
    const std::string latex = sg::render(t, o);
    CHECK(lines(latex) == 8);  // begin, toprule, header, midrule, two rows, bottomrule, end
    CHECK_THAT(latex, Catch::Contains("two lines &") && Catch::Contains("cr lf|pipe &"));
    o.format = sg::Format::tsv;
    const std::string tsv = sg::render(t, o);
    CHECK(lines(tsv) == 3);
    CHECK_THAT(tsv, Catch::Contains("two lines\t") && Catch::Contains("cr lf|pipe\t"));
  }
}

TEST_CASE("pivot errors say what went wrong") {
  sg::TabulateOptions o;
  o.rows = {"arm"};
  o.cols = {};
  // Three sinklogit rows differ only in tier, which is neither a row nor a column key.
  CHECK_THROWS_WITH(sg::render(improvements(), o), Catch::Contains("two rows") && Catch::Contains("tier"));
  o.cols = {"tier"};
  o.rows = {"nope"};
  CHECK_THROWS_WITH(sg::render(improvements(), o), Catch::Contains("no column 'nope'"));
  o.rows = {"arm"};
  o.cell = "arm";
  CHECK_THROWS_AS(sg::render(improvements(), o), sg::UsageError);
  CHECK_THROWS_WITH(sg::split_assignment("results.h5", "--label"), Catch::Contains("results.h5"));
  const auto label = sg::parse_label("seed:*=seed *");
  CHECK(label.column == "seed");
  CHECK(label.value == "*");
  CHECK(label.text == "seed *");
  CHECK(sg::parse_label("a=b=c").text == "b=c");
  CHECK_THROWS_AS(sg::parse_format("html"), sg::UsageError);
}
