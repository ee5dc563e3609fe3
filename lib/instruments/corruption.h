// corruption.h — controlled corruption of the value reads at evaluation time (paper Section 6.1,
// App. C): quiet reads, junk vectors, and the hook that applies them to every attention layer.
// Shared by sg-inject (Tables 6, 7, 9; Figure 2) and sg-probe (Table 8's ε = 0.2 column).
//
// For every head of every layer and every sequence, the reads v_j (the head's value vectors,
// before any gate) are ranked by norm. A read is *quiet* when its norm lies strictly below the
// per-(sequence, head) cutoff, the median or the 25th percentile of that sequence's read norms
// (linear interpolation between order statistics, as numpy.quantile; a read equal to the cutoff
// is not quiet). Every quiet read receives ε·m_h·u_j, where m_h is the head's median read norm in
// that sequence, ε the dose, and u_j a unit vector:
//   structured        a read of the same head from a uniformly random position of another
//                     sequence of the batch, normalised;
//   same-context      a read from a uniformly random other position of the same sequence (earlier
//                     or later: App. C's "a random position of the same sequence");
//   same-context-earlier  a read from a uniformly random earlier position of the same sequence,
//                     so that no read carries a later position's value (no look-ahead); the
//                     first read has no earlier position and is left as it is;
//   gaussian          an isotropic normal vector, normalised;
//   random-direction  one random unit vector per head, shared by every corrupted read of the batch;
//   own-direction     w_h/‖w_h‖ of the head's projection gate (projection-gate arms only);
//   key-own-direction w_h/‖w_h‖ of the head's key gate, added to the *keys* (key-gate arms only):
//                     the quantity that gate decides on. Quiet keys, the median and the cutoffs are
//                     then taken over the key norms, by the same rule.
// The random choices come from a generator keyed by (seed, layer, head, batch) only — never by
// the arm — and are drawn on the CPU, so arms and devices see the same junk on the same tokens.
//
// Leading positions that are not reads of the context (the sink-token arm's extra position) are
// neither ranked nor corrupted nor drawn as junk: `skip_positions` says how many.
//
// Not here: the evaluation loop and the result table (injection.h).
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/model/attention.h"

namespace sg {

enum class JunkType {
  structured,
  same_context,
  same_context_earlier,
  gaussian,
  random_direction,
  own_direction,
  key_own_direction,
};

/// True for junk added to the keys (key-own-direction) rather than the reads.
inline bool targets_keys(JunkType junk) { return junk == JunkType::key_own_direction; }
/// True for junk along the gate's own direction w_h (own-direction, key-own-direction).
inline bool along_gate_direction(JunkType junk) {
  return junk == JunkType::own_direction || junk == JunkType::key_own_direction;
}
enum class Cutoff { median, q25 };

/// The arm capability junk along a gate's own direction needs: a learned direction on the reads
/// (own-direction) or on the keys (key-own-direction); meaningful only where along_gate_direction.
ArmCapability gate_direction_of(JunkType junk);
/// Why junk of this type is not defined for the arm ("own-direction junk needs a projection gate,
/// and arm X has none"), or "" when it is: own-direction needs a projection gate, key-own-direction
/// a key gate; an output gate decides on the query, so neither is its own direction.
std::string junk_not_defined(JunkType junk, const Arm& arm);

/// "structured", "same-context", "same-context-earlier", "gaussian", "random-direction", "own-direction",
/// "key-own-direction".
std::string to_string(JunkType junk);
/// "median", "q25".
std::string to_string(Cutoff cutoff);
/// Every junk type's name, in the order above: every --junk list and hint is this one.
std::vector<std::string> junk_type_names();
/// Every cutoff's name: "median", "q25".
std::vector<std::string> cutoff_names();
/// Parses a name as above; UsageError listing the choices otherwise.
JunkType parse_junk(const std::string& name);
Cutoff parse_cutoff(const std::string& name);
/// The quantile of a cutoff: 0.5 or 0.25.
double quantile_of(Cutoff cutoff);

/// Per-(sequence, head) quantile q of norms (B, H, T) over the last axis -> (B, H), with linear
/// interpolation between order statistics (numpy.quantile's default).
torch::Tensor norm_quantile(const torch::Tensor& norms, double q);

/// The quiet reads: norms (B, H, T) strictly below the per-(sequence, head) cutoff -> (B, H, T) bool.
torch::Tensor quiet_mask(const torch::Tensor& norms, Cutoff cutoff);

/// One condition of the battery.
struct CorruptionSpec {
  JunkType junk = JunkType::structured;
  Cutoff cutoff = Cutoff::q25;
  double dose = 0.0;           // ε ≥ 0
  int64_t seed = 0;            // keys the random choices with (layer, head, batch)
  int64_t skip_positions = 0;  // leading positions that are not reads (sink token: 1)
};

/// Reads (B, H, T, d) with every quiet read (positions ≥ skip_positions) replaced by
/// v_j + ε·m_h·u_j. `batch` is the index of the evaluation batch (part of the generator's key);
/// `gate_direction` (H, d) is w_h for own-direction junk (undefined otherwise). Norms and junk
/// are computed in float32 (float64 for float64 reads); the result has the reads' dtype. When
/// `corrupted` is given it receives the (B, H, T) mask of the reads that changed.
/// Throws UsageError for structured junk with one sequence per batch, for own-direction junk
/// without a gate direction or with a zero w_h, and for a negative dose.
torch::Tensor corrupt_reads(const torch::Tensor& reads, const CorruptionSpec& spec, int64_t layer, int64_t batch,
                            const torch::Tensor& gate_direction = {}, torch::Tensor* corrupted = nullptr);

/// Installs a condition on a model through the attention module's corruption hook (the keys' hook
/// for key junk), layer by layer, and counts what it corrupts. Set the batch index before each forward pass.
class Corruptor {
 public:
  /// gate_directions: w_h (H, d) of every layer, for own-direction junk (else empty).
  Corruptor(CorruptionSpec spec, std::vector<torch::Tensor> gate_directions = {});

  /// The hooks to install (GPTImpl::set_hooks); `base` supplies the other intervention points
  /// (gate override, telemetry), copied in.
  std::shared_ptr<AttentionHooks> hooks(const AttentionHooks& base = {}) const;
  void set_batch(int64_t batch) { state_->batch = batch; }
  /// Reads corrupted and reads seen, summed over layers, heads, sequences and passes so far.
  int64_t corrupted_reads() const { return state_->corrupted; }
  int64_t total_reads() const { return state_->total; }

 private:
  struct State {
    CorruptionSpec spec;
    std::vector<torch::Tensor> gate_directions;
    int64_t batch = 0;
    int64_t corrupted = 0, total = 0;
  };
  std::shared_ptr<State> state_;
};

}  // namespace sg
