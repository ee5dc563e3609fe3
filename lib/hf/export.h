// export.h — a run file as a Hugging Face folder that transformers and lm-evaluation-harness
// load as they are (sg-export; docs/tools/sg-export.md).
//
// The folder holds config.json, generation_config.json, model.safetensors (GPT-2's names and
// Conv1D layout: every weight (in, out), zero biases, the head tied to transformer.wte.weight),
// the tokenizer's files (hf_vocabulary.h: vocab.json, merges.txt, tokenizer.json for a rank-file
// vocabulary such as GPT-2's; a Hugging Face vocabulary's own files; tokenizer_config.json) and a
// README.md model card. The baseline arm is a plain GPT-2 (model_type "gpt2", exact GELU "gelu",
// no dropout): AutoModelForCausalLM loads it without trust_remote_code. Every other arm is
// model_type "sinkgate" with an auto_map to configuration_sinkgate.py and modeling_sinkgate.py
// (pipelines/hf/, compiled in and copied into the folder), loaded with trust_remote_code=True.
// The tensor names and config.json's arm fields are hf_layout.h's, the mapping that sinkgate
// reads exports back with; config.json also records the run (its identity and configuration).
//
// The folder is written beside its final name (DIR.tmp.PID) and renamed into place when
// complete; an existing non-empty DIR is replaced only with force.
//
// Not here: reading such folders back (language_model.h, through hf_layout.h and pretrained.h),
// the tokenizer itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lib/io/provenance.h"
#include "lib/run/run_file.h"
#include "lib/text/tokenizer.h"

namespace sg {

/// How export_run writes.
struct ExportOptions {
  std::string dtype = "float32";  // the weights' dtype in model.safetensors: float32 or bfloat16
  bool force = false;             // replace an existing non-empty folder
  std::string vocabulary;         // the run's vocabulary file ("": the one it records; see export_vocabulary)
  Provenance provenance;          // tool, version, commit, command line: for the model card
};

/// What export_run wrote.
struct ExportSummary {
  std::string folder;
  std::string model_type;          // "gpt2" (baseline) or "sinkgate"
  std::vector<std::string> files;  // the folder's files, by name
  int64_t parameters = 0;          // as transformers counts them (the tied head once)
  int64_t bytes = 0;               // of model.safetensors
};

/// Checks, before any expensive work, that `folder` may be written: not an existing file, not a
/// non-empty folder unless force, its parent an existing writable folder. Throws OutputError.
void check_export_folder(const std::string& folder, bool force);

/// The vocabulary of the run, for its tokenizer files: the one the run file records (embedded in
/// it, or GPT-2's, read from default_vocabulary_path()), which `vocabulary` ("" for none) must be
/// when given (tokenizer_for, lib/text/tokenizer_record.h); for a run of an older sinkgate, which
/// records none, `vocabulary`, else GPT-2's default. Throws InputError naming what is missing: a
/// recorded vocabulary file that cannot be read, an older run on another vocabulary than GPT-2's
/// without `vocabulary`, a vocabulary of more ids than the model has.
Tokenizer export_vocabulary(const RunState& state, const std::string& run_path, const std::string& vocabulary);

/// Writes the Hugging Face folder of the run file `run_path` at `folder` (see the file comment).
/// An unfinished run is exported as it stands, with a warning (as sg-eval scores it). Throws
/// InputError (a damaged run file, a vocabulary it cannot name), UsageError (a dtype), OutputError.
ExportSummary export_run(const std::string& run_path, const std::string& folder, const ExportOptions& options);

}  // namespace sg
