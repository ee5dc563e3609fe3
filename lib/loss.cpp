// loss.cpp — chunked linear + cross-entropy with gradients computed in the forward pass.
#include "lib/loss.h"

#include <algorithm>

namespace sg {
namespace {

using torch::indexing::Slice;

class LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor hidden, torch::Tensor weight,
                               torch::Tensor targets, int64_t chunk_rows) {
    const int64_t rows = hidden.size(0), vocab = weight.size(0);
    const bool need_grad = hidden.requires_grad() || weight.requires_grad();
    if (chunk_rows <= 0) chunk_rows = std::max<int64_t>(64, (int64_t{1} << 24) / vocab);  // ~64 MB of float logits
    // Softmax and sums in float32 (float64 for float64 inputs).
    const auto math = hidden.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    torch::Tensor grad_hidden, grad_weight;
    if (need_grad) {
      grad_hidden = torch::empty_like(hidden);
      grad_weight = torch::zeros(weight.sizes(), weight.options().dtype(math));
    }
    auto total = torch::zeros({}, hidden.options().dtype(torch::kDouble));
    const double inverse_rows = 1.0 / static_cast<double>(rows);
    for (int64_t begin = 0; begin < rows; begin += chunk_rows) {
      const int64_t end = std::min(rows, begin + chunk_rows);
      const auto h = hidden.index({Slice(begin, end)});
      const auto t = targets.index({Slice(begin, end)});
      auto logits = torch::matmul(h, weight.t()).to(math);  // (n, V)
      const auto lse = torch::logsumexp(logits, -1);                  // (n)
      const auto picked = logits.gather(1, t.unsqueeze(1)).squeeze(1);
      total += (lse - picked).sum().to(torch::kDouble);
      if (!need_grad) continue;
      // d loss / d logits = (softmax - onehot) / N, built in place in the logits buffer.
      auto& probs = logits.sub_(lse.unsqueeze(1)).exp_();
      probs.scatter_add_(1, t.unsqueeze(1), torch::full({end - begin, 1}, -1.0, probs.options()));
      probs.mul_(inverse_rows);
      const auto p = probs.to(h.scalar_type());
      grad_hidden.index_put_({Slice(begin, end)}, torch::matmul(p, weight.to(h.scalar_type())));
      grad_weight.add_(torch::matmul(p.t(), h).to(math));
    }
    if (need_grad) ctx->save_for_backward({grad_hidden, grad_weight.to(weight.scalar_type())});
    return (total * inverse_rows).to(math);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto scale = grads[0];
    return {saved[0] * scale.to(saved[0].scalar_type()), saved[1] * scale.to(saved[1].scalar_type()),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, int64_t chunk_rows) {
  return LinearCrossEntropy::apply(hidden, weight, targets, chunk_rows);
}

}  // namespace sg
