// telemetry.cpp — the step's largest attention logit and residual activation (telemetry.h).
#include "lib/train/telemetry.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <limits>

namespace sg {

namespace {
torch::Tensor running_max(const torch::Tensor& so_far, const torch::Tensor& value) {
  return so_far.defined() ? torch::maximum(so_far, value) : value;
}
}  // namespace

torch::Tensor largest_causal_logit(const torch::Tensor& q, const torch::Tensor& k, double scale, int64_t block) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes() && block > 0, "largest_causal_logit: q and k (B, H, T, d)");
  torch::NoGradGuard no_grad;
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const auto queries = q.detach(), keys = k.detach();
  const int64_t length = q.size(2);
  // The strict upper triangle of one diagonal block: the future keys of its queries.
  const int64_t size = std::min(block, length);
  const auto future = torch::ones({size, size}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
  torch::Tensor largest;
  for (int64_t first = 0; first < length; first += block) {
    const int64_t width = std::min(block, length - first), after = first + width;
    const auto block_keys = keys.narrow(2, first, width).transpose(-2, -1);                        // (B, H, d, w)
    const auto diagonal = torch::matmul(queries.narrow(2, first, width), block_keys);              // (B, H, w, w)
    largest = running_max(largest, diagonal.masked_fill(future.narrow(0, 0, width).narrow(1, 0, width),
                                                        -std::numeric_limits<double>::infinity()).amax());
    if (after < length)  // every later query sees every key of the block
      largest = running_max(largest, torch::matmul(queries.narrow(2, after, length - after), block_keys).amax());  // (B, H, T - after, w)
  }
  // The scale after the maximum: rounding is monotone, so this is the largest of the scaled logits.
  const auto out = q.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  return largest.to(out) * scale;
}

void StepMaximaRecorder::attention_inputs(int64_t /*layer*/, const torch::Tensor& q, const torch::Tensor& k, double scale) {
  attention_logit_ = running_max(attention_logit_, largest_causal_logit(q, k, scale));
}

void StepMaximaRecorder::residual(int64_t /*layer*/, const torch::Tensor& stream) {
  torch::NoGradGuard no_grad;
  // One pass for both extremes instead of a copy of |x|.
  const auto [low, high] = torch::aminmax(stream.detach());
  const auto out = stream.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  activation_ = running_max(activation_, torch::maximum(high, -low).to(out));
}

void StepMaximaRecorder::reset() {
  attention_logit_ = torch::Tensor();
  activation_ = torch::Tensor();
}

}  // namespace sg
