// Tests of lib/io/results and lib/io/provenance: building tables, HDF5 and CSV round trips, CSV type
// and role inference, concatenation of mixed inputs, and the provenance block.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "lib/base/error.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "tests/support.h"

using sg::ColumnType;
using sg::Role;

namespace {

using sg_test::Scratch;

sg::ResultTable sample() {
  sg::ResultTable t;
  t.add_column("tier", Role::key, ColumnType::string);
  t.add_column("seed", Role::key, ColumnType::int64);
  t.add_column("dose", Role::key, ColumnType::float64);
  t.add_column("val_loss", Role::value, ColumnType::float64);
  t.add_column("seeds", Role::value, ColumnType::string);
  t.append_row({"10M", 0, 0.2, 4.2141, "0,1,2"});
  t.append_row({"10M, \"quoted\"", 1, 0.4, std::nan(""), "1"});
  t.append_row({"#hash", 2, 1, 4.0, ""});  // an integer into a float64 column
  return t;
}

void require_same(const sg::ResultTable& a, const sg::ResultTable& b) {
  REQUIRE(a.names() == b.names());
  REQUIRE(a.rows() == b.rows());
  for (const auto& column : a.columns()) {
    const auto& other = b.column(column.name);
    INFO(column.name);
    CHECK(other.role == column.role);
    CHECK(other.type == column.type);
    for (size_t r = 0; r < a.rows(); ++r) {
      if (column.type == ColumnType::float64 && std::isnan(column.reals[r])) CHECK(std::isnan(other.reals[r]));
      else CHECK(other.text(r) == column.text(r));
    }
  }
}

}  // namespace

TEST_CASE("tables are built by columns or rows and refuse mismatches") {
  auto t = sample();
  CHECK(t.rows() == 3);
  CHECK(t.key_names() == std::vector<std::string>{"tier", "seed", "dose"});
  CHECK(t.column("dose").reals[2] == 1.0);
  CHECK(t.column("dose").text(0) == "0.2");
  CHECK(t.column("seed").number(1) == 1.0);
  CHECK(t.column("val_loss").missing(1));
  CHECK_THROWS_AS(t.append_row({"x", 0}), sg::UsageError);
  CHECK_THROWS_AS(t.append_row({"x", 0.5, 0.2, 1.0, "s"}), sg::UsageError);  // a float into int64
  CHECK_THROWS_AS(t.add_value("short", std::vector<double>{1.0}), sg::UsageError);
  CHECK_THROWS_AS(t.add_value("tier", std::vector<double>{1, 2, 3}), sg::UsageError);
  CHECK_THROWS_AS(t.column("nope"), sg::UsageError);
  const auto kept = t.where("seed", {"0", "2"});
  CHECK(kept.rows() == 2);
  CHECK(kept.column("tier").strings[1] == "#hash");
  const auto filtered = sg::filter_rows(t, {"seed=0,1,2", "dose=0.2,1"});
  CHECK(filtered.column("seed").integers == std::vector<int64_t>{0, 2});
  CHECK_THROWS_WITH(sg::filter_rows(t, {"nope=1"}), Catch::Contains("no column 'nope'"));
  CHECK_THROWS_WITH(sg::filter_rows(t, {"table.h5"}), Catch::Contains("table.h5"));
  CHECK(sg::split_list(" a, b ,,c ") == std::vector<std::string>{"a", "b", "c"});
  CHECK(sg::format_exact(0.1) == "0.1");
  CHECK(sg::format_exact(4.2141) == "4.2141");
}

TEST_CASE("the index by name finds every column and refuses a duplicate, also after concatenation and row selection") {
  sg::ResultTable t;
  const int n = 5000;
  for (int i = 0; i < n; ++i) t.add_value("c" + std::to_string(i), std::vector<int64_t>{i, 2 * i});
  // Each name finds the column added under it: its cells are the ones added, by position.
  for (int i = 0; i < n; i += 7) {
    INFO(i);
    REQUIRE(t.has("c" + std::to_string(i)));
    CHECK(t.column("c" + std::to_string(i)).integers == std::vector<int64_t>{i, 2 * i});
    CHECK(&t.column("c" + std::to_string(i)) == &t.columns()[static_cast<size_t>(i)]);
  }
  CHECK_FALSE(t.has("c5000"));
  CHECK_FALSE(t.has("c"));
  CHECK_THROWS_WITH(t.add_value("c4999", std::vector<int64_t>{0, 0}), Catch::Contains("duplicate column 'c4999'"));
  CHECK_THROWS_WITH(t.add_column("c0", Role::key, ColumnType::string), Catch::Contains("duplicate column 'c0'"));
  CHECK(t.columns().size() == static_cast<size_t>(n));
  // A refused column leaves the index as it was: the next new name still goes last.
  t.add_key("arm", std::vector<std::string>{"a", "b"});
  CHECK(&t.column("arm") == &t.columns().back());
  // A table made by concatenation or by selecting rows keeps an index of its own.
  sg::ResultTable all;
  all.append(t);
  all.append(t);
  CHECK(all.rows() == 4);
  CHECK(all.column("c42").integers == std::vector<int64_t>{42, 84, 42, 84});
  CHECK_THROWS_AS(all.add_key("arm", std::vector<std::string>(4, "x")), sg::UsageError);
  const auto second = t.take({1});
  CHECK(second.column("c42").integers == std::vector<int64_t>{84});
  CHECK(second.column("arm").strings == std::vector<std::string>{"b"});
  CHECK_FALSE(second.has("c5000"));
}

TEST_CASE("a result table written as HDF5 reads back the same, with provenance") {
  Scratch scratch;
  const auto input = scratch / "input.txt";
  std::ofstream(input) << "abc";
  const auto path = scratch / "result.h5";
  const auto provenance = sg::make_provenance("sg-test", "sg-test --x 1", {input}, "x=1");
  sg::write_table(path, sample(), provenance, /*force=*/false);
  require_same(sample(), sg::read_table(path));
  CHECK_THROWS_AS(sg::write_table(path, sample(), provenance, false), sg::OutputError);

  const auto file = sg::h5::File::open(path);
  CHECK(file.attribute_string("format") == "sinkgate-result");
  CHECK(file.attribute_int("schema_version") == 1);
  CHECK(file.group("table").dataset("seed").attribute_string("role") == "key");
  const auto back = sg::read_provenance(file);
  CHECK(back.tool == "sg-test");
  CHECK(back.command_line == "sg-test --x 1");
  CHECK(back.config == "x=1");
  REQUIRE(back.inputs.size() == 1);
  CHECK(back.inputs[0].path == input);
  // SHA-256("abc"), FIPS 180-2 test vector.
  CHECK(back.inputs[0].sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(back.created.size() == 20);
  CHECK(back.created.back() == 'Z');
  CHECK(sg::sha256_bytes("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

  // Units travel as an attribute of the column's dataset; a column without them has none.
  auto with_units = sample();
  with_units.column("val_loss").units = "nats";
  const auto units_path = scratch / "units.h5";
  sg::write_table(units_path, with_units, provenance, false);
  CHECK(sg::h5::File::open(units_path).group("table").dataset("val_loss").attribute_string("units") == "nats");
  CHECK_FALSE(sg::h5::File::open(units_path).group("table").dataset("seed").has_attribute("units"));
  const auto read_back = sg::read_table(units_path);
  CHECK(read_back.column("val_loss").units == "nats");
  CHECK(read_back.column("seed").units.empty());
  CHECK(read_back.take({0}).column("val_loss").units == "nats");
}

TEST_CASE("a result table rendered to CSV reads back the same table") {
  std::ostringstream out;
  sg::write_csv(out, sample());
  std::istringstream in(out.str());
  require_same(sample(), sg::read_csv(in, "round-trip.csv"));
  CHECK_THAT(out.str(), Catch::StartsWith("#role,key,key,key,value,value\n#type,string,int64,float64,float64,string\n"
                                          "tier,seed,dose,val_loss,seeds\n10M,0,0.2,4.2141,\"0,1,2\"\n"));
}

TEST_CASE("CSV without annotations: numbers, strings, keys by default and by option") {
  std::istringstream in(
      "# a comment line\n"
      "tier,arm,seed,val_loss,steps,note\r\n"
      "10M,baseline,0,4.2141,100,\"a, b\"\r\n"
      "10M,combo,1,,200,x\r\n"
      "\n");
  const auto t = sg::read_csv(in, "plain.csv");
  CHECK(t.rows() == 2);
  CHECK(t.column("tier").type == ColumnType::string);
  CHECK(t.column("seed").type == ColumnType::int64);
  CHECK(t.column("val_loss").type == ColumnType::float64);
  CHECK(std::isnan(t.column("val_loss").reals[1]));
  CHECK(t.column("steps").type == ColumnType::int64);
  CHECK(t.column("note").strings[0] == "a, b");
  CHECK(t.key_names() == std::vector<std::string>{"tier", "arm", "seed", "note"});

  std::istringstream again(
      "tier,arm,seed,val_loss,steps,note\n"
      "10M,baseline,0,4.2141,100,y\n");
  const auto keyed = sg::read_csv(again, "plain.csv", {{"tier", "arm", "seed", "steps"}});
  CHECK(keyed.key_names() == std::vector<std::string>{"tier", "arm", "seed", "steps"});

  std::istringstream ragged("a,b\n1,2\n3\n");
  try {
    sg::read_csv(ragged, "ragged.csv");
    FAIL("a ragged CSV was accepted");
  } catch (const sg::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("ragged.csv:3") && Catch::Contains("1 fields, expected 2"));
  }
  std::istringstream empty("");
  CHECK_THROWS_AS(sg::read_csv(empty, "empty.csv"), sg::InputError);
  std::istringstream bad_type("#type,int64\nn\nabc\n");
  CHECK_THROWS_WITH(sg::read_csv(bad_type, "typed.csv"), Catch::Contains("typed.csv:3"));
}

TEST_CASE("HDF5 and CSV inputs concatenate, mismatched columns name the file") {
  Scratch scratch;
  sg::ResultTable first;
  first.add_key("tier", std::vector<std::string>{"10M", "10M"});
  first.add_key("seed", std::vector<int64_t>{0, 1});
  first.add_value("val_loss", std::vector<int64_t>{4, 5});  // int64 here, float64 in the CSV
  const auto h5_path = scratch / "first.h5";
  sg::write_table(h5_path, first, sg::make_provenance("sg-test", "", {}), false);
  const auto csv_path = scratch / "second.csv";
  std::ofstream(csv_path) << "tier,seed,val_loss\n50M,0,3.5\n";
  const auto all = sg::read_tables({h5_path, csv_path});
  REQUIRE(all.rows() == 3);
  CHECK(all.column("tier").strings == std::vector<std::string>{"10M", "10M", "50M"});
  CHECK(all.column("val_loss").type == ColumnType::float64);
  CHECK(all.column("val_loss").reals == std::vector<double>{4, 5, 3.5});

  const auto other_path = scratch / "other.csv";
  std::ofstream(other_path) << "tier,seed,loss\n50M,0,3.5\n";
  CHECK_THROWS_WITH(sg::read_tables({h5_path, other_path}),
                    Catch::Contains(other_path) && Catch::Contains("missing: val_loss") && Catch::Contains("extra: loss"));

  const auto binary = scratch / "weights.bin";
  std::ofstream(binary, std::ios::binary) << std::string("\x01\x00\x02\x03", 4);
  CHECK_THROWS_WITH(sg::read_table(binary), Catch::Contains(binary) && Catch::Contains("neither"));

  const auto wrong_kind = scratch / "run.h5";
  {
    sg::h5::Writer writer(wrong_kind, false);
    sg::h5::set_format(writer.root(), "sinkgate-run", 1);
    writer.commit();
  }
  CHECK_THROWS_WITH(sg::read_table(wrong_kind), Catch::Contains(wrong_kind) && Catch::Contains("sinkgate-run"));
  CHECK_THROWS_AS(sg::read_table(scratch / "absent.csv"), sg::InputError);
}

TEST_CASE("key columns from per-row lists: the union of names in order, empty where a row lacks one") {
  sg::ResultTable table;
  table.add_key("tier", std::vector<std::string>{"tiny", "tiny", "tiny"});
  table.add_value("val_loss", std::vector<double>{1, 2, 3});
  sg::add_key_columns(table, {{{"run", "a.h5"}}, {{"run", "b.h5"}, {"lr", "3e-4"}}, {{"run", "c"}, {"sweep", "w"}}},
                      {"a.h5", "b.h5", "c.h5"});
  CHECK(table.key_names() == std::vector<std::string>{"tier", "run", "lr", "sweep"});
  CHECK(table.column("run").strings == std::vector<std::string>{"a.h5", "b.h5", "c"});
  CHECK(table.column("lr").strings == std::vector<std::string>{"", "3e-4", ""});
  CHECK_THROWS_WITH(sg::add_key_columns(table, {{}, {{"val_loss", "x"}}, {}}, {"a.h5", "b.h5", "c.h5"}),
                    Catch::Contains("b.h5") && Catch::Contains("'val_loss' is already a column"));
  CHECK_THROWS_AS(sg::add_key_columns(table, {{}}, {"a.h5"}), sg::UsageError);
}

TEST_CASE("a source key tells the inputs apart: each input lacking it gets its file name") {
  Scratch scratch;
  sg::ResultTable ours;
  ours.add_key("tier", std::vector<std::string>{"124M"});
  ours.add_value("delta_loss", std::vector<double>{0.25});
  const auto h5_path = scratch / "table7.h5";
  sg::write_table(h5_path, ours, sg::make_provenance("sg-test", "", {}), false);
  const auto paper = scratch / "paper.csv";  // has the column already: kept as it is
  std::ofstream(paper) << "source,tier,delta_loss\npaper,124M,0.11\n";
  const auto plain = scratch / "runs.v2.csv";
  std::ofstream(plain) << "tier,delta_loss\n350M,0.5\n";
  sg::CsvOptions csv;
  csv.source_key = "source";
  const auto all = sg::read_tables({h5_path, paper, plain}, csv);
  REQUIRE(all.rows() == 3);
  CHECK(all.column("source").role == sg::Role::key);
  CHECK(all.column("source").strings == std::vector<std::string>{"table7", "paper", "runs.v2"});
  CHECK(all.column("delta_loss").reals == std::vector<double>{0.25, 0.11, 0.5});
  // Without the option the same inputs do not concatenate.
  CHECK_THROWS_WITH(sg::read_tables({h5_path, paper}), Catch::Contains("extra: source"));
}

TEST_CASE("a result file whose rows attribute or column list disagrees with its data is refused before reading") {
  sg_test::Scratch scratch;
  auto write = [&](const std::string& name, int64_t rows, std::vector<std::string> columns) {
    const auto path = scratch / name;
    sg::h5::Writer writer(path, false);
    sg::h5::set_format(writer.root(), "sinkgate-result", 1);
    auto table = writer.root().create_group("table");
    table.set_attribute("rows", rows);
    table.set_attribute("columns", columns);
    table.write_doubles("val_loss", {1.0, 2.0, 3.0}).set_attribute("role", "value");
    writer.commit();
    return path;
  };
  CHECK(sg::read_table(write("good.h5", 3, {"val_loss"})).rows() == 3);
  const auto rows = write("rows.h5", 5, {"val_loss"});
  CHECK_THROWS_WITH(sg::read_table(rows), Catch::Contains(rows) && Catch::Contains("'rows' attribute says 5"));
  const auto twice = write("twice.h5", 3, {"val_loss", "val_loss"});
  CHECK_THROWS_WITH(sg::read_table(twice), Catch::Contains(twice) && Catch::Contains("names 'val_loss' twice"));
  const auto absent = write("absent.h5", 3, {"val_loss", "seed"});
  CHECK_THROWS_WITH(sg::read_table(absent), Catch::Contains(absent) && Catch::Contains("no column 'seed'"));
  // The attribute names every column, by its name in /table: not a subset, not a path.
  const auto none = write("none.h5", 3, {});
  CHECK_THROWS_WITH(sg::read_table(none), Catch::Contains(none) && Catch::Contains("names 0 columns, but /table holds 1"));
  const auto path = write("path.h5", 3, {"/table/val_loss"});
  CHECK_THROWS_WITH(sg::read_table(path), Catch::Contains(path) && Catch::Contains("no column '/table/val_loss'"));
}

TEST_CASE("a wide table of 3,000 columns round trips through HDF5") {
  sg_test::Scratch scratch;
  sg::ResultTable table;
  table.add_key("arm", std::vector<std::string>{"baseline", "combo2"});
  for (int i = 0; i < 3000; ++i) {
    if (i % 3 == 0) table.add_value("f" + std::to_string(i), std::vector<double>{i * 0.5, -i * 0.25});
    if (i % 3 == 1) table.add_value("i" + std::to_string(i), std::vector<int64_t>{i, -i});
    if (i % 3 == 2) table.add_value("s" + std::to_string(i), std::vector<std::string>{std::to_string(i), ""});
  }
  const auto path = scratch / "wide.h5";
  sg::write_table(path, table, sg::Provenance{}, false);
  const auto back = sg::read_table(path);
  REQUIRE(back.names() == table.names());
  for (const auto& column : table.columns()) {
    const auto& other = back.column(column.name);
    CHECK(other.type == column.type);
    CHECK(other.text(0) == column.text(0));
    CHECK(other.text(1) == column.text(1));
  }
}

TEST_CASE("provenance of thousands of inputs and a long command line: datasets, not attributes, read back the same") {
  sg_test::Scratch scratch;
  sg::Provenance provenance;
  provenance.tool = "sg-test";
  for (int i = 0; i < 5000; ++i)
    provenance.inputs.push_back({"corpus/a-rather-long-folder-name/document-" + std::to_string(i) + ".txt",
                                 std::string(64, static_cast<char>('a' + i % 26))});
  provenance.command_line = "sg-tokenize";
  for (const auto& input : provenance.inputs) provenance.command_line += " " + input.path;
  provenance.config = "short";
  {
    sg::h5::Writer writer(scratch / "big.h5", /*force=*/true);
    sg::write_provenance(writer.root(), provenance);
    writer.commit();
  }
  const auto file = sg::h5::File::open(scratch / "big.h5");
  CHECK_FALSE(file.has_attribute("input_files"));
  CHECK(file.is_dataset("provenance/input_files"));
  CHECK(file.has_attribute("config"));  // short ones stay attributes
  const auto back = sg::read_provenance(file);
  REQUIRE(back.inputs.size() == provenance.inputs.size());
  CHECK(back.inputs[4999].path == provenance.inputs[4999].path);
  CHECK(back.inputs[17].sha256 == provenance.inputs[17].sha256);
  CHECK(back.command_line == provenance.command_line);
  CHECK(back.config == "short");
}
