// sg-pairdiff — paired per-seed differences between arms, with standard errors (paper §4.1).
//
// Reads result tables (HDF5 files, CSV files with a header row, '-' for stdin; several files
// concatenate) and writes a result table (HDF5, -o, default stdout). Rows are grouped by every key
// column except the pairing column (--pair, default seed) and the arm column (--by, default arm);
// in each group every arm is compared with the reference arm (--ref) on the seeds both have:
// mean of (arm − ref) over those seeds, its standard error (sd/√n; NaN for one seed), n, the seeds
// used, and the seeds left out (also warned about on stderr). --ref-mean adds the reference arm's
// own mean per group (statistic=mean), the "Baseline loss" row of Table 1.
// With --decompose it writes the Table 2 decomposition instead: the improvements (ref − arm) of
// the sink, gate and both arms, overlap = sink + gate − both and filter = both − sink, each paired
// per seed; a group without the gate arm gets sink, both and filter only. With --summary, no
// pairing: every arm's own mean, sample standard deviation (sd), se and n over the seeds per
// group (Table 10: mean ± sd over three seeds).
// Output columns are documented in lib/SCHEMA.md ("Result table", "sg-pairdiff").
//
// Examples:
//   sg-pairdiff runs/*/eval.h5 --ref baseline --value val_loss --ref-mean -o table1-baseline.h5
//   sg-pairdiff eval.csv --ref sinklogit --arms normgate,projgate,combo,combo2 | sg-tabulate - --rows arm --cols tier
//   sg-pairdiff eval.h5 --decompose --sink sinklogit --gate projgate --both combo2 -o table2-projection.h5
//   sg-pairdiff zero-shot/*.h5 --summary --value value | sg-tabulate - --rows arm --cols task,metric --cell mean --se sd
#include <sstream>

#include "lib/analysis/stats.h"
#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::vector<std::string> inputs;  // empty: stdin
  sg::PairOptions pair;
  std::vector<std::string> arms;    // comma lists and/or repeats
  bool decompose = false;
  bool summary = false;
  sg::DecomposeOptions parts;
  std::vector<std::string> where;
  std::string keys;                 // CSV key columns, comma-separated
};

std::string describe(const Options& o) {
  std::ostringstream out;
  out << "pair=" << o.pair.pair << " by=" << o.pair.by << " ref=" << o.pair.ref << " value=" << o.pair.value;
  if (o.summary) out << " summary";
  if (o.decompose) {
    out << " decompose sink=" << o.parts.sink << " gate=" << o.parts.gate << " both=" << o.parts.both;
  } else {
    if (!o.arms.empty()) out << " arms=" << sg::join(o.arms, ",");
    if (o.pair.ref_mean) out << " ref_mean";
  }
  for (const auto& w : o.where) out << " where " << w;
  return out.str();
}

void run(Options options, const std::string& tool, const std::string& command_line) {
  if (options.inputs.empty()) options.inputs.push_back("-");
  if (options.decompose && (!options.arms.empty() || options.pair.ref_mean))
    throw sg::UsageError("--arms and --ref-mean do not apply to --decompose");
  if (options.summary && (options.decompose || options.pair.ref_mean))
    throw sg::UsageError("--summary takes neither --decompose nor --ref-mean");
  sg::h5::check_writable(options.common.output, options.common.force, options.inputs);

  const auto tables = sg::read_tables(options.inputs, {sg::split_list(options.keys)});
  sg::StatsResult result;
  // A problem of the rows or the columns (an absent or misnamed column, a duplicate row): say
  // which files they came from.
  const auto names = sg::describe_inputs(options.inputs);
  try {
    const auto input = sg::filter_rows(tables, options.where);
    if (options.decompose) {
      options.parts.pair = options.pair.pair;
      options.parts.by = options.pair.by;
      options.parts.ref = options.pair.ref;
      options.parts.value = options.pair.value;
      result = sg::decompose(input, options.parts);
    } else if (options.summary) {
      options.pair.arms = sg::split_lists(options.arms);
      result = sg::summarize(input, options.pair);
    } else {
      options.pair.arms = sg::split_lists(options.arms);
      result = sg::paired_differences(input, options.pair);
    }
  } catch (const sg::InputError& error) {
    throw sg::InputError(names + ": " + error.what(), error.hint());
  } catch (const sg::UsageError& error) {
    throw sg::UsageError(names + ": " + error.what(), error.hint());
  }
  for (const auto& warning : result.warnings) sg::log::warn(warning);
  const auto provenance = sg::make_provenance(tool, command_line, options.inputs, describe(options));
  sg::write_table(options.common.output, result.table, provenance, options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  options.common.output = "-";
  sg::cli::Parser parser("sg-pairdiff",
                         "Paired per-seed differences of every arm against a reference arm, with standard errors; "
                         "the Table 2 decomposition (--decompose); or each arm's mean and sd over seeds (--summary).");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kLogLevel);
  parser.option("inputs", options.inputs, "result tables: HDF5 or CSV files, '-' for stdin (default: stdin)");
  parser.option("--pair", options.pair.pair, "column whose equal values pair rows");
  parser.option("--by", options.pair.by, "column naming the arm");
  parser.option("--ref", options.pair.ref, "reference arm");
  parser.option("--value", options.pair.value, "numeric column compared");
  parser.list("--arms", options.arms, "compare only these arms, comma-separated (default: all)");
  parser.flag("--ref-mean", options.pair.ref_mean, "add the reference arm's own mean per group (statistic=mean)");
  parser.flag("--summary", options.summary,
              "no pairing: every arm's mean, standard deviation (sd), se and n over the seeds, per group");
  parser.flag("--decompose", options.decompose, "write the sink/gate/both/overlap/filter decomposition");
  parser.option("--sink", options.parts.sink, "with --decompose: the arm with the sink alone");
  parser.option("--gate", options.parts.gate, "with --decompose: the arm with the gate alone");
  parser.option("--both", options.parts.both, "with --decompose: the arm with both");
  parser.option("--where", options.where, "keep rows with COLUMN=V1,V2,... (repeatable)");
  parser.option("--keys", options.keys,
                "key columns of CSV inputs, comma-separated (default: the file's #role line, else the "
                "non-numeric columns and seed)");
  return sg::cli::run_tool(parser, argc, argv, [&] { run(options, parser.tool(), parser.command_line()); });
}
