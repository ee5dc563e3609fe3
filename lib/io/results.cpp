// results.cpp — the result table in memory, in HDF5 and in CSV.
#include "lib/io/results.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <ostream>
#include <set>
#include <sstream>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/base/text.h"
#include "lib/io/h5.h"

namespace sg {
namespace {

bool parse_int(const std::string& text, int64_t& value) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  const char* begin = t.data() + (t.front() == '+' ? 1 : 0);
  const auto [end, error] = std::from_chars(begin, t.data() + t.size(), value);
  return error == std::errc() && end == t.data() + t.size();
}

bool parse_double(const std::string& text, double& value) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  value = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

ColumnType parse_type(const std::string& text, const std::string& where) {
  if (text == "float64") return ColumnType::float64;
  if (text == "int64") return ColumnType::int64;
  if (text == "string") return ColumnType::string;
  throw InputError(where + ": unknown column type '" + text + "' (float64, int64 or string)");
}

Role parse_role(const std::string& text, const std::string& where) {
  if (text == "key") return Role::key;
  if (text == "value") return Role::value;
  throw InputError(where + ": unknown column role '" + text + "' (key or value)");
}

void check_column_name(const std::string& name, const std::string& where) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw InputError(where + ": column name '" + name + "' is empty or contains '/'");
}

/// Reads one CSV record (RFC 4180 quoting: fields with commas, quotes or newlines are quoted,
/// quotes doubled). Returns false at the end of input; `line` counts physical lines.
bool read_record(std::istream& in, std::vector<std::string>& fields, size_t& line, bool& starts_with_hash) {
  fields.clear();
  std::string field;
  bool quoted = false, any = false, field_was_quoted = false;
  starts_with_hash = false;
  char c;
  while (in.get(c)) {
    if (!any) starts_with_hash = (c == '#');
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          in.get(c);
          field += '"';
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"' && field.empty() && !field_was_quoted) {
      quoted = true;
      field_was_quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
      field_was_quoted = false;
    } else if (c == '\r' && (in.peek() == '\n' || in.peek() == std::char_traits<char>::eof())) {
      continue;  // CRLF line ends
    } else if (c == '\n') {
      ++line;
      fields.push_back(field);
      return true;
    } else {
      field += c;
    }
  }
  if (!any) return false;
  fields.push_back(field);
  ++line;
  return true;
}

std::string quote_csv(const std::string& field, bool first) {
  const bool needs = field.find_first_of(",\"\n\r") != std::string::npos || (first && !field.empty() && field[0] == '#') ||
                     (!field.empty() && (field.front() == ' ' || field.back() == ' '));
  if (!needs) return field;
  std::string out = "\"";
  for (char c : field) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void write_record(std::ostream& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << quote_csv(fields[i], i == 0);
  out << "\n";
}

ResultTable read_hdf5_table(const std::string& path) {
  const auto file = h5::File::open(path);
  h5::check_format(file, kResultFormat, kResultSchemaVersion);
  const auto name = file.file();
  if (!file.is_group("table")) throw InputError(name + ": no group /table (a result file keeps its columns there)");
  const auto group = file.group("table");
  const auto names = group.has_attribute("columns") ? group.attribute_strings("columns") : group.members();
  std::set<std::string> named;
  for (const auto& column_name : names)
    if (!named.insert(column_name).second)
      throw InputError(name + ": /table's 'columns' attribute names '" + column_name + "' twice");
  // The row count the writer recorded: every column's length is checked against it before its
  // data is read, so a damaged dataspace cannot make the reader allocate for rows that are not there.
  const int64_t rows = group.has_attribute("rows") ? group.attribute_int("rows") : -1;
  ResultTable table;
  for (const auto& column_name : names) {
    // A column is a member of /table, named without a path.
    if (column_name.empty() || column_name.find('/') != std::string::npos || !group.is_dataset(column_name))
      throw InputError(name + ": /table has no column '" + column_name + "'");
    const auto dataset = group.dataset(column_name);
    const auto where = name + ": column " + dataset.path();
    const auto shape = dataset.shape();
    if (shape.size() != 1) throw InputError(where + " is not 1-D");
    if (rows >= 0 && shape[0] != rows)
      throw InputError(where + " has " + std::to_string(shape[0]) + " rows, but /table's 'rows' attribute says " +
                       std::to_string(rows));
    if (!dataset.has_attribute("role")) throw InputError(where + " has no 'role' attribute (key or value)");
    Column column;
    column.name = column_name;
    column.role = parse_role(dataset.attribute_string("role"), where);
    if (dataset.has_attribute("units")) column.units = dataset.attribute_string("units");
    const auto dtype = dataset.dtype();
    switch (dtype) {
      case h5::Dtype::string:
        column.type = ColumnType::string;
        column.strings = dataset.read_strings();
        break;
      case h5::Dtype::float32:
      case h5::Dtype::float64:
        column.type = ColumnType::float64;
        column.reals = dataset.read_doubles();
        break;
      case h5::Dtype::int8:
      case h5::Dtype::int16:
      case h5::Dtype::int32:
      case h5::Dtype::int64:
      case h5::Dtype::uint8:
      case h5::Dtype::uint16:
        column.type = ColumnType::int64;
        column.integers = dataset.read_ints();
        break;
      default:
        throw InputError(where + " holds " + h5::to_string(dtype) + " (expected float64, int64 or string)");
    }
    if (!table.columns().empty() && column.size() != table.rows())
      throw InputError(where + " has " + std::to_string(column.size()) + " rows, the others " +
                       std::to_string(table.rows()));
    table.add_column(std::move(column));
  }
  // Every member of /table is a column the attribute names: a subset
  // (each of its columns found above) would drop the others unseen.
  if (group.has_attribute("columns")) {
    const auto members = group.members();
    if (members.size() != names.size())
      throw InputError(name + ": /table's 'columns' attribute names " + std::to_string(names.size()) +
                           " columns, but /table holds " + std::to_string(members.size()) + " members",
                       "a result table lists every column it holds in 'columns'");
  }
  return table;
}

}  // namespace

std::string to_string(Role role) { return role == Role::key ? "key" : "value"; }

std::string to_string(ColumnType type) {
  switch (type) {
    case ColumnType::float64: return "float64";
    case ColumnType::int64: return "int64";
    case ColumnType::string: return "string";
  }
  return "?";
}

std::string format_exact(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, end);
}

// --- Column ---------------------------------------------------------------------------------

size_t Column::size() const {
  switch (type) {
    case ColumnType::float64: return reals.size();
    case ColumnType::int64: return integers.size();
    case ColumnType::string: return strings.size();
  }
  return 0;
}

double Column::number(size_t row) const {
  if (type == ColumnType::float64) return reals.at(row);
  if (type == ColumnType::int64) return static_cast<double>(integers.at(row));
  throw UsageError("column '" + name + "' holds strings, not numbers");
}

std::string Column::text(size_t row) const {
  if (type == ColumnType::float64) return format_exact(reals.at(row));
  if (type == ColumnType::int64) return std::to_string(integers.at(row));
  return strings.at(row);
}

bool Column::missing(size_t row) const { return type == ColumnType::float64 && std::isnan(reals.at(row)); }

// --- ResultTable ----------------------------------------------------------------------------

size_t ResultTable::rows() const { return columns_.empty() ? 0 : columns_.front().size(); }

bool ResultTable::has(const std::string& name) const { return index_.count(name) > 0; }

const Column& ResultTable::column(const std::string& name) const {
  const auto found = index_.find(name);
  if (found == index_.end())
    throw UsageError("no column '" + name + "' in the table", "its columns: " + join(names(), ", "));
  return columns_[found->second];
}

Column& ResultTable::column(const std::string& name) {
  return const_cast<Column&>(static_cast<const ResultTable&>(*this).column(name));
}

std::vector<std::string> ResultTable::names() const {
  std::vector<std::string> out;
  for (const auto& c : columns_) out.push_back(c.name);
  return out;
}

std::vector<std::string> ResultTable::key_names() const {
  std::vector<std::string> out;
  for (const auto& c : columns_)
    if (c.role == Role::key) out.push_back(c.name);
  return out;
}

Column& ResultTable::add_column(Column column) {
  if (has(column.name)) throw UsageError("duplicate column '" + column.name + "'");
  if (!columns_.empty() && column.size() != rows())
    throw UsageError("column '" + column.name + "' has " + std::to_string(column.size()) + " cells, the table " +
                     std::to_string(rows()) + " rows");
  index_.emplace(column.name, columns_.size());
  columns_.push_back(std::move(column));
  return columns_.back();
}

Column& ResultTable::add_column(const std::string& name, Role role, ColumnType type) {
  Column column;
  column.name = name;
  column.role = role;
  column.type = type;
  const size_t n = rows();
  if (type == ColumnType::float64) column.reals.assign(n, std::nan(""));
  if (type == ColumnType::int64) column.integers.assign(n, 0);
  if (type == ColumnType::string) column.strings.assign(n, "");
  return add_column(std::move(column));
}

Column& ResultTable::add_key(const std::string& name, std::vector<std::string> cells) {
  Column column{name, Role::key, ColumnType::string, {}, {}, std::move(cells), {}};
  return add_column(std::move(column));
}
Column& ResultTable::add_key(const std::string& name, std::vector<int64_t> cells) {
  Column column{name, Role::key, ColumnType::int64, {}, std::move(cells), {}, {}};
  return add_column(std::move(column));
}
Column& ResultTable::add_value(const std::string& name, std::vector<double> cells) {
  Column column{name, Role::value, ColumnType::float64, std::move(cells), {}, {}, {}};
  return add_column(std::move(column));
}
Column& ResultTable::add_value(const std::string& name, std::vector<int64_t> cells) {
  Column column{name, Role::value, ColumnType::int64, {}, std::move(cells), {}, {}};
  return add_column(std::move(column));
}
Column& ResultTable::add_value(const std::string& name, std::vector<std::string> cells) {
  Column column{name, Role::value, ColumnType::string, {}, {}, std::move(cells), {}};
  return add_column(std::move(column));
}

void ResultTable::append_row(const std::vector<Cell>& cells) {
  if (cells.size() != columns_.size())
    throw UsageError("a row of " + std::to_string(cells.size()) + " cells for a table of " +
                     std::to_string(columns_.size()) + " columns");
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& c = columns_[i];
    const auto& cell = cells[i];
    const bool ok = cell.type == c.type || (c.type == ColumnType::float64 && cell.type == ColumnType::int64);
    if (!ok) throw UsageError("a " + to_string(cell.type) + " cell for " + to_string(c.type) + " column '" + c.name + "'");
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    auto& c = columns_[i];
    const auto& cell = cells[i];
    if (c.type == ColumnType::float64)
      c.reals.push_back(cell.type == ColumnType::int64 ? static_cast<double>(cell.integer) : cell.real);
    if (c.type == ColumnType::int64) c.integers.push_back(cell.integer);
    if (c.type == ColumnType::string) c.strings.push_back(cell.text);
  }
}

void ResultTable::append(const ResultTable& other, const std::string& source) {
  if (columns_.empty()) {
    columns_ = other.columns_;
    index_ = other.index_;
    return;
  }
  const std::string where = source.empty() ? "the table" : source;
  std::vector<std::string> missing, extra;
  for (const auto& c : columns_)
    if (!other.has(c.name)) missing.push_back(c.name);
  for (const auto& c : other.columns_)
    if (!has(c.name)) extra.push_back(c.name);
  if (!missing.empty() || !extra.empty())
    throw InputError(where + ": its columns differ from the first input's" +
                         (missing.empty() ? "" : "; missing: " + join(missing, ", ")) +
                         (extra.empty() ? "" : "; extra: " + join(extra, ", ")),
                     "tables concatenate only when they have the same columns");
  for (const auto& c : columns_) {
    const auto& o = other.column(c.name);
    if (o.role != c.role)
      throw InputError(where + ": column '" + c.name + "' is a " + to_string(o.role) + " here but a " +
                       to_string(c.role) + " in the first input");
    if ((o.type == ColumnType::string) != (c.type == ColumnType::string))
      throw InputError(where + ": column '" + c.name + "' holds " + to_string(o.type) + " here but " +
                       to_string(c.type) + " in the first input");
  }
  for (auto& c : columns_) {
    const auto& o = other.column(c.name);
    if (c.type == ColumnType::int64 && o.type == ColumnType::float64) {
      c.reals.assign(c.integers.begin(), c.integers.end());
      c.integers.clear();
      c.type = ColumnType::float64;
    }
    if (c.type == ColumnType::string) c.strings.insert(c.strings.end(), o.strings.begin(), o.strings.end());
    if (c.type == ColumnType::int64) c.integers.insert(c.integers.end(), o.integers.begin(), o.integers.end());
    if (c.type == ColumnType::float64) {
      if (o.type == ColumnType::float64) c.reals.insert(c.reals.end(), o.reals.begin(), o.reals.end());
      else c.reals.insert(c.reals.end(), o.integers.begin(), o.integers.end());
    }
  }
}

ResultTable ResultTable::take(const std::vector<size_t>& rows) const {
  ResultTable out;
  for (const auto& c : columns_) {
    Column column{c.name, c.role, c.type, {}, {}, {}, c.units};
    for (size_t r : rows) {
      if (c.type == ColumnType::float64) column.reals.push_back(c.reals.at(r));
      if (c.type == ColumnType::int64) column.integers.push_back(c.integers.at(r));
      if (c.type == ColumnType::string) column.strings.push_back(c.strings.at(r));
    }
    out.add_column(std::move(column));
  }
  return out;
}

ResultTable ResultTable::where(const std::string& name, const std::vector<std::string>& values) const {
  const auto& c = column(name);
  const std::set<std::string> wanted(values.begin(), values.end());
  std::vector<size_t> keep;
  for (size_t r = 0; r < rows(); ++r)
    if (wanted.count(c.text(r))) keep.push_back(r);
  return take(keep);
}

std::string describe_inputs(const std::vector<std::string>& paths) {
  std::string names;
  for (size_t i = 0; i < paths.size() && i < 3; ++i) names += (i ? ", " : "") + h5::display_name(paths[i]);
  if (paths.size() > 3) names += " and " + std::to_string(paths.size() - 3) + " more";
  return names;
}

ResultTable filter_rows(const ResultTable& table, const std::vector<std::string>& specs) {
  ResultTable out = table;
  for (const auto& spec : specs) {
    const auto equals = spec.find('=');
    if (equals == std::string::npos || equals == 0)
      throw UsageError("--where '" + spec + "' is not of the form COLUMN=V1,V2,...",
                       "a repeatable option takes the words after it until the next option; put input files "
                       "first or end the options with --");
    const auto name = spec.substr(0, equals);
    if (!out.has(name))
      throw UsageError("no column '" + name + "' (--where) in the table", "its columns: " + join(out.names(), ", "));
    const auto values = split_list(spec.substr(equals + 1));
    auto kept = out.where(name, values);
    if (kept.rows() == 0 && out.rows() > 0) {
      // Nothing matched: a typo more often than an intended empty table. Name what is there.
      const auto& column = out.column(name);
      std::vector<std::string> present;
      for (size_t r = 0; r < column.size(); ++r)
        if (std::find(present.begin(), present.end(), column.text(r)) == present.end()) present.push_back(column.text(r));
      const std::string shown = present.size() <= 12 ? join(present, ", ")
                                                      : join({present.begin(), present.begin() + 12}, ", ") + ", …";
      throw UsageError("--where " + spec + " matches no row",
                       (values.empty() ? "" : did_you_mean(values.front(), present)) + "the values of " + name +
                           " here: " + shown);
    }
    out = kept;
  }
  return out;
}

// --- CSV ------------------------------------------------------------------------------------

namespace {

/// A CSV file's header row, with its "#role,…" and "#type,…" annotations (empty when absent).
struct CsvHeader {
  std::vector<std::string> names, roles, types;
};

/// Reads the comment lines and the header row, and checks them.
CsvHeader read_csv_header(std::istream& in, const std::string& name, size_t& line) {
  CsvHeader header;
  std::vector<std::string> fields;
  bool hash = false;
  while (true) {
    const size_t start = line + 1;
    if (!read_record(in, fields, line, hash)) throw InputError(name + ": empty file, expected a CSV header row");
    if (hash) {
      fields[0] = fields[0].substr(1);
      if (fields[0] == "role") header.roles.assign(fields.begin() + 1, fields.end());
      if (fields[0] == "type") header.types.assign(fields.begin() + 1, fields.end());
      continue;
    }
    if (fields.size() == 1 && trim(fields[0]).empty()) continue;  // a blank line
    for (const auto& field : fields) header.names.push_back(trim(field));
    for (const auto& h : header.names) check_column_name(h, name + ":" + std::to_string(start));
    break;
  }
  const auto& names = header.names;
  if (std::set<std::string>(names.begin(), names.end()).size() != names.size())
    throw InputError(name + ": the header row names a column twice");
  for (const auto& [annotation, entries] : {std::pair<const char*, const std::vector<std::string>*>{"#role", &header.roles},
                                            {"#type", &header.types}})
    if (!entries->empty() && entries->size() != names.size())
      throw InputError(name + ": the " + annotation + " line has " + std::to_string(entries->size()) + " entries for " +
                       std::to_string(names.size()) + " columns");
  return header;
}

/// The type of a column without a #type line: int64 when every non-empty cell is an integer,
/// float64 when every one is a number, else string (also when every cell is empty).
ColumnType inferred_type(const std::vector<std::string>& raw) {
  bool all_int = true, all_number = true, any = false;
  for (const auto& cell : raw) {
    int64_t integer;
    double real;
    if (trim(cell).empty()) {
      all_int = false;
      continue;
    }
    any = true;
    if (!parse_int(cell, integer)) all_int = false;
    if (!parse_double(cell, real)) all_number = false;
  }
  return !any || !all_number ? ColumnType::string : all_int ? ColumnType::int64 : ColumnType::float64;
}

/// Column i of the file: its type, its cells (lines[r]: the line of row r, for messages), its role.
Column csv_column(const CsvHeader& header, size_t i, const std::vector<std::string>& raw, const std::vector<size_t>& lines,
                  const std::string& name, const CsvOptions& csv) {
  Column column;
  column.name = header.names[i];
  column.type = !header.types.empty() ? parse_type(trim(header.types[i]), name) : inferred_type(raw);
  for (size_t r = 0; r < raw.size(); ++r) {
    const auto where = name + ":" + std::to_string(lines[r]) + ": column '" + column.name + "'";
    if (column.type == ColumnType::string) {
      column.strings.push_back(raw[r]);
    } else if (column.type == ColumnType::int64) {
      int64_t v;
      if (!parse_int(raw[r], v)) throw InputError(where + " expects an integer, got '" + raw[r] + "'");
      column.integers.push_back(v);
    } else {
      double v = std::nan("");
      if (!trim(raw[r]).empty() && !parse_double(raw[r], v))
        throw InputError(where + " expects a number, got '" + raw[r] + "'");
      column.reals.push_back(v);
    }
  }
  if (!csv.keys.empty())
    column.role = std::find(csv.keys.begin(), csv.keys.end(), column.name) != csv.keys.end() ? Role::key : Role::value;
  else if (!header.roles.empty())
    column.role = parse_role(trim(header.roles[i]), name);
  else
    column.role = (column.type == ColumnType::string || column.name == "seed") ? Role::key : Role::value;
  return column;
}

/// A result table has key columns and value columns. Text with one column, or with no numeric
/// column among rows, is some other file (a note, a host name, a Markdown table): refuse it
/// rather than render it. A header without rows cannot show its types, and passes.
void check_result_table(const ResultTable& table, const std::vector<std::string>& header, const std::string& name) {
  const bool any_value = std::any_of(table.columns().begin(), table.columns().end(),
                                     [](const Column& c) { return c.role == Role::value; });
  const bool any_key = std::any_of(table.columns().begin(), table.columns().end(),
                                   [](const Column& c) { return c.role == Role::key; });
  if (header.size() >= 2 && (table.rows() == 0 || (any_value && any_key))) return;
  throw InputError(name + ": not a result table (CSV): " + std::to_string(header.size()) + " column(s) (" +
                       join(header.size() <= 6 ? header : std::vector<std::string>(header.begin(), header.begin() + 6),
                            ", ") +
                       (header.size() > 6 ? ", …" : "") + "), " + (any_key ? "" : "no key column") +
                       (!any_key && !any_value ? " and " : "") + (any_value ? "" : "no value column"),
                   "a CSV result table has a header row naming key columns (text, or seed) and value columns "
                   "(numbers), as sg-tabulate --format csv writes it");
}

}  // namespace

ResultTable read_csv(std::istream& in, const std::string& name, const CsvOptions& csv) {
  size_t line = 0;
  const CsvHeader header = read_csv_header(in, name, line);
  const auto& names = header.names;
  std::vector<std::string> fields;
  bool hash = false;
  std::vector<std::vector<std::string>> cells(names.size());
  std::vector<size_t> lines;
  while (true) {
    const size_t start = line + 1;
    if (!read_record(in, fields, line, hash)) break;
    if (fields.size() == 1 && trim(fields[0]).empty()) continue;
    if (fields.size() != names.size())
      throw InputError(name + ":" + std::to_string(start) + ": " + std::to_string(fields.size()) + " fields, expected " +
                       std::to_string(names.size()));
    for (size_t i = 0; i < fields.size(); ++i) cells[i].push_back(fields[i]);
    lines.push_back(start);
  }
  for (const auto& key : csv.keys)
    if (std::find(names.begin(), names.end(), key) == names.end())
      throw UsageError("no column '" + key + "' in " + name + " (named by --keys)", "its columns: " + join(names, ", "));
  ResultTable table;
  for (size_t i = 0; i < names.size(); ++i) table.add_column(csv_column(header, i, cells[i], lines, name, csv));
  check_result_table(table, names, name);
  return table;
}

void write_csv(std::ostream& out, const ResultTable& table) {
  std::vector<std::string> roles{"#role"}, types{"#type"};
  for (const auto& c : table.columns()) {
    roles.push_back(to_string(c.role));
    types.push_back(to_string(c.type));
  }
  out << join(roles, ",") << "\n" << join(types, ",") << "\n";
  write_record(out, table.names());
  for (size_t r = 0; r < table.rows(); ++r) {
    std::vector<std::string> fields;
    for (const auto& c : table.columns()) fields.push_back(c.missing(r) ? "" : c.text(r));
    write_record(out, fields);
  }
}

// --- files ----------------------------------------------------------------------------------

ResultTable read_table(const std::string& path, const CsvOptions& csv) {
  const std::string name = h5::display_name(path);
  if (h5::is_hdf5(path)) return read_hdf5_table(path);
  auto in = open_input(h5::resolve_input(path));
  const std::string text = in.read_all(uint64_t{4} << 30, "the result table");
  if (text.find('\0') != std::string::npos)
    throw InputError(name + ": neither an HDF5 file nor CSV text",
                     "result tables are HDF5 files written by sg- tools, or CSV files with a header row");
  std::istringstream stream(text);
  return read_csv(stream, name, csv);
}

void add_key_columns(ResultTable& table, const std::vector<std::vector<std::pair<std::string, std::string>>>& rows,
                     const std::vector<std::string>& sources) {
  if (rows.size() != table.rows() || sources.size() != table.rows())
    throw UsageError("add_key_columns: " + std::to_string(rows.size()) + " key lists for " +
                     std::to_string(table.rows()) + " rows");
  std::vector<std::string> names;
  for (size_t r = 0; r < rows.size(); ++r)
    for (const auto& [name, value] : rows[r]) {
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      if (table.has(name))
        throw InputError(sources[r] + ": its key '" + name + "' is already a column of the table",
                         "give the run another label name (sg-train --label NAME=VALUE)");
      names.push_back(name);
    }
  for (const auto& name : names) {
    std::vector<std::string> cells(rows.size());
    for (size_t r = 0; r < rows.size(); ++r)
      for (const auto& [key, value] : rows[r])
        if (key == name) cells[r] = value;
    table.add_key(name, std::move(cells));
  }
}

ResultTable read_tables(const std::vector<std::string>& paths, const CsvOptions& csv) {
  ResultTable all;
  for (const auto& path : paths) {
    auto table = read_table(path, csv);
    if (!csv.source_key.empty() && !table.has(csv.source_key)) {
      std::string stem = h5::display_name(path);
      const auto slash = stem.find_last_of('/');
      if (slash != std::string::npos) stem = stem.substr(slash + 1);
      const auto dot = stem.find_last_of('.');
      if (dot != std::string::npos && dot > 0) stem = stem.substr(0, dot);
      table.add_key(csv.source_key, std::vector<std::string>(table.rows(), stem));
    }
    all.append(table, h5::display_name(path));
  }
  return all;
}

void write_table(const std::string& path, const ResultTable& table, const Provenance& provenance, bool force) {
  for (const auto& c : table.columns())
    if (c.name.empty() || c.name.find('/') != std::string::npos || c.name == "." || c.name == "..")
      throw OutputError("cannot write " + h5::display_name(path) + ": column name '" + c.name +
                        "' is empty or contains '/'");
  h5::Writer writer(path, force);
  auto& root = writer.root();
  h5::set_format(root, kResultFormat, kResultSchemaVersion);
  write_provenance(root, provenance);
  auto group = root.create_group("table", static_cast<int64_t>(table.columns().size()));
  group.set_attribute("columns", table.names());
  group.set_attribute("rows", static_cast<int64_t>(table.rows()));
  for (const auto& c : table.columns()) {
    h5::Dataset dataset;
    if (c.type == ColumnType::float64) dataset = group.write_doubles(c.name, c.reals);
    if (c.type == ColumnType::int64) dataset = group.write_ints(c.name, c.integers);
    if (c.type == ColumnType::string) dataset = group.write_strings(c.name, c.strings);
    dataset.set_attribute("role", to_string(c.role));
    if (!c.units.empty()) dataset.set_attribute("units", c.units);
  }
  writer.commit();
}

}  // namespace sg
