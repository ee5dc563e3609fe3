// sg-export — a run file as a Hugging Face folder that transformers and lm-evaluation-harness load.
//
// Input: one sg-train run file (any arm; an unfinished run is exported as it stands, with a
// warning). Output: the folder -o DIR (lib/hf/export.h): config.json, generation_config.json,
// model.safetensors (GPT-2's Conv1D layout), the run's tokenizer files (the vocabulary it records:
// vocab.json, merges.txt, tokenizer.json, tokenizer_config.json for GPT-2's) and a README.md model
// card; for every arm but the baseline
// also configuration_sinkgate.py and modeling_sinkgate.py (load with trust_remote_code=True). The
// folder appears whole or not at all; an existing non-empty DIR is replaced only with --force.
// A summary (model type, parameters, size) on stderr. sg-eval, sg-sample and sg-survey read the
// folder back as the run (lib/hf/hf_layout.h).
//
// Examples:
//   sg-export results/paper/runs/124M/combo2/0.h5 -o exports/124M-combo2-0
//   sg-export runs/quick/baseline/0.h5 -o exports/quick-baseline --dtype bfloat16 --force
//   lm_eval --model hf --model_args pretrained=exports/124M-combo2-0,trust_remote_code=True --tasks hellaswag
#include <chrono>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/hf/export.h"
#include "lib/model/runtime.h"
#include "sg/version.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::string run;
  std::string dtype = "float32";
  std::string vocab;
};

void run(const Options& options, const std::string& command_line) {
  if (options.common.output.empty()) throw sg::UsageError("give the folder to write: -o DIR");
  sg::check_export_folder(options.common.output, options.common.force);  // before the run is read
  sg::ExportOptions export_options;
  export_options.dtype = options.dtype;
  export_options.force = options.common.force;
  export_options.vocabulary = options.vocab;
  export_options.provenance.tool = "sg-export";
  export_options.provenance.version = sg::kVersion;
  export_options.provenance.git_commit = sg::kGitCommit;
  export_options.provenance.command_line = command_line;
  const auto start = std::chrono::steady_clock::now();
  const auto summary = sg::export_run(options.run, options.common.output, export_options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sg::log::info("sg-export: " + summary.folder + ": " + summary.model_type + ", " + std::to_string(summary.parameters) +
                " parameters, model.safetensors " + std::to_string(summary.bytes) + " bytes (" + options.dtype + "), " +
                std::to_string(summary.files.size()) + " files in " + std::to_string(seconds) + " s" +
                (summary.model_type == "gpt2" ? "" : "; load with trust_remote_code=True"));
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-export",
                         "Writes a run file as a Hugging Face folder: a plain GPT-2 for the baseline, GPT-2 with the "
                         "arm's attention code for every other arm (trust_remote_code=True), the run's tokenizer and a "
                         "model card. transformers and lm-evaluation-harness load it as it is.");
  parser.option("run", options.run, "the sg-train run file to export", /*required=*/true);
  parser.option("--dtype", options.dtype, "the weights' dtype in model.safetensors");
  parser.choices({"float32", "bfloat16"});
  parser.option("--vocab", options.vocab,
                "the run's vocabulary (default: the one the run records; GPT-2's for runs of older versions)");
  parser.common(options.common, sg::cli::kOutput | sg::cli::kForce | sg::cli::kThreads | sg::cli::kLogLevel,
                "output folder (the Hugging Face checkpoint; replaced only with --force)");
  parser.footer("The folder is written beside DIR (DIR.tmp.PID) and renamed into place when complete. "
                "sg-eval, sg-sample and sg-survey read it back as the run.");
  return sg::run_torch_tool(parser, argc, argv, [&] { run(options, parser.command_line()); });
}
