// run_file.h — run files (format "sinkgate-run", lib/SCHEMA.md "Run file"), all but their tensors:
// the configuration, the state (step, data position, token file, final loss), the curves, the
// labels and the provenance block, read and written through lib/io/h5 alone, so that tools that
// only inspect runs (sg-info) need no LibTorch.
//
// Not here: the weights and the optimizer state, and with them the atomic writing of a whole run
// file (lib/model/checkpoint.h, which calls write_run_contents).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/run/config.h"
#include "lib/text/tokenizer_record.h"

namespace sg {

inline constexpr const char* kRunFormat = "sinkgate-run";
inline constexpr int64_t kRunSchemaVersion = 1;

/// Training curves: one entry per optimizer step, and one per validation estimate. The step's
/// gradient norm before clipping is NaN in runs from versions that did not record it; its largest
/// attention logit and residual-stream activation (over every micro-batch of the step;
/// lib/train/telemetry.h) are NaN in the steps the field telemetry does not measure, and in runs
/// from versions that did not record them.
struct Curves {
  std::vector<int64_t> step;
  std::vector<double> train_loss, lr, tokens_per_second;
  std::vector<double> grad_norm, max_attention_logit, max_activation;
  std::vector<int64_t> val_step;
  std::vector<double> val_loss;
};

/// Everything in a run file except the tensors.
struct RunState {
  RunConfig config;
  int64_t step = 0;           // optimizer steps completed
  int64_t data_position = 0;  // index of the next window of the training stream
  int64_t tokens_seen = 0;
  bool finished = false;
  double final_val_loss = std::nan("");  // on final_eval_batches fixed batches, when finished
  std::string token_file;       // path of the token file trained on
  std::string token_file_hash;  // its SHA-256
  Curves curves;
  /// sg-train --label KEY=VALUE: extra key columns of every result row made from the run (a label
  /// `run` names it in place of its file). Group /labels of the run file, one string attribute each.
  std::vector<std::pair<std::string, std::string>> labels;
  /// The tokenizer of the token file trained on (group /tokenizer): its identity and, unless it is
  /// GPT-2's, its embedded vocabulary. Not known() in runs of older versions (read as GPT-2's).
  TokenizerRecord tokenizer;
};

/// Parses --label specs "KEY=VALUE": KEY of letters, digits and '_' not starting with a digit,
/// not tier, arm or seed (the run's own keys), each KEY once. Throws UsageError naming the spec.
std::vector<std::pair<std::string, std::string>> parse_labels(const std::vector<std::string>& specs);

/// The key cells a run gives every result row made from it: ("run", its label `run`, else the
/// path as given), then its other labels in order.
std::vector<std::pair<std::string, std::string>> run_keys(const std::string& path, const RunState& state);

/// Writes a run file's root attributes (format, schema_version, provenance), /config, /state,
/// /labels and /curves into `root`, the root group of a file being written (h5::Writer): what
/// the tensors (/model, /optimizer) are saved beside. Throws OutputError.
void write_run_contents(h5::Group& root, const RunState& state, const Provenance& provenance);

/// Checks that `token_path` (with SHA-256 `token_sha256`) is the token file the run in `run_path`
/// was trained on, by the hash the run file stores (nothing to check when it stores none: files of
/// older versions). A different file is an InputError naming both and their hashes, unless
/// `allow_other`; then a warning (log::warn).
void check_token_file(const RunState& state, const std::string& run_path, const std::string& token_path,
                      const std::string& token_sha256, bool allow_other);

/// Reads the configuration, state and curves of a run file, checked as strictly as a command
/// line (a damaged file fails here, naming itself and the field). Throws InputError.
RunState read_run_state(const std::string& path);

}  // namespace sg
