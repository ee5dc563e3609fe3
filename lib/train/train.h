// train.h — the training loop of App. A: paired batches, AdamW, warm-up + cosine, clipping,
// bf16 autocast on CUDA, fixed validation batches, periodic atomic checkpoints, exact resume.
#pragma once
#include <torch/torch.h>

#include <signal.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/model/checkpoint.h"
#include "lib/run/config.h"
#include "lib/model/model.h"
#include "lib/model/tensors.h"
#include "lib/text/token_file.h"
#include "lib/train/distributed.h"

namespace sg {

/// While an instance lives, the first SIGTERM or SIGINT only sets a flag (received()) that the
/// training loop checks after each step to checkpoint and stop (exit 6); a second one stops at
/// once. train() holds one for its loop; sg-train holds one from before training until the process
/// exits, so that a signal after the last checkpoint finds the handler (exit 0), not the default
/// action (exit 143). Instances nest; the previous handlers come back when one ends.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// The signal received (SIGTERM, SIGINT), or 0.
  int received() const;

 private:
  struct sigaction old_term_ {}, old_int_ {};
};

struct TrainOptions {
  std::string token_file;
  std::string output;  // the run file
  bool force = false;
  bool resume = false;  // continue the run in `output`
  torch::Device device = torch::kCPU;
  Provenance provenance;  // root attributes of the run file
  int64_t stop_after = 0;  // stop (with a checkpoint) after this many steps of this invocation; 0: run to the end
  std::vector<std::pair<std::string, std::string>> labels;  // a new run's labels (RunState::labels)
  std::string name;            // the run in progress lines; empty: its label run, else tier/arm/seed
  double log_interval = 10.0;  // seconds between progress lines besides the evaluations' (0: only those)
  std::string log_json;        // when set: JSON Lines of the curves appended to this file, one line a step
  bool allow_other_tokens = false;  // resume on a token file other than the run's (a warning)
  /// On a non-finite training loss: false, a NumericError (the run file keeps its last checkpoint);
  /// true, the step is recorded in the curves (its loss NaN or infinite, no update made) and the
  /// run stops there, unfinished, with a warning: a diverged run of a sweep keeps its curves.
  bool stop_on_nonfinite = false;
  std::optional<LossPlan> loss_plan;  // on resume: a loss plan replacing the run's own; none keeps it
  DistributedEnv distributed;       // data parallelism (distributed.h); one process when not launched so
  double timeout_seconds = 600;     // of every collective and of the ranks' rendezvous
};

struct TrainSummary {
  int64_t steps = 0;
  double final_val_loss = 0;
  double tokens_per_second = 0;
  double seconds = 0;
  bool finished = false;
  bool nonfinite = false;  // stopped at a non-finite training loss (TrainOptions::stop_on_nonfinite)
};

/// Trains (or resumes) the run described by `config` and writes the run file periodically and at
/// the end. The loss plan is fixed at the start (config.train.loss_plan: auto, or one named) and
/// recorded; a resume keeps the recorded one unless options.loss_plan replaces it (a warning: the
/// run is then not bitwise identical to an uninterrupted one). Throws NumericError on a
/// non-finite loss (the last good checkpoint stays in place) unless options.stop_on_nonfinite;
/// UsageError for a named plan this CPU cannot run.
TrainSummary train(const RunConfig& config, const TrainOptions& options);

/// Mean validation loss over `batches` fixed batches of config.train.batch() sequences drawn from
/// the validation split by the stream (train.eval_seed, val): the same tokens for every arm and
/// seed of a tier. Evaluated micro_batch sequences at a time.
/// With a communicator, each rank scores its share of the sequences and the sum is reduced.
double validation_loss(GPTImpl& model, const TokenFile& tokens, const RunConfig& config, int64_t batches,
                       const torch::Device& device, Communicator* communicator = nullptr);

/// The training windows of optimizer step `step`: window indices step·batch … (step+1)·batch − 1,
/// micro-batch `micro` of them. Exposed for the pairing tests.
Batch training_batch(const TokenFile& tokens, const RunConfig& config, int64_t step, int64_t micro);

}  // namespace sg
