// telemetry.h — training's telemetry: the largest attention logit and residual activation of a
// step (the curves max_attention_logit and max_activation, lib/SCHEMA.md "Run file"), measured by
// an observer that the training loop owns and sets on the model only in the steps it measures
// (the configuration field telemetry); in every other step nothing is computed for it.
#pragma once
#include <cstdint>

#include <torch/torch.h>

#include "lib/model/attention.h"

namespace sg {

/// The largest causal attention logit q_i.k_j * scale, j <= i, over every batch entry and head of
/// q and k (B, H, T, d), under no-grad and outside autocast, without the (B, H, T, T) matrix: the
/// keys in blocks of `block`, each against the queries that see it, so that at most (B, H, T,
/// block) logits exist at once and no product above the diagonal block is computed. The products
/// run in q's dtype: in float32 or float64 as exact as the matrix was; in bf16 (autocast's
/// queries) each logit is rounded once to bf16, so the maximum is within a relative 2^-8 of the
/// float32 one. Returns a scalar in float32 (float64 for float64 inputs).
torch::Tensor largest_causal_logit(const torch::Tensor& q, const torch::Tensor& k, double scale, int64_t block = 256);

/// A step's running maxima, kept as device scalars (no host synchronisation until read): the
/// largest attention logit over layers, heads, sequences and causal pairs (the sink token's
/// position a key like any other, before a routing bias or phantom), and the largest |x| over the
/// residual stream (the input embeddings with the sink token, every block's output).
class StepMaximaRecorder final : public ForwardObserver {
 public:
  void attention_inputs(int64_t layer, const torch::Tensor& q, const torch::Tensor& k, double scale) override;
  void residual(int64_t layer, const torch::Tensor& stream) override;
  /// Both back to undefined (nothing measured yet).
  void reset();
  const torch::Tensor& attention_logit() const { return attention_logit_; }
  const torch::Tensor& activation() const { return activation_; }

 private:
  torch::Tensor attention_logit_, activation_;
};

}  // namespace sg
