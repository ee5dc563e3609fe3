// loss.cpp — chunked linear + cross-entropy with gradients computed in the forward pass.
#include "lib/kernels/loss.h"
#include "lib/kernels/loss_tuning.h"

#include <ATen/autocast_mode.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "lib/kernels/cpu_gemm.h"
#include "lib/kernels/cpu_kernels.h"

namespace sg {
namespace {

using torch::indexing::Slice;

// A plan's row kernel as the autograd function takes it.
constexpr int64_t kRowsBySwitches = -1, kRowsPortable = 0, kRowsAvx2 = 1, kRowsAvx512 = 2;

int64_t row_kernel_code(const std::string& name) {
  if (name.empty()) return kRowsBySwitches;
  if (name == "avx512f") return kRowsAvx512;
  if (name == "avx2") return kRowsAvx2;
  if (name == "portable") return kRowsPortable;
  throw std::invalid_argument("linear_cross_entropy: unknown row kernel '" + name + "'");
}

/// The loss's three matrix products on one chunk of rows, each by the path the plan and the CPU
/// allow: the loss's own AVX-512 products (float32, or bf16 with float32 results), MKL's packed
/// GEMM (the weight packed once for every chunk), or a plain matmul in the products' dtype (`low`:
/// autocast's where it is on).
struct ChunkProducts {
  int64_t width = 0, vocab = 0;
  torch::TensorOptions options;  // the hidden rows'
  torch::ScalarType low = torch::kFloat, math = torch::kFloat;
  torch::Tensor weight_h;          // the weight in `low`, cast once
  bool own = false;                // the AVX-512 products: gemm_avx512, or gemm_avx512_bf16
  decltype(&gemm_avx512) gemm = gemm_avx512;
  bool bf16_e = false;  // own bf16: E in bf16 over the first half of each logits row (exp_rows_to_bf16)
  torch::Tensor weight_c;          // own: the contiguous weight that w points into
  const float* w = nullptr;        // (V, C) row-major
  std::optional<PackedRightOperand> times_weight_t, times_weight;  // · Wᵀ (logits), · W (E W)

  /// E (n × V) as the own products' left operand, or its transpose (V × n).
  StridedMatrix e_matrix(const torch::Tensor& e, bool transposed) const {
    if (bf16_e) {
      const auto* bits = reinterpret_cast<const uint16_t*>(e.data_ptr<float>());
      return transposed ? bf16_matrix(bits, 1, 2 * vocab) : bf16_matrix(bits, 2 * vocab, 1);
    }
    return transposed ? StridedMatrix{e.data_ptr<float>(), 1, vocab} : StridedMatrix{e.data_ptr<float>(), vocab, 1};
  }

  /// The (n, V) logits h Wᵀ.
  torch::Tensor logits(const torch::Tensor& h, int64_t n) const {
    if (own) {
      const auto h_c = h.contiguous();
      auto logits = torch::empty({n, vocab}, options);
      gemm(n, vocab, width, {h_c.data_ptr<float>(), width, 1}, {w, 1, width}, logits.data_ptr<float>(), vocab,
                  /*accumulate=*/false);
      return logits;
    }
    if (times_weight_t) {
      auto logits = torch::empty({n, vocab}, options);
      times_weight_t->multiply(h.contiguous().data_ptr<float>(), width, n, logits.data_ptr<float>(), vocab);
      return logits;
    }
    return torch::matmul(h.to(low), weight_h.t()).to(math);
  }

  /// The (n, C) product E W.
  torch::Tensor times_w(const torch::Tensor& e, const torch::Tensor& e_h, int64_t n) const {
    if (own) {
      auto product = torch::empty({n, width}, options);
      gemm(n, width, vocab, e_matrix(e, false), {w, width, 1}, product.data_ptr<float>(), width,
                  /*accumulate=*/false);
      return product;
    }
    if (times_weight) {
      auto product = torch::empty({n, width}, options);
      times_weight->multiply(e.data_ptr<float>(), vocab, n, product.data_ptr<float>(), width);
      return product;
    }
    return torch::matmul(e_h, weight_h).to(math);
  }

  /// dweight (V, C) = (first) or += Eᵀ (V, n) · h_scaled (n, C).
  void add_grad_weight(torch::Tensor& grad_weight, const torch::Tensor& e, const torch::Tensor& e_h,
                       const torch::Tensor& h_scaled, int64_t n, bool first) const {
    if (own) {
      const auto scaled = h_scaled.contiguous();
      gemm(vocab, width, n, e_matrix(e, true), {scaled.data_ptr<float>(), width, 1},
                  grad_weight.data_ptr<float>(), width, /*accumulate=*/!first);
    } else if (low != math) {  // bf16 under autocast
      const auto part = torch::matmul(e_h.t(), h_scaled.to(low)).to(math);
      if (first) grad_weight.copy_(part); else grad_weight.add_(part);
    } else if (first) {
      torch::mm_out(grad_weight, e.t(), h_scaled);
    } else {
      grad_weight.addmm_(e.t(), h_scaled);
    }
  }
};

/// Turns (n, V) logits into E = exp(logits - rowmax) in place; returns rowmax (n, 1) and
/// s = rowsum(E) (n; float64 from the fused rows kernel `isa`).
std::pair<torch::Tensor, torch::Tensor> exp_rows(torch::Tensor& logits, int64_t n, int64_t vocab, bool fused,
                                                 const std::string& isa) {
  if (!fused) {
    auto rowmax = logits.amax(1, /*keepdim=*/true);
    logits.sub_(rowmax).exp_();
    return {rowmax, logits.sum(1)};
  }
  auto rowmax = torch::empty({n, 1}, logits.options());
  auto sums = torch::empty({n}, logits.options().dtype(torch::kDouble));
  exp_shifted_rows(logits.data_ptr<float>(), n, vocab, vocab, rowmax.data_ptr<float>(), sums.data_ptr<double>(), isa);
  return {rowmax, sums};
}

/// The same on float32 logits, E written in bf16 over the first half of each row
/// (exp_shifted_rows_to_bf16): float32 logits and sums, bf16 E for the own bf16 products.
std::pair<torch::Tensor, torch::Tensor> exp_rows_to_bf16(torch::Tensor& logits, int64_t n, int64_t vocab) {
  auto rowmax = torch::empty({n, 1}, logits.options());
  auto sums = torch::empty({n}, logits.options().dtype(torch::kDouble));
  exp_shifted_rows_to_bf16(logits.data_ptr<float>(), n, vocab, vocab, rowmax.data_ptr<float>(), sums.data_ptr<double>());
  return {rowmax, sums};
}

/// The same on bf16 logits in place (exp_shifted_rows_bf16): E in bf16, ready for the bf16 products.
std::pair<torch::Tensor, torch::Tensor> exp_rows_bf16(torch::Tensor& logits, int64_t n, int64_t vocab) {
  auto rowmax = torch::empty({n, 1}, logits.options().dtype(torch::kFloat));
  auto sums = torch::empty({n}, logits.options().dtype(torch::kDouble));
  exp_shifted_rows_bf16(reinterpret_cast<uint16_t*>(logits.data_ptr<at::BFloat16>()), n, vocab, vocab,
                        rowmax.data_ptr<float>(), sums.data_ptr<double>());
  return {rowmax, sums};
}

/// Which paths a call of the loss takes, decided from its inputs, the plan and the CPU before
/// autocast is kept out (is_autocast_enabled reads the dispatch keys that guard excludes).
struct LossRoute {
  torch::ScalarType math = torch::kFloat;  // softmax and sums: float32 (float64 for float64 inputs)
  torch::ScalarType low = torch::kFloat;   // the products' dtype: autocast's where it is on
  bool autocast = false, cpu_float_inputs = false, fixed = false;
  bool own_bf16 = false, cpu_float = false, fused_rows = false, avx512_bf16_rows = false, bf16_rows = false;
  LossProducts products = LossProducts::plain;
  std::string rows_isa;  // a fixed plan's row kernel: "avx512f", "avx2" or "" (portable, or by the switches)
};

LossRoute route_of(const torch::Tensor& hidden, const torch::Tensor& weight, int64_t products, int64_t row_kernel) {
  LossRoute r;
  r.math = hidden.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  // The products' dtype: autocast's where it is on (bf16 on the GPU), as autocast would run them.
  // Under autocast `hidden` arrives in float32 (LayerNorm runs in float32 there), and out= and
  // in-place products (mm_out, addmm_) escape autocast: so the dtype is taken from autocast, not
  // from hidden, and every product is a plain, cast, matmul (autocast itself kept out of the loop,
  // so that the float32 products of a fixed plan stay float32 under it).
  const auto device_type = hidden.device().type();
  r.autocast = r.math == torch::kFloat && at::autocast::is_autocast_enabled(device_type);
  r.cpu_float_inputs = hidden.is_cpu() && hidden.scalar_type() == torch::kFloat && weight.scalar_type() == torch::kFloat;
  r.fixed = row_kernel != kRowsBySwitches;
  r.products = static_cast<LossProducts>(products);
  const bool float_products_named = r.products == LossProducts::packed || r.products == LossProducts::avx512;
  // The own bf16 products under autocast: float32 operands rounded to bf16 as they are packed,
  // float32 logits and exponentials (so `low` stays float32 and the float32 rows run).
  r.own_bf16 = r.autocast && r.cpu_float_inputs && r.products == LossProducts::avx512bf16 &&
               (r.fixed ? cpu_has_avx512_bf16_gemm() : has_avx512_bf16_gemm());
  r.cpu_float = r.cpu_float_inputs && (!r.autocast || (r.fixed && float_products_named) || r.own_bf16);
  r.low = r.autocast && !r.cpu_float ? at::autocast::get_autocast_dtype(device_type) : hidden.scalar_type();
  // CPU float32: max, exp and sum are one pass over each row (float32 logits, whatever the
  // products' dtype). A fixed plan (a named row kernel) runs the paths it names wherever the CPU has them.
  r.rows_isa = row_kernel == kRowsAvx512 ? "avx512f" : row_kernel == kRowsAvx2 ? "avx2" : "";
  r.fused_rows = r.cpu_float_inputs && (r.fixed ? !r.rows_isa.empty() && cpu_has_row_kernel(r.rows_isa) : has_exp_shifted_rows());
  // The AVX-512 rows with bf16 output, where the CPU has AVX512-BF16 (a bf16 run's does). With
  // bf16 products they read the bf16 logits and write bf16 E in place (no float32 logits, no cast
  // of E); with the own bf16 products, see ChunkProducts::bf16_e.
  r.avx512_bf16_rows = r.fused_rows && cpu_has_bf16_rows() &&
                       (r.fixed ? r.rows_isa == "avx512f" : exp_shifted_rows_isa() == "avx512f");
  r.bf16_rows = r.avx512_bf16_rows && r.low == torch::kBFloat16;
  return r;
}

/// The products' paths of a route: the own AVX-512 products, MKL's packed weight (packed once for
/// every chunk and both products that read it), or plain matmuls in `low`.
ChunkProducts chunk_products(const LossRoute& r, const torch::Tensor& hidden, const torch::Tensor& weight,
                             int64_t chunk_rows, bool need_grad) {
  const int64_t rows = hidden.size(0), width = hidden.size(1), vocab = weight.size(0);
  ChunkProducts paths;
  paths.width = width;
  paths.vocab = vocab;
  paths.options = hidden.options();
  paths.low = r.low;
  paths.math = r.math;
  paths.weight_h = weight.to(r.low);  // cast once, not per chunk
  // Outside autocast (a bf16 run's float32 validation) the own bf16 products run as the own
  // float32 ones: the same blocked product, float32 operands.
  const bool own_float = r.products == LossProducts::avx512 || (r.products == LossProducts::avx512bf16 && !r.autocast);
  paths.own = r.own_bf16 || (r.cpu_float && own_float && (r.fixed ? cpu_has_avx512_gemm() : has_avx512_gemm()));
  if (r.own_bf16) paths.gemm = gemm_avx512_bf16;
  // The own bf16 products with the AVX-512 rows: E written once, in bf16, for both gradient
  // products (half the bytes they read, and no rounding as they pack).
  paths.bf16_e = r.own_bf16 && r.avx512_bf16_rows;
  paths.weight_c = paths.own ? weight.contiguous() : weight;
  paths.w = paths.own ? paths.weight_c.data_ptr<float>() : nullptr;
  if (r.cpu_float && r.products == LossProducts::packed && rows > 0 &&
      (r.fixed ? PackedRightOperand::present() : PackedRightOperand::available())) {
    const auto w = weight.contiguous();
    const int64_t most_rows = std::min(chunk_rows, rows);
    paths.times_weight_t.emplace(w.data_ptr<float>(), width, /*transposed=*/true, most_rows, vocab, width);
    if (need_grad) paths.times_weight.emplace(w.data_ptr<float>(), width, /*transposed=*/false, most_rows, width, vocab);
  }
  return paths;
}

// Per chunk of rows, with E = exp(logits - rowmax) and s = rowsum(E), so that softmax = E / s:
//   loss     = sum_rows (rowmax + log s - logit[target]) / N
//   dhidden  = (E W) / (s N)  -  W[target] / N                   (row scaling after the product)
//   dweight += Eᵀ (hidden / (s N))  -  scatter(target, hidden / N)
// The (n, V) buffer is written once by the first product and passes through three elementwise
// sweeps (max, exp, sum; one fused pass on the CPU fast path); the per-row scalings act on (n, C) matrices, and dweight accumulates in
// place (beta = 1) instead of through an (V, C) temporary.
class LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
 public:
  // row_kernel: kRowsBySwitches, or a fixed plan's kernel (kRowsPortable, kRowsAvx2, kRowsAvx512).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor hidden, torch::Tensor weight,
                               torch::Tensor targets, int64_t chunk_rows, int64_t products, int64_t row_kernel) {
    const int64_t rows = hidden.size(0), vocab = weight.size(0);
    // apply() runs this with grad mode off whatever the caller's, so the inputs' flags say whether
    // a gradient will be asked for; linear_cross_entropy detaches them where the caller's grad
    // mode is off (a parameter keeps requires_grad under NoGradGuard: validation would otherwise
    // pay for both gradient products).
    const bool need_grad = hidden.requires_grad() || weight.requires_grad();
    if (chunk_rows <= 0) chunk_rows = default_loss_chunk_rows(vocab);  // ~64 MB of float logits
    const LossRoute route = route_of(hidden, weight, products, row_kernel);
    const auto math = route.math, low = route.low;
    const double inverse_rows = 1.0 / static_cast<double>(rows);
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    torch::Tensor grad_hidden, grad_weight;
    const auto weight_m = weight.to(math);
    if (need_grad) {
      grad_hidden = torch::empty_like(hidden);
      grad_weight = torch::empty(weight.sizes(), weight.options().dtype(math));
    }
    const ChunkProducts paths = chunk_products(route, hidden, weight, chunk_rows, need_grad);
    auto total = torch::zeros({}, hidden.options().dtype(torch::kDouble));
    for (int64_t begin = 0; begin < rows; begin += chunk_rows) {
      const int64_t end = std::min(rows, begin + chunk_rows), n = end - begin;
      const auto h = hidden.index({Slice(begin, end)});
      const auto t = targets.index({Slice(begin, end)});
      torch::Tensor logits = route.bf16_rows ? torch::matmul(h.to(low), paths.weight_h.t()) : paths.logits(h, n);  // (n, V)
      const auto picked = logits.gather(1, t.unsqueeze(1)).squeeze(1).to(math);
      const auto [rowmax, sums] = route.bf16_rows ? exp_rows_bf16(logits, n, vocab)
                                  : paths.bf16_e  ? exp_rows_to_bf16(logits, n, vocab)
                                                  : exp_rows(logits, n, vocab, route.fused_rows, route.rows_isa);
      const auto& e = logits;
      total += (rowmax.squeeze(1) + sums.log() - picked).sum().to(torch::kDouble);
      if (!need_grad) continue;
      const auto row_scale = (sums.reciprocal() * inverse_rows).to(math).unsqueeze(1);  // 1 / (s N), (n, 1)
      const auto h_m = h.to(math);
      const auto e_h = e.to(low);
      const torch::Tensor product = paths.times_w(e, e_h, n);  // (n, C)
      grad_hidden.index_put_({Slice(begin, end)},
                             (product * row_scale - weight_m.index_select(0, t) * inverse_rows).to(h.scalar_type()));
      const auto h_scaled = h_m * row_scale;
      paths.add_grad_weight(grad_weight, e, e_h, h_scaled, n, /*first=*/begin == 0);
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
    if (scale.device().is_cpu() && scale.item<double>() == 1.0)
      return {saved[0], saved[1], torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    return {saved[0] * scale.to(saved[0].scalar_type()), saved[1] * scale.to(saved[1].scalar_type()),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, const LossPlan& plan) {
  LossPlan chosen = plan;
  if (chosen.chunk_rows <= 0) {
    // The CPU float32 loss: the plan this machine runs fastest (loss_tuning.h); elsewhere (a GPU)
    // the fixed rule, unless SINKGATE_LOSS_CHUNK_ROWS.
    if (hidden.is_cpu() && hidden.scalar_type() == torch::kFloat && hidden.dim() == 2 &&
        !at::autocast::is_autocast_enabled(at::kCPU))
      chosen = loss_plan(hidden.size(0), hidden.size(1), weight.size(0));
    else
      chosen.chunk_rows = forced_loss_chunk_rows();
    chosen.row_kernel = plan.row_kernel;
  }
  const int64_t row_kernel = row_kernel_code(chosen.row_kernel);
  if (!torch::GradMode::is_enabled())  // no gradient can be asked for: the logits product alone
    return LinearCrossEntropy::apply(hidden.detach(), weight.detach(), targets, chosen.chunk_rows,
                                     static_cast<int64_t>(chosen.products), row_kernel);
  return LinearCrossEntropy::apply(hidden, weight, targets, chosen.chunk_rows, static_cast<int64_t>(chosen.products),
                                   row_kernel);
}

torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, int64_t chunk_rows) {
  return linear_cross_entropy(hidden, weight, targets, LossPlan{chunk_rows, LossProducts::packed, ""});
}

const char* loss_products_name(LossProducts products) {
  switch (products) {
    case LossProducts::plain: return "plain";
    case LossProducts::packed: return "packed";
    case LossProducts::avx512: return "avx512";
    case LossProducts::bf16: return "bf16";
    case LossProducts::avx512bf16: return "avx512bf16";
  }
  return "plain";
}

}  // namespace sg
