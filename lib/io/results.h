// results.h — the result table: the one format every measuring tool writes (DESIGN.md, "The
// result file"; lib/SCHEMA.md, "Result table").
//
// A table is a list of equal-length columns, each float64, int64 or string, each a key (what was
// measured: tier, arm, seed, dose, …) or a value (the measurement: val_loss, mean, se, …).
// Missing numbers are NaN (float64 columns only). Tables are read from and written to HDF5
// (format "sinkgate-result") and CSV; tables read from several files concatenate.
//
// Not here: pairing and statistics (stats.h), rendering (tabulate.h).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/base/text.h"  // split_list, for the callers that had it from here

#include "lib/io/provenance.h"

namespace sg {

inline constexpr const char* kResultFormat = "sinkgate-result";
inline constexpr int64_t kResultSchemaVersion = 1;

/// The key column naming what a row measured: the run file (or its `--label run=…`). Pairing
/// (stats.h) ignores it, since the runs of two arms always differ.
inline constexpr const char* kRunKey = "run";

enum class Role { key, value };
enum class ColumnType { float64, int64, string };

std::string to_string(Role role);
std::string to_string(ColumnType type);

/// One cell for ResultTable::append_row: a number or a string.
struct Cell {
  Cell(double v) : type(ColumnType::float64), real(v) {}
  Cell(float v) : type(ColumnType::float64), real(v) {}
  Cell(int v) : type(ColumnType::int64), integer(v) {}
  Cell(long v) : type(ColumnType::int64), integer(v) {}
  Cell(long long v) : type(ColumnType::int64), integer(v) {}
  Cell(unsigned long v) : type(ColumnType::int64), integer(static_cast<int64_t>(v)) {}
  Cell(const char* v) : type(ColumnType::string), text(v) {}
  Cell(std::string v) : type(ColumnType::string), text(std::move(v)) {}
  ColumnType type;
  double real = 0;
  int64_t integer = 0;
  std::string text;
};

/// A named column: one of the three vectors holds its cells, as `type` says.
struct Column {
  std::string name;
  Role role = Role::value;
  ColumnType type = ColumnType::float64;
  std::vector<double> reals;
  std::vector<int64_t> integers;
  std::vector<std::string> strings;
  std::string units;  // of the values ("nats", "tokens/s", "fraction"); empty when unitless or unknown

  size_t size() const;
  bool numeric() const { return type != ColumnType::string; }
  /// The cell as a number (int64 converted); UsageError for a string column.
  double number(size_t row) const;
  /// The cell as text: integers in decimal, floats in their shortest exact form ("nan" for
  /// missing), strings as they are. Cells compare equal as keys when their texts are equal.
  std::string text(size_t row) const;
  /// True for NaN in a float64 column.
  bool missing(size_t row) const;
};

class ResultTable {
 public:
  /// Adds a column (all columns must be equal in length, so add a column to an empty table or
  /// give it rows() cells). Throws UsageError on a duplicate name or a wrong length.
  Column& add_column(Column column);
  Column& add_column(const std::string& name, Role role, ColumnType type);
  Column& add_key(const std::string& name, std::vector<std::string> cells);
  Column& add_key(const std::string& name, std::vector<int64_t> cells);
  Column& add_value(const std::string& name, std::vector<double> cells);
  Column& add_value(const std::string& name, std::vector<int64_t> cells);
  Column& add_value(const std::string& name, std::vector<std::string> cells);

  /// Appends one row, cells in column order; an integer cell may go into a float64 column.
  /// Throws UsageError on a wrong count or type.
  void append_row(const std::vector<Cell>& cells);

  /// Appends the rows of `other`, whose columns must match this table's by name, role and type
  /// (int64 and float64 merge into float64); `source` names `other` in the InputError.
  /// An empty table (no columns) takes over other's columns.
  void append(const ResultTable& other, const std::string& source = "");

  size_t rows() const;
  /// Whether a column is named `name` (an index by name: constant time, so that a table of
  /// 100,000 columns is built and read in linear time).
  bool has(const std::string& name) const;
  /// The column by name; UsageError listing the columns when absent. A column's name is its key
  /// in the index: change cells, role, type or units through the reference, never `name`.
  const Column& column(const std::string& name) const;
  Column& column(const std::string& name);
  const std::vector<Column>& columns() const { return columns_; }
  std::vector<std::string> names() const;
  std::vector<std::string> key_names() const;

  /// A table of the given rows (in that order), all columns.
  ResultTable take(const std::vector<size_t>& rows) const;
  /// The rows whose `column` text is one of `values`. UsageError if the column is absent.
  ResultTable where(const std::string& column, const std::vector<std::string>& values) const;

 private:
  std::vector<Column> columns_;
  std::unordered_map<std::string, size_t> index_;  // column name -> its position in columns_
};

/// Adds string key columns from per-row (name, value) lists, one list per row of `table`: a
/// column per name in first-seen order, "" where a row lacks the name. Throws InputError naming
/// `sources[r]` (what row r came from) when a name is already a column of the table, and
/// UsageError when the lists do not match the rows.
void add_key_columns(ResultTable& table, const std::vector<std::vector<std::pair<std::string, std::string>>>& rows,
                     const std::vector<std::string>& sources);

/// The files of a table for a message: their display names (stdin as such), the first three then
/// "and N more": "a.h5, b.csv, c.h5 and 2 more".
std::string describe_inputs(const std::vector<std::string>& paths);

/// Keeps the rows matching every "COLUMN=V1,V2,…" spec (the tools' --where). UsageError for a
/// spec without '=' or an absent column.
ResultTable filter_rows(const ResultTable& table, const std::vector<std::string>& specs);

/// How CSV columns become key columns. Without `keys`, the annotation lines that write_csv
/// writes decide; without those, the non-numeric columns and a column named `seed` are keys.
struct CsvOptions {
  CsvOptions(std::vector<std::string> keys = {}, std::string source_key = {})
      : keys(std::move(keys)), source_key(std::move(source_key)) {}
  std::vector<std::string> keys;  // the key columns, by name; all others are values
  /// read_tables: when set, an input without a column of this name gets it as a key column
  /// holding the input's file name without folder and extension ("runs/a.h5" -> "a"; "stdin").
  std::string source_key;
};

/// Reads a result table from an HDF5 file (format "sinkgate-result") or a CSV file with a
/// header row; "-" reads stdin. Throws InputError naming the file.
ResultTable read_table(const std::string& path, const CsvOptions& csv = {});

/// Reads and concatenates tables (same columns in every file). Throws InputError naming the file.
ResultTable read_tables(const std::vector<std::string>& paths, const CsvOptions& csv = {});

/// Reads CSV text; `name` names the source in errors. Throws InputError.
ResultTable read_csv(std::istream& in, const std::string& name, const CsvOptions& csv = {});

/// Writes the table as HDF5 to `path` ("-": stdout) atomically, with the provenance block.
/// Throws OutputError (existing file without force, unwritable directory, …).
void write_table(const std::string& path, const ResultTable& table, const Provenance& provenance, bool force);

/// Writes the table as CSV: two comment lines ("#role,…" and "#type,…") that let read_csv
/// restore roles and types exactly, then the header row and the rows. Floats are written in
/// their shortest exact form, missing as an empty cell.
void write_csv(std::ostream& out, const ResultTable& table);

/// The shortest decimal text that reads back as exactly `value` ("nan", "inf", "-inf" too).
std::string format_exact(double value);

}  // namespace sg
