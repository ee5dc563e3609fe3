// injection.h — the injection battery and exposure accounting of paper Section 6 and App. C
// (Tables 6, 7, 9; Figure 2), for one trained model at a time.
//
// The model is scored on fixed validation batches — batch k holds windows k·S … k·S + S − 1 of
// the stream (eval_seed, val), S sequences of `context` tokens, the sampler sg-eval uses — once
// clean and once per condition (junk type × cutoff × dose) with the corruption of corruption.h
// applied at every layer at once. delta_loss = loss under corruption − clean loss, on the same
// batches. Exposure (Table 9) is measured on a clean pass with explicit attention weights: the
// share of each attention row's mass (phantom included) on quiet reads, and on the phantom,
// averaged over sequences, heads and rows, per layer and over all layers. For the sink-token arm
// its extra position is neither ranked nor corrupted, and the mass on it is reported as the
// phantom's (it is the arm's abstention slot); its own query row is not averaged.
//
// Not here: reading run files and the command line (cmd/sg-inject.cpp).
#pragma once
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lib/instruments/corruption.h"
#include "lib/io/results.h"
#include "lib/run/config.h"
#include "lib/model/model.h"
#include "lib/model/tensors.h"
#include "lib/text/token_file.h"

namespace sg {

struct InjectionOptions {
  std::vector<JunkType> junk = {JunkType::structured};
  std::vector<Cutoff> cutoffs = {Cutoff::q25, Cutoff::median};
  std::vector<double> doses = {0.2, 0.4, 0.8, 1.6};
  int64_t batches = 8;
  int64_t batch_size = 8;
  int64_t context = 0;     // tokens per sequence; 0: min(512, the model's context)
  int64_t eval_seed = -1;  // the validation stream; -1: the run's eval_seed (the same for every arm)
  int64_t seed = 0;        // keys the junk's random choices, with layer, head and batch
  bool exposure = true;    // measure Table 9's exposure (a clean pass with explicit weights)
  /// Own-direction junk on a model without a projection gate: false throws UsageError naming the
  /// arm; true leaves those conditions out (the caller warns).
  bool skip_inapplicable = false;
  torch::Device device = torch::kCPU;
  /// The attention path of the clean and corrupted passes (the exposure pass is always explicit).
  AttentionBackend backend = AttentionBackend::automatic;
  /// Called with a line of progress after each pass (the condition, delta_loss, ETA).
  std::function<void(const std::string&)> progress;
};

/// One condition's outcome.
struct InjectionCondition {
  JunkType junk;
  Cutoff cutoff;
  double dose;
  double loss;             // mean validation loss under the corruption (nats)
  int64_t corrupted = 0;   // reads that received junk (quiet reads), summed over layers, heads, sequences, batches
  int64_t reads = 0;       // reads seen, the same sum
};

/// Exposure for one cutoff at one layer (layer −1: the mean over layers).
struct Exposure {
  Cutoff cutoff;
  int64_t layer = -1;
  double quiet_mass = 0;    // mean share of a row's mass on quiet reads
  double phantom_mass = 0;  // mean share on the phantom (the sink token); NaN without one
  int64_t quiet = 0;        // quiet reads counted
  int64_t reads = 0;
};

struct InjectionResult {
  double clean_loss = 0;
  int64_t context = 0;  // the context used
  int64_t eval_seed = 0;
  std::vector<InjectionCondition> conditions;
  std::vector<Exposure> exposure;
  std::vector<JunkType> skipped;  // junk types left out as inapplicable to this arm
};

/// Sets options.junk, .cutoffs and .doses from comma lists and/or repeats ({"structured,gaussian"},
/// {"median", "q25"}, {"0.2,0.4"}); UsageError naming the option and the item for an unknown name, a dose that is not
/// a finite number >= 0, an empty list or a repeated item.
void set_battery(InjectionOptions& options, const std::vector<std::string>& junk, const std::vector<std::string>& cutoffs,
                 const std::vector<std::string>& doses);

/// Exposure of one layer's attention: weights (B, H, T, T) on the real keys, phantom_mass
/// (B, H, T) or undefined, read_norms (B, H, T), the first `skip` positions not reads (sink token).
/// Returns (quiet, phantom): per row of the reads (B, H, T − skip), the share of its mass on quiet
/// reads (below the cutoff) and on the phantom (the sink position when skip > 0; undefined for an
/// arm with neither), in float64.
std::pair<torch::Tensor, torch::Tensor> exposure_shares(const torch::Tensor& weights, const torch::Tensor& phantom_mass,
                                                        const torch::Tensor& read_norms, Cutoff cutoff, int64_t skip);

/// The resolved context of a model for options.context (0: min(512, block_size)); UsageError
/// when it exceeds the model's context.
int64_t injection_context(const InjectionOptions& options, const ModelConfig& model);

/// w_h (H, d) of every layer's projection gate, detached (own-direction junk); empty when the arm
/// has none.
std::vector<torch::Tensor> gate_directions(GPTImpl& model);

/// The fixed evaluation batches of sg-inject and sg-probe, on `device`: batch k holds windows
/// k·S … k·S + S − 1 (S = batch_size sequences of `context` tokens) of the stream (eval_seed, val),
/// sg-eval's sampler. Throws InputError when the validation split is too short for the context.
std::vector<Batch> evaluation_batches(const TokenFile& tokens, int64_t eval_seed, int64_t batches, int64_t batch_size,
                                      int64_t context, const torch::Device& device);

/// An instrument's hold on a model: eval mode while it lasts; however the instrument leaves (an
/// exception mid-way included), the model gets back no hooks (they point into the instrument's
/// frame), the default attention path and its training mode.
class EvaluationScope {
 public:
  explicit EvaluationScope(GPTImpl& model);
  ~EvaluationScope();
  EvaluationScope(const EvaluationScope&) = delete;
  EvaluationScope& operator=(const EvaluationScope&) = delete;

 private:
  GPTImpl& model_;
  bool was_training_;
};

/// Progress over a known number of passes: each report(what) passes "what  (done/total, eta
/// H:MM:SS)" to `progress` (nothing when it is empty).
class PassProgress {
 public:
  PassProgress(int64_t passes, std::function<void(const std::string&)> progress);
  void report(const std::string& what);

 private:
  int64_t passes_, done_ = 0;
  std::function<void(const std::string&)> progress_;
  std::chrono::steady_clock::time_point start_;
};

/// Runs the battery on `model` (a run's model, with its configuration). Throws UsageError for an
/// inapplicable condition (see skip_inapplicable) or bad options, InputError when the validation
/// split is too short for the context.
InjectionResult inject(GPTImpl& model, const RunConfig& config, const TokenFile& tokens, const InjectionOptions& options);

/// The result table of sg-inject (lib/SCHEMA.md, "sg-inject output"): its columns, and the rows
/// of one model's result appended.
ResultTable injection_table();
void append_injection_rows(ResultTable& table, const RunConfig& config, const InjectionResult& result);

}  // namespace sg
