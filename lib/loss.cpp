// loss.cpp — chunked linear + cross-entropy with gradients computed in the forward pass.
#include "lib/loss.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "lib/cpu_kernels.h"

namespace sg {
namespace {

using torch::indexing::Slice;

// The CPU float32 path of the loop below, the same arithmetic with less memory traffic: W is
// packed once (MKL) for the two products that read it instead of once per chunk and product;
// the (n, V) buffer is allocated once; max, exp and sum are one kernel call per chunk (AVX-512)
// reading each row from memory once; loss terms are summed in double. Falls back piece by piece
// (torch::mm, ATen's sweeps) where MKL or AVX-512 is missing. Returns the summed loss.
double cpu_float_chunks(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                        int64_t chunk_rows, bool need_grad, torch::Tensor& grad_hidden, torch::Tensor& grad_weight) {
  const int64_t rows = hidden.size(0), width = hidden.size(1), vocab = weight.size(0);
  const double inverse_rows = 1.0 / static_cast<double>(rows);
  chunk_rows = std::min(chunk_rows, rows);
  const auto h_all = hidden.contiguous(), w = weight.contiguous(), t_all = targets.contiguous();
  const float* h_data = h_all.data_ptr<float>();
  const float* w_data = w.data_ptr<float>();
  const int64_t* t_data = t_all.data_ptr<int64_t>();
  for (int64_t r = 0; r < rows; ++r)  // the logits are indexed directly below
    TORCH_CHECK(t_data[r] >= 0 && t_data[r] < vocab, "linear_cross_entropy: target ", t_data[r], " at row ", r,
                " is outside the vocabulary [0, ", vocab, ")");
  std::optional<PackedRightOperand> times_weight_t, times_weight;  // · Wᵀ (logits), · W (E W)
  if (PackedRightOperand::available() && rows > 0) {
    times_weight_t.emplace(w_data, width, /*transposed=*/true, chunk_rows, vocab, width);
    if (need_grad) times_weight.emplace(w_data, width, /*transposed=*/false, chunk_rows, width, vocab);
  }
  auto buffer = torch::empty({chunk_rows, vocab}, torch::kFloat);  // logits, then E in place
  auto product = torch::empty({chunk_rows, width}, torch::kFloat);
  auto row_scale = torch::empty({chunk_rows, 1}, torch::kFloat);
  std::vector<float> rowmax(chunk_rows), picked(chunk_rows);
  std::vector<double> sums(chunk_rows);
  double total = 0.0;
  for (int64_t begin = 0; begin < rows; begin += chunk_rows) {
    const int64_t n = std::min(rows, begin + chunk_rows) - begin;
    auto logits = buffer.narrow(0, 0, n);  // (n, V)
    float* logits_data = logits.data_ptr<float>();
    const auto h = h_all.narrow(0, begin, n);
    const auto t = t_all.narrow(0, begin, n);
    if (times_weight_t) times_weight_t->multiply(h_data + begin * width, width, n, logits_data, vocab);
    else torch::mm_out(logits, h, w.t());
    for (int64_t r = 0; r < n; ++r) picked[r] = logits_data[r * vocab + t_data[begin + r]];
    if (has_exp_shifted_rows()) {
      exp_shifted_rows(logits_data, n, vocab, vocab, rowmax.data(), sums.data());
    } else {
      const auto m = logits.amax(1, /*keepdim=*/true);
      const auto s = logits.sub_(m).exp_().sum(1).to(torch::kDouble);
      std::copy_n(m.data_ptr<float>(), n, rowmax.begin());
      std::copy_n(s.data_ptr<double>(), n, sums.begin());
    }
    float* scale_data = row_scale.data_ptr<float>();
    for (int64_t r = 0; r < n; ++r) {
      total += static_cast<double>(rowmax[r]) + std::log(sums[r]) - static_cast<double>(picked[r]);
      scale_data[r] = static_cast<float>(inverse_rows / sums[r]);  // 1 / (s N)
    }
    if (!need_grad) continue;
    const auto scale = row_scale.narrow(0, 0, n);  // (n, 1)
    auto e_times_w = product.narrow(0, 0, n);      // (n, C)
    if (times_weight) times_weight->multiply(logits_data, vocab, n, e_times_w.data_ptr<float>(), width);
    else torch::mm_out(e_times_w, logits, w);
    auto grad_rows = grad_hidden.narrow(0, begin, n);
    torch::mul_out(grad_rows, e_times_w, scale);
    grad_rows.sub_(w.index_select(0, t), inverse_rows);
    const auto h_scaled = h * scale;
    if (begin == 0) torch::mm_out(grad_weight, logits.t(), h_scaled);
    else grad_weight.addmm_(logits.t(), h_scaled);
    grad_weight.index_add_(0, t, h, -inverse_rows);
  }
  return total;
}

// Per chunk of rows, with E = exp(logits - rowmax) and s = rowsum(E), so that softmax = E / s:
//   loss     = sum_rows (rowmax + log s - logit[target]) / N
//   dhidden  = (E W) / (s N)  -  W[target] / N                   (row scaling after the product)
//   dweight += Eᵀ (hidden / (s N))  -  scatter(target, hidden / N)
// The (n, V) buffer is written once by the first product and passes through three elementwise
// sweeps (max, exp, sum); the per-row scalings act on (n, C) matrices, and dweight accumulates in
// place (beta = 1) instead of through an (V, C) temporary.
class LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor hidden, torch::Tensor weight,
                               torch::Tensor targets, int64_t chunk_rows) {
    const int64_t rows = hidden.size(0), vocab = weight.size(0);
    const bool need_grad = hidden.requires_grad() || weight.requires_grad();
    if (chunk_rows <= 0) chunk_rows = std::max<int64_t>(64, (int64_t{1} << 24) / vocab);  // ~64 MB of float logits
    // Softmax and sums in float32 (float64 for float64 inputs).
    const auto math = hidden.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    const double inverse_rows = 1.0 / static_cast<double>(rows);
    torch::Tensor grad_hidden, grad_weight;
    const auto weight_m = weight.to(math);
    const auto weight_h = weight.to(hidden.scalar_type());  // cast once, not per chunk (bf16 under autocast)
    if (need_grad) {
      grad_hidden = torch::empty_like(hidden);
      grad_weight = torch::empty(weight.sizes(), weight.options().dtype(math));
    }
    if (hidden.is_cpu() && hidden.scalar_type() == torch::kFloat && weight.scalar_type() == torch::kFloat) {
      const double total = cpu_float_chunks(hidden, weight, targets, chunk_rows, need_grad, grad_hidden, grad_weight);
      if (need_grad) ctx->save_for_backward({grad_hidden, grad_weight});
      return torch::scalar_tensor(total * inverse_rows, hidden.options().dtype(math));
    }
    auto total = torch::zeros({}, hidden.options().dtype(torch::kDouble));
    for (int64_t begin = 0; begin < rows; begin += chunk_rows) {
      const int64_t end = std::min(rows, begin + chunk_rows);
      const auto h = hidden.index({Slice(begin, end)});
      const auto t = targets.index({Slice(begin, end)});
      auto logits = torch::matmul(h, weight.t()).to(math);  // (n, V)
      const auto picked = logits.gather(1, t.unsqueeze(1)).squeeze(1);
      const auto rowmax = logits.amax(1, /*keepdim=*/true);
      auto& e = logits.sub_(rowmax).exp_();
      const auto sums = e.sum(1);
      total += (rowmax.squeeze(1) + sums.log() - picked).sum().to(torch::kDouble);
      if (!need_grad) continue;
      const auto row_scale = (sums.reciprocal() * inverse_rows).unsqueeze(1);  // 1 / (s N), (n, 1)
      const auto h_m = h.to(math);
      const auto e_h = e.to(h.scalar_type());
      const auto product = torch::matmul(e_h, weight_h).to(math);  // (n, C)
      grad_hidden.index_put_({Slice(begin, end)},
                             (product * row_scale - weight_m.index_select(0, t) * inverse_rows).to(h.scalar_type()));
      const auto h_scaled = h_m * row_scale;
      if (h.scalar_type() != math) {  // bf16 under CUDA autocast: the product in bf16, as autocast would
        const auto part = torch::matmul(e_h.t(), h_scaled.to(h.scalar_type())).to(math);
        if (begin == 0) grad_weight.copy_(part); else grad_weight.add_(part);
      } else if (begin == 0) {
        torch::mm_out(grad_weight, e.t(), h_scaled);
      } else {
        grad_weight.addmm_(e.t(), h_scaled);
      }
      grad_weight.index_add_(0, t, h_m, -inverse_rows);
    }
    if (need_grad) ctx->save_for_backward({grad_hidden, grad_weight.to(weight.scalar_type())});
    return (total * inverse_rows).to(math);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& scale = grads[0];
    // The usual case, loss.backward() with one micro-batch a step: no (V, C) multiply by one.
    if (scale.device().is_cpu() && scale.item<double>() == 1.0) return {saved[0], saved[1], torch::Tensor(), torch::Tensor()};
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
