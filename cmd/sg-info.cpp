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
//   sg-info --tier all
//   sg-info --curves results/quick/runs/quick/*/0.h5 > curves.tsv
#include <iostream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/run/inspect.h"

namespace {

struct Options {
  std::vector<std::string> files;
  std::string tier;
  std::string format = "text";
  bool curves = false;
};

void run(const Options& options) {
  if (options.files.empty() && options.tier.empty())
    throw sg::UsageError("nothing to describe", "give files, or --tier NAME (or all)");
  if (options.curves) {
    if (options.files.empty()) throw sg::UsageError("--curves needs run files");
    std::cout << sg::run_curves(options.files) << std::flush;
    return;
  }
  const auto format = options.format == "json" ? sg::InfoFormat::json : sg::InfoFormat::text;
  if (!options.tier.empty()) std::cout << sg::describe_tiers(options.tier, format);
  for (size_t i = 0; i < options.files.size(); ++i) {
    if (i > 0 || !options.tier.empty()) std::cout << (format == sg::InfoFormat::text ? "\n" : "");
    std::cout << sg::describe_file(options.files[i], format) << std::flush;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-info", "What a sinkgate file is: kind, provenance, configuration, contents.");
  parser.option("files", options.files, "token files, run files or result tables (HDF5 or CSV); '-' for stdin");
  parser.option("--tier", options.tier, "print a tier's preset (a name, or all)");
  parser.option("--format", options.format, "text, or json (one object per file, for scripts)");
  parser.choices({"text", "json"});
  parser.flag("--curves", options.curves,
              "print the run files' training curves as TSV (run, tier, arm, seed, series, step, value)");
  return sg::cli::run_tool(parser, argc, argv, [&] { run(options); });
}
