// sg-info — what a sinkgate file is: kind, schema version, provenance and contents (samtools view -H,
// a GGUF dump). Token files: splits, vocabulary, documents. Run files: tier, arm, seed, labels, the
// full configuration with the fields that differ from the tier's preset marked, parameter count,
// progress, final validation loss, last checkpoint. Result tables (HDF5 or CSV): rows, columns
// with roles and types. Also the tiers' presets (--tier NAME or all), and the training curves of
// run files as TSV for plotting (--curves; pipelines/curves.gp, `make curves`).
//
// Examples:
//   sg-info data/pydoc.h5 results/quick/runs/quick/combo2/0.h5
//   sg-info results/quick/val.h5 --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["rows"])'
//   sg-info runs/*.h5 --format json -o runs.jsonl      # JSON Lines: one object a line per file
//   sg-info --tier all
//   sg-info --tier small --set n_layer=8 --set n_embd=256
//   sg-info --curves results/quick/runs/quick/*/0.h5 > curves.tsv
#include <iostream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/text.h"
#include "lib/io/atomic_file.h"
#include "lib/io/h5.h"
#include "lib/run/config.h"
#include "lib/run/inspect.h"

namespace {

struct Options {
  sg::cli::CommonOptions common = sg::cli::to_stdout();
  std::vector<std::string> files;
  std::string tier;
  std::vector<std::string> overrides;  // --set, with --tier
  std::string format = "text";
  bool curves = false;
};

std::string describe(const Options& options) {
  if (options.curves) {
    if (options.files.empty()) throw sg::UsageError("--curves needs run files");
    return sg::run_curves(options.files);
  }
  // JSON: one object a line (JSON Lines), so that several files parse line by line.
  const auto format = options.format == "json" ? sg::InfoFormat::json : sg::InfoFormat::text;
  std::string text;
  if (!options.tier.empty())
    text += sg::describe_tiers(options.tier, format, options.common.config, options.overrides);
  for (size_t i = 0; i < options.files.size(); ++i) {
    if (format == sg::InfoFormat::text && (i > 0 || !options.tier.empty())) text += "\n";
    text += sg::describe_file(options.files[i], format);
  }
  return text;
}

void run(const Options& options) {
  if (options.files.empty() && options.tier.empty())
    throw sg::UsageError("nothing to describe", "give files, or --tier NAME (or all)");
  if (options.tier.empty() && (!options.overrides.empty() || !options.common.config.empty()))
    throw sg::UsageError("--set and --config change a tier's preset: they need --tier");
  auto inputs = options.files;
  if (!options.common.config.empty()) inputs.push_back(options.common.config);
  sg::h5::check_writable(options.common.output, options.common.force, inputs);
  sg::write_text(options.common.output, describe(options), options.common.force);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-info", "What a sinkgate file is: kind, provenance, configuration, contents.");
  parser.option("files", options.files, "token files, run files or result tables (HDF5 or CSV); '-' for stdin");
  parser.option("--tier", options.tier, "print a tier's preset: " + sg::join(sg::tier_names(), ", ") + ", or all");
  parser.option("--set", options.overrides,
                "with --tier: override a field, key=value (repeatable), validated as sg-train does");
  parser.option("--format", options.format, "text, or json (JSON Lines: one object a line, per file, for scripts)");
  parser.choices({"text", "json"});
  parser.flag("--curves", options.curves,
              "print the run files' training curves as TSV (run, tier, arm, seed, series, step, value)");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kLogLevel | sg::cli::kConfig);
  return sg::cli::run_tool(parser, argc, argv, [&] { run(options); });
}
