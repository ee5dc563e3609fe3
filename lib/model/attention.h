// attention.h — the one causal self-attention module behind all arms (paper Section 3.3).
//
// A head forms logits s_ij = q_i.k_j/sqrt(d) over keys j <= i, routes with a softmax and
// aggregates reads v_j. The arm (lib/arm.h) adds a zero option (a phantom key column with
// value exactly zero and logit 0 or a learned b_h) and/or a filter (a per-read gate g_j in the
// value slot, or log g_j added to the logits in the routing slot; the key gate decides g_j on the
// key k_j instead of the read) and/or an output gate (each head's output y_i times
// sigma(x_i W_theta^T), decided on the query position's hidden state x_i, Qiu et al. 2025). The
// sink-token zero option lives in the model (an extra sequence position), not here.
//
// Two computation paths give the same function:
//   explicit — the attention matrix is materialised; serves the KV cache, the intervention
//              points and telemetry;
//   fused    — LibTorch's fused scaled-dot-product attention (flash on CPU and CUDA), with the
//              routing-slot bias through an augmented head dimension and the phantom through
//              a custom autograd function that rescales by sigma(lse - b_h) exactly.
// Gate maths (norms, sigmoids, logarithms) are always done in float32.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "lib/run/arm.h"

namespace sg {

/// How a trained gate is overridden at evaluation time (paper App. G, Table 8).
enum class GateOverride {
  none,
  row_mean,  // every gate value in a row replaced by the row's attention-weighted mean
  shuffle,   // gate values permuted at random among the keys each query can see
  reopen,    // gate values below one half set to one
};

/// Per-layer measurements of one forward pass; tensors are detached, float32 (float64 for
/// float64 inputs).
struct AttentionTelemetry {
  torch::Tensor weights;       // (B, H, Tq, Tk) routing weights on the real keys
  torch::Tensor phantom_mass;  // (B, H, Tq) weight on the phantom; undefined without one
  torch::Tensor read_norms;    // (B, H, Tk) |v_j|/sqrt(d), after corruption, before any gate
  torch::Tensor gates;         // (B, H, Tk) gate values g_j; undefined without a gate
  torch::Tensor reads;         // (B, H, Tk, d) reads after corruption, before any gate
  torch::Tensor keys;          // (B, H, Tk, d) keys after corruption (the key gate decides on them)
  torch::Tensor output_gates;  // (B, H, Tq, 1) head-wise or (B, H, Tq, d) element-wise; undefined without
};

/// Receives one layer's measurements during a forward pass, as soon as the layer has computed
/// them: a consumer that reduces them on the spot keeps one layer's (B, H, T, T) in memory, not all.
using TelemetryCallback = std::function<void(int64_t layer, const AttentionTelemetry& telemetry)>;

/// The intervention points every attention layer exposes; all are off by default.
struct AttentionHooks {
  /// (1) Corruption of each head's reads (B, H, T, d) before any gate; gets the layer index.
  std::function<torch::Tensor(const torch::Tensor& reads, int64_t layer)> corrupt;
  /// (1b) Corruption of each head's keys (B, H, T, d) before the logits and the key gate.
  std::function<torch::Tensor(const torch::Tensor& keys, int64_t layer)> corrupt_keys;
  /// (2) Override of the gate values (value-slot gates only).
  GateOverride gate_override = GateOverride::none;
  /// Seeds the permutations of GateOverride::shuffle, with the layer index: the same seed gives
  /// every arm the same permutations of the same rows.
  int64_t override_seed = 0;
  /// (3) When set, every layer passes its measurements to it.
  TelemetryCallback telemetry;

  bool active() const { return corrupt || corrupt_keys || gate_override != GateOverride::none || telemetry; }
};

/// The gate value each query (row) applies to each key under an override: gates (B, H, Tk),
/// weights (B, H, Tq, Tk) the routing weights on the real keys, allowed (Tq, Tk) the keys each
/// query can see (a prefix of every row) -> (B, H, Tq, Tk). row_mean: the row's attention-weighted
/// mean gate sum_j a_ij g_j / sum_j a_ij in every entry; shuffle: the visible gates of each row
/// permuted at random (seeded; the invisible entries hold the remaining gates, with weight zero);
/// reopen: gates below one half set to one; none: g_j.
torch::Tensor overridden_gates(GateOverride how, const torch::Tensor& gates, const torch::Tensor& weights,
                               const torch::Tensor& allowed, int64_t seed);

/// A callback that keeps layer l's telemetry in slots[l] (resized as needed), all layers at once:
/// for small models and tests.
TelemetryCallback store_telemetry(std::vector<AttentionTelemetry>& slots);

/// Which computation path a forward pass without hooks or cache takes.
enum class AttentionBackend { automatic, explicit_math, fused };

/// The cached keys and (gated) reads of one layer, for incremental decoding.
struct KVCache {
  torch::Tensor keys;      // (B, H, T, d)
  torch::Tensor reads;     // (B, H, T, d) reads after the value-slot gate
  torch::Tensor key_bias;  // (B, H, T) log g_j of the routing-slot control; undefined otherwise
  int64_t length() const { return keys.defined() ? keys.size(2) : 0; }
};

/// The learned parameters of an arm (undefined where the arm has none); their shapes and initial
/// values are the arm table's (lib/run/arm.h).
struct ArmParameters {
  torch::Tensor sink_logit;  // (H) b_h of the sink logit
  torch::Tensor gate_tau;    // (H) tau_h of the norm gate and the routing-slot control
  torch::Tensor gate_w;      // (H, d) w_h of the projection gate or the key gate
  torch::Tensor gate_b;      // (H) b_h of the projection gate or the key gate
  torch::Tensor out_gate;    // (H, C) or (C, C) W_theta of the output gate, sigma(x W_theta^T)

  /// The field of a per-layer arm parameter of the table ("gate_w" -> gate_w); std::logic_error for
  /// a name without a field (a new table row whose maths is not written yet).
  torch::Tensor& field(const std::string& name);
};

/// The initial value of an arm parameter (ArmInit) of `shape`, float32: gate_beta gives -4/beta;
/// a normal initialisation draws from `generator` (the default generator when none).
torch::Tensor initial_arm_parameter(const ArmParameter& parameter, at::IntArrayRef shape, double gate_beta,
                                    c10::optional<at::Generator> generator = c10::nullopt);

/// How attend() runs.
struct AttendOptions {
  Arm arm;
  double gate_beta = 8.0;
  bool causal = true;    // false: every query sees every key (e.g. the toy task's single query)
  int64_t layer = 0;     // passed to the hooks and the telemetry slot
  const AttentionHooks* hooks = nullptr;
  KVCache* cache = nullptr;  // causal only
  AttentionBackend backend = AttentionBackend::automatic;
  /// The output gate's input: the query positions' hidden states (B, Tq, C), the attention
  /// block's input after its pre-norm; needed by arms with an output gate, unused otherwise.
  torch::Tensor gate_input;
};

/// The attention arithmetic of an arm, shared by the language model and the toy task:
/// queries q (B, H, Tq, d) over keys k (B, H, Tk, d) and reads v (B, H, Tk, d) -> (B, H, Tq, d).
/// Applies the corruption hook to v, the gate, the phantom column and the overrides, and
/// records telemetry. The fused path is taken unless a cache, a gate override or telemetry needs
/// the explicit attention matrix (corruption alone keeps it).
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const ArmParameters& params, const AttendOptions& options);

/// The gate's pre-sigmoid argument (B, H, T) from keys and reads (B, H, T, d), in float32 (float64
/// for float64 reads), so that g_j = sigmoid(.) and log g_j = logsigmoid(.); undefined without a
/// gate. The key gate reads the keys, every other filter the reads.
torch::Tensor gate_logits(const torch::Tensor& keys, const torch::Tensor& reads, const Arm& arm,
                          const ArmParameters& params, double beta);

/// The output gate's values sigma(x W_theta^T) for hidden states x (B, Tq, C): (B, H, Tq, 1)
/// head-wise, (B, H, Tq, d) element-wise (head h, dimension e from row h*d + e of W_theta), in
/// float32 (float64 for float64 x) whatever autocast says; undefined for an arm without one.
torch::Tensor output_gate_values(const torch::Tensor& x, const Arm& arm, const ArmParameters& params, int64_t heads);

struct AttentionOptions {
  int64_t n_embd = 384;
  int64_t n_head = 6;
  int64_t layer = 0;     // index of this layer (hooks and telemetry)
  int64_t n_layer = 1;   // depth of the model (output-projection init 0.02/sqrt(2L))
  Arm arm;
  double gate_beta = 8.0;
};

/// What a forward pass shows whoever watches it (training's telemetry, lib/train/telemetry.h). The
/// caller owns the observer and sets it on the model; with none set, nothing is computed for it.
class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  /// A layer's queries and keys, (B, H, T, d) each, as its attention scores them with `scale`
  /// (1/sqrt(d)), before any arm's bias or phantom. Not called for passes with a KV cache.
  virtual void attention_inputs(int64_t layer, const torch::Tensor& q, const torch::Tensor& k, double scale) = 0;
  /// The residual stream (B, T, C): the input embeddings (layer -1, with the sink token) and each
  /// block's output (its layer).
  virtual void residual(int64_t layer, const torch::Tensor& stream) = 0;
};

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const AttentionOptions& options);

  /// x: (B, T, C) -> (B, T, C). With a cache, x holds the new positions only; their keys and
  /// reads are appended to the cache and they attend to every cached position. An `observer` is
  /// shown the pass's queries and keys (without a cache only).
  torch::Tensor forward(const torch::Tensor& x, KVCache* cache = nullptr, ForwardObserver* observer = nullptr);

  void set_hooks(std::shared_ptr<const AttentionHooks> hooks) { hooks_ = std::move(hooks); }
  void set_backend(AttentionBackend backend) { backend_ = backend; }

  /// Names of the arm parameters that are never weight-decayed (the table's rows with decayed false).
  static const std::vector<std::string>& no_decay_names();
  ArmParameters arm_parameters() const;

  torch::nn::Linear c_attn{nullptr};  // (3C, C), no bias
  torch::nn::Linear c_proj{nullptr};  // (C, C), no bias
  // The arm's parameters, registered from the arm table's rows (shapes, initialisation, decay
  // there): undefined where the arm has none.
  torch::Tensor sink_logit;           // (H) b_h of the sink-logit arms
  torch::Tensor gate_tau;             // (H) tau_h of the norm gate / routing control
  torch::Tensor gate_w;               // (H, d) w_h of the projection or key gate
  torch::Tensor gate_b;               // (H) b_h of the projection or key gate
  torch::Tensor out_gate;             // (H, C) or (C, C) the output gate's W_theta

 private:
  AttentionOptions options_;
  std::shared_ptr<const AttentionHooks> hooks_;
  AttentionBackend backend_ = AttentionBackend::automatic;
};
TORCH_MODULE(Attention);

/// Attention with a phantom key column of value zero and logit sink (H), through a fused
/// kernel: out = O * sigma(lse - sink) with exact gradients for q, k, v and sink.
/// q: (B, H, Tq, d), k and v: (B, H, Tk, d). Returns (B, H, Tq, d).
torch::Tensor fused_sink_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& sink, double scale, bool causal = true);

/// True when fused_sink_attention has a kernel for this device and dtype.
bool fused_attention_supported(const torch::Tensor& q);

}  // namespace sg
