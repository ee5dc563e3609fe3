// tabulate.h — rendering result tables for people (Markdown, LaTeX) and plotting (CSV, TSV),
// optionally pivoted: chosen key columns become the rows and the columns of the printed table,
// a value column (with an optional ± column) fills the cells.
//
// The paper's tables come out in its layout: Table 1 is rows arm × columns tier with sections
// per comparison, Table 2 rows gate form × tier with columns per term, Table 5 rows tier × arm
// with columns per seed and a row mean (pipelines/ holds the exact commands).
//
// Not here: computing anything (stats.h); reading tables (results.h).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "lib/io/results.h"

namespace sg {

enum class Format { markdown, csv, latex, tsv };

/// One text format: its name, another spelling of it ("" if none), and the extension of an output
/// file that selects it.
struct FormatName {
  Format format;
  std::string name, alias, extension;
};

/// The text formats, in --help order: md (markdown, .md), csv (.csv), latex (tex, .tex), tsv (.tsv),
/// read from the one table of formats in tabulate.cpp (names, renderers, missing-cell text).
/// sg-tabulate's --format list, its choices and its choice by extension all come from here.
const std::vector<FormatName>& format_names();

/// A name or alias of format_names(); UsageError listing the names otherwise.
Format parse_format(const std::string& name);

/// A display text for a key value: for column `column` ("" = any column) and value `value`
/// ("*" = any value of that column, the "*" in `text` then standing for the value).
struct Label {
  std::string column, value, text;
};

struct TabulateOptions {
  Format format = Format::markdown;
  // Pivot (rows and cols both empty: the table as it is).
  std::vector<std::string> rows;      // key columns that make the printed rows (outermost first)
  std::vector<std::string> cols;      // key columns that make the printed columns
  std::vector<std::string> sections;  // key columns whose change starts a section header row
  std::string cell;                   // value in the cells ("": `mean`, else the only numeric value)
  std::string se = "auto";            // shown as "± se": a column, "none", or "auto" (se with mean)
  bool row_mean = false;              // a last column: the mean of each printed row's cells
  // Numbers.
  int decimals = 4;                   // Markdown and LaTeX; CSV and TSV keep full precision
  bool signed_numbers = false;        // "+" before positive cells
  std::vector<std::pair<std::string, std::string>> plain;  // rows with column=value: no sign, no ±
  std::vector<std::pair<std::string, std::string>> whole;  // rows with column=value are counts: plain, no decimals
  std::string missing;                // text of a missing cell ("": – in Markdown, -- in LaTeX,
                                      // empty in CSV, NaN in TSV)
  // Order and names (Markdown and LaTeX show labels and headers; CSV and TSV the raw names).
  std::vector<std::pair<std::string, std::vector<std::string>>> order;  // column → values first
  std::vector<Label> labels;
  std::vector<std::pair<std::string, std::string>> headers;         // column name → header text
  std::vector<std::pair<std::string, std::string>> section_labels;  // "v1,v2" → section title
};

/// Splits "NAME=TEXT" at the first '='. UsageError naming `option` when there is none (also the
/// sign that a vector option swallowed an input file: the hint says so).
std::pair<std::string, std::string> split_assignment(const std::string& spec, const std::string& option);

/// Parses "COLUMN:VALUE=TEXT" or "VALUE=TEXT" (any column) into a Label. UsageError.
Label parse_label(const std::string& spec);

/// Renders the table. Throws UsageError for an absent or non-numeric cell/se column, a pivot
/// key that is not a column, or two rows that fall into one cell (the message names the key
/// columns that tell them apart).
std::string render(const ResultTable& table, const TabulateOptions& options);

}  // namespace sg
