// optimizer.cpp — parameter groups, AdamW and the warm-up + cosine schedule.
#include "lib/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "lib/model/attention.h"

namespace sg {
namespace {

bool is_arm_parameter(const std::string& name) {
  const auto leaf = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
  const auto& names = AttentionImpl::no_decay_names();
  return std::find(names.begin(), names.end(), leaf) != names.end();
}

}  // namespace

ParameterGroups parameter_groups(const torch::nn::Module& model) {
  ParameterGroups groups;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    if (!item.value().requires_grad()) continue;
    if (item.value().dim() >= 2 && !is_arm_parameter(item.key())) {
      groups.decay.push_back(item.value());
      groups.decay_names.push_back(item.key());
    } else {
      groups.no_decay.push_back(item.value());
      groups.no_decay_names.push_back(item.key());
    }
  }
  return groups;
}

std::unique_ptr<FusedAdamW> make_optimizer(const torch::nn::Module& model, const TrainConfig& train) {
  auto groups = parameter_groups(model);
  auto options = [&](double decay) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(train.lr_peak);
    o->betas({train.beta1, train.beta2}).eps(1e-8).weight_decay(decay);
    return o;
  };
  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  param_groups.emplace_back(groups.decay, options(train.weight_decay));
  param_groups.emplace_back(groups.no_decay, options(0.0));
  return std::make_unique<FusedAdamW>(param_groups, torch::optim::AdamWOptions(train.lr_peak));
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  fused_step(std::nullopt);
  return loss;
}

torch::Tensor FusedAdamW::clip_and_step(double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;  // clip_grad_norm_'s: the norm of the per-tensor norms
  for (const auto& group : param_groups())
    for (const auto& p : group.params())
      if (p.grad().defined()) norms.push_back(p.grad().norm(2).to(torch::kFloat));
  if (norms.empty()) return torch::zeros({});
  const auto total = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2);
  // grad / divisor = grad * min(1, max_norm / (total + 1e-6)); a divisor of exactly 1 leaves it exact.
  fused_step((total + 1e-6).div(max_norm).clamp_min(1.0));
  return total;
}

void FusedAdamW::fused_step(const std::optional<torch::Tensor>& grad_divisor) {
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    if (options.amsgrad()) throw std::logic_error("FusedAdamW: amsgrad is not used by sinkgate");
    // One fused call per (device, dtype): the kernel wants homogeneous lists.
    std::map<std::pair<std::string, int>, std::vector<size_t>> buckets;
    for (size_t i = 0; i < group.params().size(); ++i) {
      const auto& p = group.params()[i];
      if (!p.grad().defined()) continue;
      buckets[{p.device().str(), static_cast<int>(p.scalar_type())}].push_back(i);
    }
    for (const auto& bucket : buckets) {
      std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
      for (size_t i : bucket.second) {
        auto& p = group.params()[i];
        auto& slot = state()[p.unsafeGetTensorImpl()];
        if (!slot) {
          auto fresh = std::make_unique<torch::optim::AdamWParamState>();
          fresh->step(0);
          fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
          fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
          slot = std::move(fresh);
        }
        auto& s = static_cast<torch::optim::AdamWParamState&>(*slot);
        s.step(s.step() + 1);
        params.push_back(p);
        grads.push_back(p.grad().is_sparse() ? p.grad().to_dense() : p.grad());  // a lookup-only gradient
        exp_avgs.push_back(s.exp_avg());
        exp_avg_sqs.push_back(s.exp_avg_sq());
        // The kernel reads the (already incremented) step count from a float tensor on the device.
        steps.push_back(torch::full({}, static_cast<double>(s.step()), p.options().dtype(torch::kFloat)));
      }
      std::optional<torch::Tensor> divisor;  // the kernel divides every gradient by it
      if (grad_divisor) divisor = grad_divisor->to(params.front().device());
      at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, steps, options.lr(),
                        std::get<0>(options.betas()), std::get<1>(options.betas()), options.weight_decay(),
                        options.eps(), /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/divisor);
    }
  }
}

double learning_rate(const TrainConfig& train, int64_t step) {
  if (step < train.warmup) return train.lr_peak * static_cast<double>(step + 1) / static_cast<double>(train.warmup);
  const int64_t span = train.iterations - 1 - train.warmup;
  if (span <= 0) return train.lr_min;
  const double progress = std::min(1.0, static_cast<double>(step - train.warmup) / static_cast<double>(span));
  return train.lr_min + 0.5 * (train.lr_peak - train.lr_min) * (1.0 + std::cos(M_PI * progress));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace sg
