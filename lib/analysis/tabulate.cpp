// tabulate.cpp — pivoting a result table and rendering it as Markdown, LaTeX, CSV or TSV.
#include "lib/analysis/tabulate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

#include "lib/base/error.h"
#include "lib/base/text.h"

namespace sg {
namespace {

struct FormatEntry;
const FormatEntry& entry_of(Format format);
bool is_text_format(Format format);
const char* default_missing(Format format);

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", std::max(decimals, 0), value);
  return buffer;
}

/// `text` with each line break ("\r\n", "\n" or "\r") replaced by `mark`: a text format's row is
/// one line, whatever a run's name or a label holds.
std::string replace_line_breaks(const std::string& text, const std::string& mark) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') {
      out += text[i];
      continue;
    }
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    out += mark;
  }
  return out;
}

std::string escape_markdown(const std::string& text) {
  std::string out;
  for (char c : replace_line_breaks(text, "<br>")) out += (c == '|') ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string escape_latex(const std::string& text) {
  std::string out;
  for (char c : replace_line_breaks(text, " ")) {
    switch (c) {
      case '&': case '%': case '$': case '#': case '_': case '{': case '}': out += std::string("\\") + c; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '\\': out += "\\textbackslash{}"; break;
      default: out += c;
    }
  }
  return out;
}

std::string escape_tsv(const std::string& text) {
  std::string out = replace_line_breaks(text, " ");
  for (char& c : out)
    if (c == '\t') c = ' ';
  return out;
}

/// Resolves labels, headers and orders; formats numbers for one output format.
class Style {
 public:
  Style(const TabulateOptions& options) : options_(options) {
    missing_ = options.missing.empty() ? default_missing(options.format) : options.missing;
  }

  const std::string& missing() const { return missing_; }

  /// The display text of value `value` of key column `column` (labels apply to Markdown/LaTeX).
  std::string label(const std::string& column, const std::string& value) const {
    if (!is_text_format(options_.format)) return value;
    const Label* found = nullptr;
    int best = 0;
    for (const auto& l : options_.labels) {
      int score = 0;
      if (l.column == column && l.value == value) score = 3;
      else if (l.column == column && l.value == "*") score = 2;
      else if (l.column.empty() && l.value == value) score = 1;
      if (score > best) {
        best = score;
        found = &l;
      }
    }
    if (!found) return value;
    if (found->value != "*") return found->text;
    std::string text = found->text;
    const auto star = text.find('*');
    if (star != std::string::npos) text.replace(star, 1, value);
    return text;
  }

  std::string header(const std::string& column) const {
    if (!is_text_format(options_.format)) return column;
    for (const auto& [name, text] : options_.headers)
      if (name == column) return text;
    return column;
  }

  /// The position of `value` among the values of `column`: listed ones first, in their order.
  size_t rank(const std::string& column, const std::string& value, size_t first_seen) const {
    for (const auto& [name, values] : options_.order) {
      if (name != column) continue;
      const auto it = std::find(values.begin(), values.end(), value);
      if (it != values.end()) return static_cast<size_t>(it - values.begin());
      return values.size() + first_seen;
    }
    return first_seen;
  }

  /// A number for a cell: fixed decimals in Markdown/LaTeX, exact in CSV/TSV.
  /// whole: a whole number prints without decimals (a count in a float column).
  std::string number(const Column& column, size_t row, bool sign, bool whole = false) const {
    if (column.missing(row)) return missing_;
    if (column.type == ColumnType::int64) {
      const auto v = column.integers[row];
      return (sign && v > 0 ? "+" : "") + std::to_string(v);
    }
    const double v = column.reals[row];
    if (!is_text_format(options_.format)) return format_exact(v);
    if (whole && std::abs(v) < 1e15 && v == std::floor(v)) return std::to_string(static_cast<int64_t>(v));
    return (sign && v > 0 ? "+" : "") + fixed(v, options_.decimals);
  }

  std::string number(double v) const {
    if (std::isnan(v)) return missing_;
    return is_text_format(options_.format) ? fixed(v, options_.decimals) : format_exact(v);
  }

 private:
  const TabulateOptions& options_;
  std::string missing_;
};

/// One printed row: its section and row key values (texts) and a cell per printed column
/// (an input row number, or npos).
struct PrintedRow {
  std::vector<std::string> section, keys;
  std::vector<size_t> cells;
};

struct Pivot {
  std::vector<std::vector<std::string>> cols;  // per printed column, its col key values
  std::vector<PrintedRow> rows;                // sorted
};

/// Sorts tuples of values of `columns` by each column's rank.
class TupleOrder {
 public:
  TupleOrder(const ResultTable& table, const std::vector<std::string>& columns, const Style& style)
      : columns_(columns), style_(style) {
    for (const auto& name : columns) {
      auto& seen = first_seen_[name];
      const auto& column = table.column(name);
      for (size_t r = 0; r < table.rows(); ++r) seen.emplace(column.text(r), seen.size());
    }
  }
  std::vector<size_t> ranks(const std::vector<std::string>& tuple) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < tuple.size(); ++i)
      out.push_back(style_.rank(columns_[i], tuple[i], first_seen_.at(columns_[i]).at(tuple[i])));
    return out;
  }

 private:
  std::vector<std::string> columns_;
  const Style& style_;
  std::map<std::string, std::map<std::string, size_t>> first_seen_;
};

std::vector<std::string> tuple_of(const ResultTable& table, const std::vector<std::string>& columns, size_t row) {
  std::vector<std::string> out;
  for (const auto& c : columns) out.push_back(table.column(c).text(row));
  return out;
}

void require_columns(const ResultTable& table, const std::vector<std::string>& columns, const std::string& option) {
  for (const auto& c : columns)
    if (!table.has(c))
      throw UsageError("no column '" + c + "' (" + option + ") in the table", "its columns: " + join(table.names(), ", "));
}

Pivot make_pivot(const ResultTable& table, const TabulateOptions& options, const Style& style) {
  std::vector<std::string> outer = options.sections;
  outer.insert(outer.end(), options.rows.begin(), options.rows.end());
  const TupleOrder row_order(table, outer, style), col_order(table, options.cols, style);

  std::map<std::vector<std::string>, size_t> col_index_of;
  std::vector<std::vector<std::string>> cols;
  std::map<std::vector<std::string>, size_t> row_index_of;
  std::vector<std::vector<std::string>> outer_tuples;
  for (size_t r = 0; r < table.rows(); ++r) {
    auto c = tuple_of(table, options.cols, r);
    if (col_index_of.emplace(c, cols.size()).second) cols.push_back(c);
    auto o = tuple_of(table, outer, r);
    if (row_index_of.emplace(o, outer_tuples.size()).second) outer_tuples.push_back(o);
  }
  auto sorted = [](std::vector<std::vector<std::string>> tuples, const TupleOrder& order) {
    std::stable_sort(tuples.begin(), tuples.end(),
                     [&](const auto& a, const auto& b) { return order.ranks(a) < order.ranks(b); });
    return tuples;
  };
  Pivot pivot;
  pivot.cols = sorted(cols, col_order);
  const auto rows = sorted(outer_tuples, row_order);
  std::map<std::vector<std::string>, size_t> col_position, row_position;
  for (size_t i = 0; i < pivot.cols.size(); ++i) col_position[pivot.cols[i]] = i;
  for (size_t i = 0; i < rows.size(); ++i) {
    row_position[rows[i]] = i;
    PrintedRow printed;
    printed.section.assign(rows[i].begin(), rows[i].begin() + static_cast<long>(options.sections.size()));
    printed.keys.assign(rows[i].begin() + static_cast<long>(options.sections.size()), rows[i].end());
    printed.cells.assign(pivot.cols.size(), std::string::npos);
    pivot.rows.push_back(printed);
  }
  for (size_t r = 0; r < table.rows(); ++r) {
    auto& slot = pivot.rows[row_position.at(tuple_of(table, outer, r))].cells[col_position.at(tuple_of(table, options.cols, r))];
    if (slot != std::string::npos) {
      std::vector<std::string> differ;
      for (const auto& key : table.key_names())
        if (table.column(key).text(slot) != table.column(key).text(r)) differ.push_back(key);
      std::string where;
      for (const auto& name : outer) where += (where.empty() ? "" : ", ") + name + "=" + table.column(name).text(r);
      for (const auto& name : options.cols) where += (where.empty() ? "" : ", ") + name + "=" + table.column(name).text(r);
      throw UsageError("two rows fall into the cell " + where +
                           (differ.empty() ? " (they have equal keys: an input given twice?)"
                                           : "; they differ in " + join(differ, ", ")),
                       "add those columns to --rows/--cols, or keep one value with --where COLUMN=VALUE");
    }
    slot = r;
  }
  return pivot;
}

bool matches(const ResultTable& table, const std::vector<std::pair<std::string, std::string>>& specs, size_t row) {
  for (const auto& [column, value] : specs)
    if (table.has(column) && table.column(column).text(row) == value) return true;
  return false;
}

/// The column shown in cells: options.cell, else `mean`, else the only numeric value column.
std::string cell_column(const ResultTable& table, const TabulateOptions& options) {
  if (!options.cell.empty()) return options.cell;
  if (table.has("mean")) return "mean";
  std::vector<std::string> numeric;
  for (const auto& c : table.columns())
    if (c.role == Role::value && c.numeric()) numeric.push_back(c.name);
  if (numeric.size() == 1) return numeric.front();
  throw UsageError("which value goes in the cells? name it with --cell",
                   numeric.empty() ? "the table has no numeric value column" : "candidates: " + join(numeric, ", "));
}

std::string se_column(const ResultTable& table, const TabulateOptions& options, const std::string& cell) {
  if (options.se == "none" || options.se.empty()) return "";
  if (options.se == "auto") return (cell == "mean" && table.has("se")) ? "se" : "";
  return options.se;
}

std::string section_title(const TabulateOptions& options, const Style& style, const std::vector<std::string>& section) {
  const auto id = join(section, ",");
  for (const auto& [key, text] : options.section_labels)
    if (key == id) return text;
  std::vector<std::string> parts;
  for (size_t i = 0; i < section.size(); ++i) parts.push_back(style.label(options.sections[i], section[i]));
  return join(parts, ", ");
}

/// A pivot ready to print: the table, its cell and ± columns, the printed rows and column headers.
struct PivotView {
  const ResultTable& table;
  const TabulateOptions& options;
  const Style& style;
  const Column& cell;
  const Column* se;  // null: no ± column
  std::string se_name;
  Pivot pivot;
  std::vector<std::string> col_headers;

  /// The mean of a printed row's present cells (NaN for none).
  double row_mean(const PrintedRow& row) const {
    double sum = 0;
    int n = 0;
    for (size_t r : row.cells)
      if (r != std::string::npos && !cell.missing(r)) {
        sum += cell.number(r);
        ++n;
      }
    return n ? sum / n : std::nan("");
  }
};

const Column& numeric_column(const ResultTable& table, const std::string& name, const std::string& option) {
  require_columns(table, {name}, option);
  const auto& column = table.column(name);
  if (!column.numeric()) throw UsageError("column '" + name + "' (" + option + ") holds strings, not numbers");
  return column;
}

PivotView make_view(const ResultTable& table, const TabulateOptions& options, const Style& style) {
  require_columns(table, options.rows, "--rows");
  require_columns(table, options.cols, "--cols");
  require_columns(table, options.sections, "--sections");
  const auto cell_name = cell_column(table, options);
  const auto se_name = se_column(table, options, cell_name);
  const Column& cell = numeric_column(table, cell_name, "--cell");
  const Column* se = se_name.empty() ? nullptr : &numeric_column(table, se_name, "--se");
  PivotView view{table, options, style, cell, se, se_name, make_pivot(table, options, style), {}};
  for (const auto& tuple : view.pivot.cols) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < tuple.size(); ++i) parts.push_back(style.label(options.cols[i], tuple[i]));
    view.col_headers.push_back(join(parts, " "));
  }
  return view;
}

// --- the data formats (CSV, TSV): one field a value, full precision ---------------------------

/// How a data format writes its lines: before the header, between fields, each field.
struct Delimited {
  const char* header_prefix;
  const char* separator;
  std::string (*field)(const std::string& text);
};

std::string quote_csv(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char c : field) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

const Delimited kCsv{"", ",", quote_csv};
const Delimited kTsv{"# ", "\t", [](const std::string& text) { return escape_tsv(text); }};

std::string write_delimited(const Delimited& format, const std::vector<std::string>& header,
                            const std::vector<std::vector<std::string>>& lines) {
  auto line = [&](const std::vector<std::string>& fields) {
    std::vector<std::string> written;
    for (const auto& field : fields) written.push_back(format.field(field));
    return join(written, format.separator) + "\n";
  };
  std::string out = format.header_prefix + line(header);
  for (const auto& fields : lines) out += line(fields);
  return out;
}

/// A pivot as data: section and row keys, then each printed column (and its ± column).
std::string delimited_pivot(const PivotView& view, const Delimited& format) {
  const auto& options = view.options;
  std::vector<std::string> header = options.sections;
  header.insert(header.end(), options.rows.begin(), options.rows.end());
  for (const auto& h : view.col_headers) {
    header.push_back(h);
    if (view.se) header.push_back(h + "_" + view.se_name);
  }
  if (options.row_mean) header.push_back("mean");
  std::vector<std::vector<std::string>> lines;
  for (const auto& row : view.pivot.rows) {
    std::vector<std::string> fields = row.section;
    fields.insert(fields.end(), row.keys.begin(), row.keys.end());
    for (size_t r : row.cells) {
      fields.push_back(r == std::string::npos ? view.style.missing() : view.style.number(view.cell, r, false));
      if (view.se) fields.push_back(r == std::string::npos ? view.style.missing() : view.style.number(*view.se, r, false));
    }
    if (options.row_mean) fields.push_back(view.style.number(view.row_mean(row)));
    lines.push_back(fields);
  }
  return write_delimited(format, header, lines);
}

std::string tsv_flat(const ResultTable& table, const Style& style) {
  std::vector<std::vector<std::string>> lines;
  for (size_t r = 0; r < table.rows(); ++r) {
    std::vector<std::string> fields;
    for (const auto& c : table.columns()) fields.push_back(c.numeric() ? style.number(c, r, false) : c.text(r));
    lines.push_back(fields);
  }
  return write_delimited(kTsv, table.names(), lines);
}

std::string csv_flat(const ResultTable& table, const Style&) {
  std::ostringstream out;
  write_csv(out, table);
  return out.str();
}

// --- the text formats (Markdown, LaTeX): labels, headers, fixed decimals ----------------------

/// How a text format marks a table up.
struct Markup {
  std::string (*escape)(const std::string& text);
  /// A cell's number, with its ± se ("": none).
  std::string (*number)(const std::string& value, const std::string& se);
  std::string (*row)(const std::vector<std::string>& fields);
  /// The lines before the header and right after it; `align` holds 'l' or 'r' per column.
  std::vector<std::string> (*begin)(const std::string& align);
  std::vector<std::string> (*after_header)(const std::string& align);
  /// A section's title row over `width` columns; `first`: no section before it.
  std::vector<std::string> (*section)(const std::string& title, size_t width, bool first);
  std::vector<std::string> end;
};

std::string markdown_row(const std::vector<std::string>& fields) { return "| " + join(fields, " | ") + " |"; }
std::string latex_row(const std::vector<std::string>& fields) { return join(fields, " & ") + " \\\\"; }

const Markup kMarkdown{
    escape_markdown,
    [](const std::string& value, const std::string& se) { return value + (se.empty() ? "" : " \u00b1 " + se); },
    markdown_row,
    [](const std::string&) { return std::vector<std::string>{}; },
    [](const std::string& align) {
      std::vector<std::string> rule;
      for (const char a : align) rule.push_back(a == 'l' ? ":---" : "---:");
      return std::vector<std::string>{markdown_row(rule)};
    },
    [](const std::string& title, size_t width, bool) {
      std::vector<std::string> fields{"**" + title + "**"};
      fields.resize(width, "");
      return std::vector<std::string>{markdown_row(fields)};
    },
    {}};

const Markup kLatex{
    escape_latex,
    [](const std::string& value, const std::string& se) { return "$" + value + (se.empty() ? "" : "\\pm " + se) + "$"; },
    latex_row,
    [](const std::string& align) { return std::vector<std::string>{"\\begin{tabular}{" + align + "}", "\\toprule"}; },
    [](const std::string&) { return std::vector<std::string>{"\\midrule"}; },
    [](const std::string& title, size_t width, bool first) {
      std::vector<std::string> lines;
      if (!first) lines.push_back("\\midrule");
      lines.push_back("\\multicolumn{" + std::to_string(width) + "}{l}{" + title + "} \\\\");
      return lines;
    },
    {"\\bottomrule", "\\end{tabular}"}};

/// Lines of a marked-up table: the begin lines, the header, the rule, `body`, the end lines.
std::string marked_up(const Markup& markup, const std::string& align, const std::vector<std::string>& header,
                      const std::vector<std::string>& body) {
  std::vector<std::string> lines = markup.begin(align);
  lines.push_back(markup.row(header));
  for (auto& line : markup.after_header(align)) lines.push_back(std::move(line));
  lines.insert(lines.end(), body.begin(), body.end());
  lines.insert(lines.end(), markup.end.begin(), markup.end.end());
  return join(lines, "\n") + "\n";
}

/// One printed row of a marked-up pivot: its keys (outer keys once), its cells, its mean.
std::vector<std::string> marked_up_row(const PivotView& view, const Markup& markup, const PrintedRow& row,
                                       const PrintedRow* previous) {
  const auto& options = view.options;
  const auto& style = view.style;
  std::vector<std::string> fields;
  bool same_prefix = previous != nullptr;
  for (size_t i = 0; i < row.keys.size(); ++i) {
    same_prefix = same_prefix && previous->keys[i] == row.keys[i];
    const bool blank = same_prefix && i + 1 < row.keys.size();  // outer keys print once
    fields.push_back(blank ? "" : markup.escape(style.label(options.rows[i], row.keys[i])));
  }
  for (size_t r : row.cells) {
    if (r == std::string::npos || view.cell.missing(r)) {
      fields.push_back(markup.escape(style.missing()));
      continue;
    }
    const bool whole = matches(view.table, options.whole, r);
    const bool plain = whole || matches(view.table, options.plain, r);
    const std::string value = style.number(view.cell, r, options.signed_numbers && !plain, whole);
    const bool with_se = view.se && !plain && !view.se->missing(r);
    fields.push_back(markup.number(value, with_se ? style.number(*view.se, r, false) : ""));
  }
  if (options.row_mean) {
    const double mean = view.row_mean(row);
    fields.push_back(std::isnan(mean) ? markup.escape(style.number(mean)) : markup.number(style.number(mean), ""));
  }
  return fields;
}

std::string marked_up_pivot(const PivotView& view, const Markup& markup) {
  const auto& options = view.options;
  std::vector<std::string> header;
  for (const auto& name : options.rows) header.push_back(markup.escape(view.style.header(name)));
  for (const auto& h : view.col_headers) header.push_back(markup.escape(h));
  if (options.row_mean) header.push_back(markup.escape(view.style.header("mean")));
  const std::string align = std::string(options.rows.size(), 'l') + std::string(header.size() - options.rows.size(), 'r');
  std::vector<std::string> body;
  const PrintedRow* previous = nullptr;
  bool first_section = true;
  for (const auto& row : view.pivot.rows) {
    if (!options.sections.empty() && (!previous || previous->section != row.section)) {
      const auto title = markup.escape(section_title(options, view.style, row.section));
      for (auto& line : markup.section(title, header.size(), first_section)) body.push_back(std::move(line));
      first_section = false;
      previous = nullptr;
    }
    body.push_back(markup.row(marked_up_row(view, markup, row, previous)));
    previous = &row;
  }
  return marked_up(markup, align, header, body);
}

std::string marked_up_flat(const ResultTable& table, const TabulateOptions& options, const Style& style,
                           const Markup& markup) {
  std::vector<std::string> header, body;
  std::string align;
  for (const auto& c : table.columns()) {
    header.push_back(markup.escape(style.header(c.name)));
    align += c.numeric() ? 'r' : 'l';
  }
  for (size_t r = 0; r < table.rows(); ++r) {
    std::vector<std::string> fields;
    for (const auto& c : table.columns()) {
      if (c.numeric() && c.role == Role::value) fields.push_back(markup.escape(style.number(c, r, options.signed_numbers)));
      else fields.push_back(markup.escape(style.label(c.name, c.text(r))));
    }
    body.push_back(markup.row(fields));
  }
  return marked_up(markup, align, header, body);
}

// --- the formats ---------------------------------------------------------------------------

/// One output format: its names (the first is the one lists show), the text of a missing cell,
/// whether it shows labels, headers and fixed decimals, and its renderers of a pivot and of a table
/// as it is.
struct FormatEntry {
  Format format;
  std::vector<std::string> names;  // the first is the one --help lists; at most one other spelling
  const char* extension;           // an output file's extension that selects the format
  const char* missing;
  bool text;
  std::string (*pivot)(const PivotView& view);
  std::string (*flat)(const ResultTable& table, const TabulateOptions& options, const Style& style);
};

const std::vector<FormatEntry>& formats() {
  static const std::vector<FormatEntry> table = {
      {Format::markdown, {"md", "markdown"}, "md", "\u2013", true,
       [](const PivotView& view) { return marked_up_pivot(view, kMarkdown); },
       [](const ResultTable& t, const TabulateOptions& o, const Style& s) { return marked_up_flat(t, o, s, kMarkdown); }},
      {Format::csv, {"csv"}, "csv", "", false, [](const PivotView& view) { return delimited_pivot(view, kCsv); },
       [](const ResultTable& t, const TabulateOptions&, const Style& s) { return csv_flat(t, s); }},
      {Format::latex, {"latex", "tex"}, "tex", "--", true,
       [](const PivotView& view) { return marked_up_pivot(view, kLatex); },
       [](const ResultTable& t, const TabulateOptions& o, const Style& s) { return marked_up_flat(t, o, s, kLatex); }},
      {Format::tsv, {"tsv"}, "tsv", "NaN", false, [](const PivotView& view) { return delimited_pivot(view, kTsv); },
       [](const ResultTable& t, const TabulateOptions&, const Style& s) { return tsv_flat(t, s); }},
  };
  return table;
}

const FormatEntry& entry_of(Format format) {
  for (const auto& entry : formats())
    if (entry.format == format) return entry;
  throw std::logic_error("tabulate: a Format without its row in formats()");
}

bool is_text_format(Format format) { return entry_of(format).text; }
const char* default_missing(Format format) { return entry_of(format).missing; }

std::string render_pivot(const ResultTable& table, const TabulateOptions& options) {
  const Style style(options);
  return entry_of(options.format).pivot(make_view(table, options, style));
}

/// The table as it is, its rows sorted stably by the --order columns (in the order named).
std::string render_flat(const ResultTable& input, const TabulateOptions& options) {
  const Style style(options);
  std::vector<std::string> ordered;
  for (const auto& [name, values] : options.order) ordered.push_back(name);
  require_columns(input, ordered, "--order");
  std::vector<size_t> rows(input.rows());
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = r;
  if (!ordered.empty()) {
    const TupleOrder order(input, ordered, style);
    std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
      return order.ranks(tuple_of(input, ordered, a)) < order.ranks(tuple_of(input, ordered, b));
    });
  }
  return entry_of(options.format).flat(input.take(rows), options, style);
}

}  // namespace

const std::vector<FormatName>& format_names() {
  static const std::vector<FormatName> list = [] {
    std::vector<FormatName> names;
    for (const auto& entry : formats())
      names.push_back({entry.format, entry.names.front(), entry.names.size() > 1 ? entry.names[1] : "", entry.extension});
    return names;
  }();
  return list;
}

Format parse_format(const std::string& name) {
  for (const auto& entry : formats())
    if (std::find(entry.names.begin(), entry.names.end(), name) != entry.names.end()) return entry.format;
  std::vector<std::string> names;
  for (const auto& entry : format_names()) names.push_back(entry.name);
  throw UsageError("unknown format '" + name + "'", "formats: " + join(names, ", "));
}

std::pair<std::string, std::string> split_assignment(const std::string& spec, const std::string& option) {
  const auto equals = spec.find('=');
  if (equals == std::string::npos || equals == 0)
    throw UsageError(option + " '" + spec + "' is not of the form NAME=TEXT",
                     "a repeatable option takes the words after it until the next option; put input files "
                     "first or end the options with --");
  return {spec.substr(0, equals), spec.substr(equals + 1)};
}

Label parse_label(const std::string& spec) {
  const auto [left, text] = split_assignment(spec, "--label");
  const auto colon = left.find(':');
  if (colon == std::string::npos) return {"", left, text};
  return {left.substr(0, colon), left.substr(colon + 1), text};
}

std::string render(const ResultTable& table, const TabulateOptions& options) {
  if (options.rows.empty() && options.cols.empty()) {
    if (!options.sections.empty() || options.row_mean)
      throw UsageError("--sections and --row-mean need a pivot (--rows and/or --cols)");
    return render_flat(table, options);
  }
  return render_pivot(table, options);
}

}  // namespace sg
