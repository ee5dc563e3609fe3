// optimizer.h — AdamW with the weight-decay groups of App. A and the learning-rate schedule.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/run/config.h"

namespace sg {

/// Parameters split by whether they are weight-decayed: tensors of dimension >= 2 decay, except
/// the arm parameters (sink logit, tau_h, w_h, b_h), which never do.
struct ParameterGroups {
  std::vector<torch::Tensor> decay, no_decay;
  std::vector<std::string> decay_names, no_decay_names;
};

ParameterGroups parameter_groups(const torch::nn::Module& model);

/// LibTorch's AdamW with its state (AdamWParamState, which run files save) updated by ATen's
/// fused kernel: one sweep over parameter, gradient and both moments per tensor instead of the
/// dozen tensor operations (and temporaries) of the unfused step. The same update rule:
/// p -= lr (wd p + m_hat / (sqrt(v_hat) + eps)), with bias-corrected moments.
class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;

  /// clip_grad_norm_(parameters, max_norm) followed by step(), with the clipping factor
  /// min(1, max_norm / (norm + 1e-6)) applied inside the fused kernel (which writes the clipped
  /// gradients back) instead of by a separate pass over every gradient. Returns the global
  /// gradient norm before clipping, as a tensor on the parameters' device (no synchronisation).
  torch::Tensor clip_and_step(double max_norm);

 private:
  void fused_step(const std::optional<torch::Tensor>& grad_divisor);
};

/// AdamW(beta1, beta2), weight decay on the decay group only, learning rate set per step by
/// learning_rate().
std::unique_ptr<FusedAdamW> make_optimizer(const torch::nn::Module& model, const TrainConfig& train);

/// Learning rate at 0-based optimizer step `step`: linear warm-up to lr_peak over `warmup`
/// steps, then cosine decay reaching lr_min exactly at the final step (iterations - 1).
double learning_rate(const TrainConfig& train, int64_t step);

/// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace sg
