// model.h — the GPT-2-style decoder of paper App. A with any attention arm.
//
// Pre-norm blocks (LayerNorm, attention, LayerNorm, MLP 4x with GELU), no bias in any linear
// layer, learned positional embedding, token embedding tied to the output, no dropout, init
// N(0, 0.02) except the attention and MLP output projections at 0.02/sqrt(2L). The sink-token
// arm prepends one learned vector (d_model parameters) to every sequence and removes its
// output position before the final LayerNorm, so outputs align with the input tokens.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "lib/kernels/loss.h"
#include "lib/model/attention.h"
#include "lib/run/config.h"

namespace sg {

class MLPImpl : public torch::nn::Module {
 public:
  MLPImpl(int64_t n_embd, int64_t n_layer);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(MLP);

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const AttentionOptions& options);
  torch::Tensor forward(const torch::Tensor& x, KVCache* cache = nullptr, ForwardObserver* observer = nullptr);
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Attention attn{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(Block);

/// Key-value caches of every layer and the number of tokens already consumed.
struct ModelCache {
  std::vector<KVCache> layers;
  int64_t tokens = 0;  // input tokens seen so far (the sink token not counted)
};

class GPTImpl : public torch::nn::Module {
 public:
  explicit GPTImpl(const ModelConfig& config);

  /// idx (B, T) int64 -> logits (B, T, V). With a cache, idx holds the next tokens only.
  torch::Tensor forward(const torch::Tensor& idx, ModelCache* cache = nullptr);

  /// idx (B, T) -> final hidden states (B, T, C) after the last LayerNorm (before the head).
  torch::Tensor hidden(const torch::Tensor& idx, ModelCache* cache = nullptr);

  /// Mean next-token cross-entropy (nats) of idx (B, T) against targets (B, T), without
  /// materialising all logits at once (lib/kernels/loss.h), under the loss plan set below.
  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets);
  /// The plan loss() runs (lib/kernels/loss.h); the default LossPlan{} is chosen per shape and
  /// machine (loss_tuning.h). A training run sets the plan it fixed and records.
  void set_loss_plan(const LossPlan& plan) { loss_plan_ = plan; }
  const LossPlan& loss_plan() const { return loss_plan_; }

  /// Installs the intervention hooks on every attention layer (nullptr removes them).
  void set_hooks(std::shared_ptr<const AttentionHooks> hooks);
  /// Chooses the attention computation path for passes without hooks or cache.
  void set_backend(AttentionBackend backend);
  /// While set (not nullptr), every forward pass shows `observer` each layer's queries and keys
  /// and the residual stream (ForwardObserver); the caller owns it. Unset, nothing is computed for it.
  void set_observer(ForwardObserver* observer) { observer_ = observer; }

  const ModelConfig& config() const { return config_; }
  /// Number of parameters (tied embedding counted once).
  int64_t parameter_count() const;

  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::Tensor sink_token;  // (C) the sink-token arm's learned extra position
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  ModelConfig config_;
  LossPlan loss_plan_;
  ForwardObserver* observer_ = nullptr;
};
TORCH_MODULE(GPT);

/// A model with its parameters initialised from the seed: the same seed gives bitwise-identical
/// weights on the CPU. Validates the configuration (throws UsageError).
GPT build_model(const ModelConfig& config, int64_t seed);

}  // namespace sg
