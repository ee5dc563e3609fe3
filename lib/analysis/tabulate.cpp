// tabulate.cpp — pivoting a result table and rendering it as Markdown, LaTeX, CSV or TSV.
#include "lib/analysis/tabulate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "lib/base/error.h"
#include "lib/base/text.h"

namespace sg {
namespace {

bool is_text_format(Format f) { return f == Format::markdown || f == Format::latex; }

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", std::max(decimals, 0), value);
  return buffer;
}

std::string escape_markdown(const std::string& text) {
  std::string out;
  for (char c : text) out += (c == '|') ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string escape_latex(const std::string& text) {
  std::string out;
  for (char c : text) {
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

std::string escape_tsv(std::string text) {
  for (char& c : text)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return text;
}

/// Resolves labels, headers and orders; formats numbers for one output format.
class Style {
 public:
  Style(const TabulateOptions& options) : options_(options) {
    missing_ = options.missing;
    if (missing_.empty() && options.format == Format::markdown) missing_ = "\u2013";
    if (missing_.empty() && options.format == Format::latex) missing_ = "--";
    if (missing_.empty() && options.format == Format::tsv) missing_ = "NaN";
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

std::string render_pivot(const ResultTable& table, const TabulateOptions& options) {
  const Style style(options);
  require_columns(table, options.rows, "--rows");
  require_columns(table, options.cols, "--cols");
  require_columns(table, options.sections, "--sections");
  const auto cell_name = cell_column(table, options);
  const auto se_name = se_column(table, options, cell_name);
  require_columns(table, {cell_name}, "--cell");
  if (!se_name.empty()) require_columns(table, {se_name}, "--se");
  const auto& cell = table.column(cell_name);
  if (!cell.numeric()) throw UsageError("column '" + cell_name + "' (--cell) holds strings, not numbers");
  const Column* se = se_name.empty() ? nullptr : &table.column(se_name);
  if (se && !se->numeric()) throw UsageError("column '" + se_name + "' (--se) holds strings, not numbers");

  const auto pivot = make_pivot(table, options, style);
  std::vector<std::string> col_headers;
  for (const auto& tuple : pivot.cols) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < tuple.size(); ++i) parts.push_back(style.label(options.cols[i], tuple[i]));
    col_headers.push_back(join(parts, " "));
  }
  auto row_mean = [&](const PrintedRow& row) {
    double sum = 0;
    int n = 0;
    for (size_t r : row.cells)
      if (r != std::string::npos && !cell.missing(r)) {
        sum += cell.number(r);
        ++n;
      }
    return n ? sum / n : std::nan("");
  };

  std::ostringstream out;
  if (options.format == Format::csv || options.format == Format::tsv) {
    const bool tsv = options.format == Format::tsv;
    std::vector<std::string> header;
    for (const auto& name : options.sections) header.push_back(name);
    for (const auto& name : options.rows) header.push_back(name);
    for (const auto& h : col_headers) {
      header.push_back(h);
      if (se) header.push_back(h + "_" + se_name);
    }
    if (options.row_mean) header.push_back("mean");
    std::vector<std::vector<std::string>> lines;
    for (const auto& row : pivot.rows) {
      std::vector<std::string> fields = row.section;
      fields.insert(fields.end(), row.keys.begin(), row.keys.end());
      for (size_t r : row.cells) {
        fields.push_back(r == std::string::npos ? style.missing() : style.number(cell, r, false));
        if (se) fields.push_back(r == std::string::npos ? style.missing() : style.number(*se, r, false));
      }
      if (options.row_mean) fields.push_back(style.number(row_mean(row)));
      lines.push_back(fields);
    }
    if (tsv) {
      for (auto& h : header) h = escape_tsv(h);
      out << "# " << join(header, "\t") << "\n";
      for (auto& fields : lines) {
        for (auto& f : fields) f = escape_tsv(f);
        out << join(fields, "\t") << "\n";
      }
    } else {
      auto quote = [](const std::string& f) {
        if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
        std::string q = "\"";
        for (char c : f) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
      };
      for (auto& h : header) h = quote(h);
      out << join(header, ",") << "\n";
      for (auto& fields : lines) {
        for (auto& f : fields) f = quote(f);
        out << join(fields, ",") << "\n";
      }
    }
    return out.str();
  }

  // Markdown and LaTeX.
  const bool latex = options.format == Format::latex;
  auto escape = [latex](const std::string& text) { return latex ? escape_latex(text) : escape_markdown(text); };
  auto cell_text = [&](size_t r) {
    if (r == std::string::npos || cell.missing(r)) return escape(style.missing());
    const bool whole = matches(table, options.whole, r);
    const bool plain = whole || matches(table, options.plain, r);
    std::string text = style.number(cell, r, options.signed_numbers && !plain, whole);
    const bool with_se = se && !plain && !se->missing(r);
    if (latex) return "$" + text + (with_se ? "\\pm " + style.number(*se, r, false) : "") + "$";
    return text + (with_se ? " \u00b1 " + style.number(*se, r, false) : "");
  };
  std::vector<std::string> header;
  for (const auto& name : options.rows) header.push_back(escape(style.header(name)));
  for (const auto& h : col_headers) header.push_back(escape(h));
  if (options.row_mean) header.push_back(escape(style.header("mean")));
  const size_t width = header.size();
  const size_t key_width = options.rows.size();

  std::vector<std::string> lines;
  auto emit = [&](const std::vector<std::string>& fields) {
    lines.push_back(latex ? join(fields, " & ") + " \\\\" : "| " + join(fields, " | ") + " |");
  };
  if (latex) {
    lines.push_back("\\begin{tabular}{" + std::string(key_width, 'l') + std::string(width - key_width, 'r') + "}");
    lines.push_back("\\toprule");
  }
  emit(header);
  if (latex) {
    lines.push_back("\\midrule");
  } else {
    std::vector<std::string> rule;
    for (size_t i = 0; i < width; ++i) rule.push_back(i < key_width ? ":---" : "---:");
    emit(rule);
  }
  const PrintedRow* previous = nullptr;
  for (const auto& row : pivot.rows) {
    const bool new_section = !options.sections.empty() && (!previous || previous->section != row.section);
    if (new_section) {
      const auto title = escape(section_title(options, style, row.section));
      if (latex) {
        if (previous) lines.push_back("\\midrule");
        lines.push_back("\\multicolumn{" + std::to_string(width) + "}{l}{" + title + "} \\\\");
      } else {
        std::vector<std::string> fields{"**" + title + "**"};
        fields.resize(width, "");
        emit(fields);
      }
      previous = nullptr;
    }
    std::vector<std::string> fields;
    bool same_prefix = previous != nullptr;
    for (size_t i = 0; i < row.keys.size(); ++i) {
      same_prefix = same_prefix && previous->keys[i] == row.keys[i];
      const bool blank = same_prefix && i + 1 < row.keys.size();  // outer keys print once
      fields.push_back(blank ? "" : escape(style.label(options.rows[i], row.keys[i])));
    }
    for (size_t r : row.cells) fields.push_back(cell_text(r));
    if (options.row_mean) {
      const double mean = row_mean(row);
      fields.push_back(latex && !std::isnan(mean) ? "$" + style.number(mean) + "$" : escape(style.number(mean)));
    }
    emit(fields);
    previous = &row;
  }
  if (latex) {
    lines.push_back("\\bottomrule");
    lines.push_back("\\end{tabular}");
  }
  return join(lines, "\n") + "\n";
}

std::string render_flat(const ResultTable& input, const TabulateOptions& options) {
  const Style style(options);
  // Sort rows by the ordered columns (in the order the options name them), stably.
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
  const auto table = input.take(rows);
  std::ostringstream out;
  if (options.format == Format::csv) {
    write_csv(out, table);
    return out.str();
  }
  if (options.format == Format::tsv) {
    std::vector<std::string> header;
    for (const auto& name : table.names()) header.push_back(escape_tsv(name));
    out << "# " << join(header, "\t") << "\n";
    for (size_t r = 0; r < table.rows(); ++r) {
      std::vector<std::string> fields;
      for (const auto& c : table.columns()) fields.push_back(c.numeric() ? style.number(c, r, false) : escape_tsv(c.text(r)));
      out << join(fields, "\t") << "\n";
    }
    return out.str();
  }
  const bool latex = options.format == Format::latex;
  auto escape = [latex](const std::string& text) { return latex ? escape_latex(text) : escape_markdown(text); };
  std::vector<std::string> lines, header, rule;
  for (const auto& c : table.columns()) {
    header.push_back(escape(style.header(c.name)));
    rule.push_back(c.numeric() ? "---:" : ":---");
  }
  auto emit = [&](const std::vector<std::string>& fields) {
    lines.push_back(latex ? join(fields, " & ") + " \\\\" : "| " + join(fields, " | ") + " |");
  };
  if (latex) {
    std::string align;
    for (const auto& c : table.columns()) align += c.numeric() ? 'r' : 'l';
    lines.push_back("\\begin{tabular}{" + align + "}");
    lines.push_back("\\toprule");
  }
  emit(header);
  if (latex) lines.push_back("\\midrule");
  else emit(rule);
  for (size_t r = 0; r < table.rows(); ++r) {
    std::vector<std::string> fields;
    for (const auto& c : table.columns()) {
      if (c.numeric() && c.role == Role::value) fields.push_back(escape(style.number(c, r, options.signed_numbers)));
      else fields.push_back(escape(style.label(c.name, c.text(r))));
    }
    emit(fields);
  }
  if (latex) {
    lines.push_back("\\bottomrule");
    lines.push_back("\\end{tabular}");
  }
  return join(lines, "\n") + "\n";
}

}  // namespace

const std::vector<FormatName>& format_names() {
  static const std::vector<FormatName> list = {
      {Format::markdown, "md", "markdown", "md"},
      {Format::csv, "csv", "", "csv"},
      {Format::latex, "latex", "tex", "tex"},
      {Format::tsv, "tsv", "", "tsv"},
  };
  return list;
}

Format parse_format(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& entry : format_names()) {
    if (name == entry.name || (!entry.alias.empty() && name == entry.alias)) return entry.format;
    names.push_back(entry.name);
  }
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
