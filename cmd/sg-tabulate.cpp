// sg-tabulate — result tables rendered for people and plots: Markdown, CSV, LaTeX, TSV.
//
// Reads result tables (HDF5 files, CSV files with a header row, '-' for stdin; several files
// concatenate) and prints them (stdout, or -o FILE). Without --rows/--cols the table is printed
// as it is; with them it is pivoted: the --rows key columns make the printed rows, the --cols key
// columns the printed columns, the --cell value fills the cells ("mean ± se" where an se column is
// shown, a dash where a cell has no row). --sections starts a titled block whenever its key
// columns change (Table 1's three blocks). Markdown and LaTeX use labels and fixed decimals; CSV
// and TSV keep raw names and full precision (TSV: gnuplot figure data, header line starting '#',
// missing cells NaN; read it with `set datafile separator "\t"`). --format h5 writes the
// (concatenated, filtered) rows as a result table instead. --list-formats prints the formats
// --format writes, one a line (tests/check_docs.py holds the pages' lists of them to it).
//
// Repeatable options (--label, --order, --where, …) take one value per occurrence, so input files
// may stand anywhere: `sg-tabulate --where arm=a --where tier=10M t.csv` is `… t.csv --where …`.
//
// Examples:
//   sg-pairdiff runs/*.h5 --ref-mean | sg-tabulate - --rows arm --cols tier --signed --plain statistic=mean
//   sg-tabulate eval.h5 --rows tier,arm --cols seed --cell val_loss --row-mean --label 'seed:*=seed *'
//   sg-tabulate t2-norm.h5 t2-proj.h5 --rows gate_arm,tier --cols term --se none -o table2.tex   # LaTeX, by extension
#include <iostream>
#include <string>
#include <vector>

#include "lib/analysis/tabulate.h"
#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/text.h"
#include "lib/base/log.h"
#include "lib/io/atomic_file.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::vector<std::string> inputs;  // empty: stdin
  std::string format = "auto";
  std::string rows, cols, sections;  // comma-separated key columns
  std::string cell;
  std::string se = "auto";
  int64_t decimals = 4;
  bool signed_numbers = false;
  bool row_mean = false;
  bool list_formats = false;
  std::string missing;
  std::string row_order, col_order;  // comma-separated values of the last --rows / --cols key
  std::vector<std::string> order, labels, headers, section_labels, plain, whole, where;
  std::string keys;
  std::string source_key;
};

sg::TabulateOptions tabulate_options(const Options& o) {
  sg::TabulateOptions t;
  t.format = sg::parse_format(o.format);
  t.rows = sg::split_list(o.rows);
  t.cols = sg::split_list(o.cols);
  t.sections = sg::split_list(o.sections);
  t.cell = o.cell;
  t.se = o.se;
  t.decimals = static_cast<int>(o.decimals);
  t.signed_numbers = o.signed_numbers;
  t.row_mean = o.row_mean;
  t.missing = o.missing;
  if (!o.row_order.empty()) {
    if (t.rows.empty()) throw sg::UsageError("--row-order needs --rows");
    t.order.push_back({t.rows.back(), sg::split_list(o.row_order)});
  }
  if (!o.col_order.empty()) {
    if (t.cols.empty()) throw sg::UsageError("--col-order needs --cols");
    t.order.push_back({t.cols.back(), sg::split_list(o.col_order)});
  }
  for (const auto& spec : o.order) {
    const auto [column, values] = sg::split_assignment(spec, "--order");
    t.order.push_back({column, sg::split_list(values)});
  }
  for (const auto& spec : o.labels) t.labels.push_back(sg::parse_label(spec));
  for (const auto& spec : o.headers) t.headers.push_back(sg::split_assignment(spec, "--header"));
  for (const auto& spec : o.section_labels) t.section_labels.push_back(sg::split_assignment(spec, "--section-label"));
  for (const auto& spec : o.plain) t.plain.push_back(sg::split_assignment(spec, "--plain"));
  for (const auto& spec : o.whole) t.whole.push_back(sg::split_assignment(spec, "--whole"));
  return t;
}

/// The format --format auto means: the output's extension (a result table for .h5), else Markdown.
std::string format_for(const std::string& output) {
  const auto dot = output.rfind('.');
  const auto slash = output.rfind('/');
  const std::string markdown = sg::format_names().front().name;
  if (output == "-" || dot == std::string::npos || (slash != std::string::npos && dot < slash)) return markdown;
  const auto extension = output.substr(dot + 1);
  if (extension == "h5") return "h5";
  for (const auto& format : sg::format_names())
    if (extension == format.extension) return format.name;
  return markdown;
}

/// The formats --format writes: the library's format table (lib/analysis/tabulate.h), then h5.
std::vector<std::string> output_formats() {
  std::vector<std::string> names;
  for (const auto& format : sg::format_names()) names.push_back(format.name);
  names.push_back("h5");
  return names;
}

/// --format's help and choices, from the library's format table (lib/analysis/tabulate.h) and h5.
std::string format_help() {
  std::vector<std::string> names = output_formats(), aliases, extensions;
  const std::string last = names.back();  // h5
  names.pop_back();
  for (const auto& format : sg::format_names()) {
    if (!format.alias.empty()) aliases.push_back(format.alias + " = " + format.name);
    extensions.push_back("." + format.extension);
  }
  return sg::join(names, ", ") + ", or " + last + " (a result table: concatenate/filter; also " +
         sg::join(aliases, ", ") + "); auto: from the extension of -o (" + sg::join(extensions, ", ") + ", ." + last +
         "), else " + names.front();
}

std::vector<std::string> format_choices() {
  std::vector<std::string> choices = {"auto"};
  for (const auto& format : sg::format_names()) {
    choices.push_back(format.name);
    if (!format.alias.empty()) choices.push_back(format.alias);
  }
  choices.push_back("h5");
  return choices;
}

void run(Options options, const std::string& tool, const std::string& command_line) {
  if (options.list_formats) {
    for (const auto& name : output_formats()) std::cout << name << "\n";
    return;
  }
  if (options.inputs.empty()) options.inputs.push_back("-");
  if (options.format == "auto") options.format = format_for(options.common.output);
  const bool to_h5 = options.format == "h5";
  const auto settings = to_h5 ? sg::TabulateOptions{} : tabulate_options(options);
  if (to_h5 && (!options.rows.empty() || !options.cols.empty()))
    throw sg::UsageError("--format h5 writes the rows as a result table; it does not pivot");
  if (to_h5 || options.common.output != "-") sg::h5::check_writable(options.common.output, options.common.force, options.inputs);

  sg::CsvOptions csv;
  csv.keys = sg::split_list(options.keys);
  csv.source_key = options.source_key;
  const auto table = sg::filter_rows(sg::read_tables(options.inputs, csv), options.where);
  if (to_h5) {
    std::string config = "concatenate";
    for (const auto& w : options.where) config += " where " + w;
    sg::write_table(options.common.output, table, sg::make_provenance(tool, command_line, options.inputs, config),
                    options.common.force);
    return;
  }
  sg::write_text(options.common.output, sg::render(table, settings), options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  options.common.output = "-";
  sg::cli::Parser parser("sg-tabulate",
                         "Render result tables as Markdown, CSV, LaTeX or TSV (figure data), optionally pivoted.");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kLogLevel);
  parser.option("inputs", options.inputs, "result tables: HDF5 or CSV files, '-' for stdin (default: stdin)");
  parser.option("--format", options.format, format_help());
  parser.choices(format_choices());
  parser.flag("--list-formats", options.list_formats, "print the formats --format writes, one a line, and exit");
  parser.option("--rows", options.rows, "key columns making the printed rows, comma-separated, outermost first");
  parser.option("--cols", options.cols, "key columns making the printed columns, comma-separated");
  parser.option("--sections", options.sections, "key columns whose change starts a titled block");
  parser.option("--cell", options.cell, "value column in the cells (default: mean, else the only numeric value)");
  parser.option("--se", options.se, "column shown as '± se': a name, none, or auto (se when the cell is mean)");
  parser.option("--decimals", options.decimals, "decimals in Markdown and LaTeX");
  parser.flag("--signed", options.signed_numbers, "print '+' before positive cells");
  parser.option("--plain", options.plain, "rows with COLUMN=VALUE print bare values: no sign, no ± (repeatable)");
  parser.option("--whole", options.whole,
                "rows with COLUMN=VALUE are counts: bare, whole numbers without decimals (repeatable)");
  parser.flag("--row-mean", options.row_mean, "add a column with the mean of each printed row's cells");
  parser.option("--missing", options.missing, "text of an empty cell (default: – in Markdown, -- in LaTeX, NaN in TSV)");
  parser.option("--row-order", options.row_order, "order of the values of the last --rows key, comma-separated");
  parser.option("--col-order", options.col_order, "order of the values of the last --cols key, comma-separated");
  parser.option("--order", options.order, "order of any key's values: COLUMN=V1,V2,... (repeatable)");
  parser.option("--label", options.labels, "display text: COLUMN:VALUE=TEXT, VALUE=TEXT, or COLUMN:*=TEXT* (repeatable)");
  parser.option("--header", options.headers, "column header text: COLUMN=TEXT (repeatable)");
  parser.option("--section-label", options.section_labels, "section title: V1,V2=TITLE for --sections values (repeatable)");
  parser.option("--where", options.where, "keep rows with COLUMN=V1,V2,... (repeatable)");
  parser.option("--keys", options.keys,
                "key columns of CSV inputs, comma-separated (default: the file's #role line, else the "
                "non-numeric columns and seed)");
  parser.option("--source-key", options.source_key,
                "add a key column of this name to every input that lacks it, holding the input's file name "
                "without folder and extension (e.g. to set our table beside pipelines/paper_injection.csv)");
  return sg::cli::run_tool(parser, argc, argv, [&] { run(options, parser.tool(), parser.command_line()); });
}
