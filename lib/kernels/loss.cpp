// loss.cpp — chunked linear + cross-entropy with gradients computed in the forward pass.
#include "lib/kernels/loss.h"
#include "lib/kernels/loss_tuning.h"

#include <ATen/autocast_mode.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "lib/kernels/cpu_gemm.h"
#include "lib/kernels/cpu_kernels.h"

namespace sg {
namespace {

using torch::indexing::Slice;

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
  bool bf16_e = false;  // own bf16: E in bf16 over the first half of each logits row (exp_float_rows_to_bf16_front)
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

/// Rowmax (n, 1) and s = rowsum(E) (n) of a chunk's logits, E = exp(logits - rowmax) written in
/// place over the logits' buffer in the layout the row path gives (RowsPath), and the target's
/// logit `picked` (read before E overwrites it).
struct ChunkExp {
  torch::Tensor rowmax, sums, picked;
};

/// float32 (or float64) logits in, E float32 in place: ATen's three sweeps, or one pass of the
/// fused row kernel `kernel` (none: the switches'), whose sums are float64.
std::pair<torch::Tensor, torch::Tensor> exp_float_rows(torch::Tensor& logits, int64_t n, int64_t vocab, bool fused,
                                                       std::optional<RowKernel> kernel) {
  if (!fused) {
    auto rowmax = logits.amax(1, /*keepdim=*/true);
    logits.sub_(rowmax).exp_();
    return {rowmax, logits.sum(1)};
  }
  auto rowmax = torch::empty({n, 1}, logits.options());
  auto sums = torch::empty({n}, logits.options().dtype(torch::kDouble));
  exp_shifted_rows(logits.data_ptr<float>(), n, vocab, vocab, rowmax.data_ptr<float>(), sums.data_ptr<double>(), kernel);
  return {rowmax, sums};
}

/// float32 logits in, E out in bf16 packed into the first half of each row's bytes
/// (exp_shifted_rows_to_bf16): float32 sums, bf16 E for the own bf16 products.
std::pair<torch::Tensor, torch::Tensor> exp_float_rows_to_bf16_front(torch::Tensor& logits, int64_t n, int64_t vocab) {
  auto rowmax = torch::empty({n, 1}, logits.options());
  auto sums = torch::empty({n}, logits.options().dtype(torch::kDouble));
  exp_shifted_rows_to_bf16(logits.data_ptr<float>(), n, vocab, vocab, rowmax.data_ptr<float>(), sums.data_ptr<double>());
  return {rowmax, sums};
}

/// bf16 logits in, E bf16 in place, element for element (exp_shifted_rows_bf16): ready for the
/// bf16 products.
std::pair<torch::Tensor, torch::Tensor> exp_bf16_rows_in_place(torch::Tensor& logits, int64_t n, int64_t vocab) {
  auto rowmax = torch::empty({n, 1}, logits.options().dtype(torch::kFloat));
  auto sums = torch::empty({n}, logits.options().dtype(torch::kDouble));
  exp_shifted_rows_bf16(reinterpret_cast<uint16_t*>(logits.data_ptr<at::BFloat16>()), n, vocab, vocab,
                        rowmax.data_ptr<float>(), sums.data_ptr<double>());
  return {rowmax, sums};
}

/// How a chunk's logits become E: ATen's three sweeps, the fused float32 row kernel, bf16 logits
/// to bf16 E in place (autocast's bf16 products with the AVX-512 rows), or float32 logits to bf16
/// E at the front of each row (the own bf16 products with the AVX-512 rows, ChunkProducts::bf16_e).
enum class RowsPath { aten, fused, bf16_in_place, float_to_bf16_front };

/// Which paths a call of the loss takes, decided from its inputs, the plan and the CPU before
/// autocast is kept out (is_autocast_enabled reads the dispatch keys that guard excludes).
struct LossRoute {
  torch::ScalarType math = torch::kFloat;  // softmax and sums: float32 (float64 for float64 inputs)
  torch::ScalarType low = torch::kFloat;   // the products' dtype: autocast's where it is on
  bool autocast = false, cpu_float_inputs = false, fixed = false;
  bool own_bf16 = false, cpu_float = false;
  LossProducts products = LossProducts::plain;
  std::optional<RowKernel> row_kernel;  // a fixed plan's (none: the switches')
  RowsPath rows = RowsPath::aten;
};

/// The row path of a route (see RowsPath): the fused rows where the plan (a fixed one: wherever the
/// CPU has them) or the switches let them run, their bf16 forms where the CPU has AVX512-BF16.
RowsPath rows_path(const LossRoute& r) {
  const bool fused = r.cpu_float_inputs && (r.fixed ? *r.row_kernel != RowKernel::portable && cpu_has_row_kernel(*r.row_kernel)
                                                    : has_exp_shifted_rows());
  // The AVX-512 rows with bf16 output, where the CPU has AVX512-BF16 (a bf16 run's does). With
  // bf16 products they read the bf16 logits and write bf16 E in place (no float32 logits, no cast
  // of E); with the own bf16 products, see ChunkProducts::bf16_e.
  const bool avx512_bf16 = fused && cpu_has_bf16_rows() &&
                           (r.fixed ? *r.row_kernel : switched_row_kernel()) == RowKernel::avx512f;
  if (avx512_bf16 && r.low == torch::kBFloat16) return RowsPath::bf16_in_place;
  if (avx512_bf16 && r.own_bf16) return RowsPath::float_to_bf16_front;
  return fused ? RowsPath::fused : RowsPath::aten;
}

LossRoute route_of(const torch::Tensor& hidden, const torch::Tensor& weight, const LossPlan& plan) {
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
  r.fixed = plan.fixed();
  r.row_kernel = plan.row_kernel;
  r.products = plan.products;
  const bool float_products_named = r.products == LossProducts::packed || r.products == LossProducts::avx512;
  // The own bf16 products under autocast: float32 operands rounded to bf16 as they are packed,
  // float32 logits and exponentials (so `low` stays float32 and the float32 rows run).
  r.own_bf16 = r.autocast && r.cpu_float_inputs && r.products == LossProducts::avx512bf16 &&
               (r.fixed ? cpu_has_avx512_bf16_gemm() : has_avx512_bf16_gemm());
  r.cpu_float = r.cpu_float_inputs && (!r.autocast || (r.fixed && float_products_named) || r.own_bf16);
  r.low = r.autocast && !r.cpu_float ? at::autocast::get_autocast_dtype(device_type) : hidden.scalar_type();
  // CPU float32: max, exp and sum are one pass over each row (float32 logits, whatever the
  // products' dtype). A fixed plan (a named row kernel) runs the paths it names wherever the CPU has them.
  r.rows = rows_path(r);
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
  paths.bf16_e = r.rows == RowsPath::float_to_bf16_front;
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

/// A chunk's logits h Wᵀ (n, V) turned into E in `e` as the route's row path does it.
ChunkExp chunk_exponentials(const LossRoute& route, const ChunkProducts& paths, const torch::Tensor& h,
                            const torch::Tensor& t, int64_t n, torch::Tensor& e) {
  const int64_t vocab = paths.vocab;
  e = route.rows == RowsPath::bf16_in_place ? torch::matmul(h.to(route.low), paths.weight_h.t()) : paths.logits(h, n);
  ChunkExp out;
  out.picked = e.gather(1, t.unsqueeze(1)).squeeze(1).to(route.math);
  switch (route.rows) {
    case RowsPath::bf16_in_place: std::tie(out.rowmax, out.sums) = exp_bf16_rows_in_place(e, n, vocab); break;
    case RowsPath::float_to_bf16_front: std::tie(out.rowmax, out.sums) = exp_float_rows_to_bf16_front(e, n, vocab); break;
    case RowsPath::fused: std::tie(out.rowmax, out.sums) = exp_float_rows(e, n, vocab, true, route.row_kernel); break;
    case RowsPath::aten: std::tie(out.rowmax, out.sums) = exp_float_rows(e, n, vocab, false, route.row_kernel); break;
  }
  return out;
}

/// One call's gradients, filled chunk by chunk (see LinearCrossEntropy).
struct LossGradients {
  torch::Tensor weight_m, hidden, weight;  // weight_m: the weight in `math`
  double inverse_rows = 0;

  /// Adds rows [begin, begin + n)'s part: dhidden's rows and dweight's sum.
  void add(const LossRoute& route, const ChunkProducts& paths, const torch::Tensor& e, const ChunkExp& exp,
           const torch::Tensor& h, const torch::Tensor& t, int64_t begin, int64_t n) {
    const auto math = route.math;
    const auto row_scale = (exp.sums.reciprocal() * inverse_rows).to(math).unsqueeze(1);  // 1 / (s N), (n, 1)
    const auto h_m = h.to(math);
    const auto e_h = e.to(route.low);
    const torch::Tensor product = paths.times_w(e, e_h, n);  // (n, C)
    hidden.index_put_({Slice(begin, begin + n)},
                      (product * row_scale - weight_m.index_select(0, t) * inverse_rows).to(h.scalar_type()));
    const auto h_scaled = h_m * row_scale;
    paths.add_grad_weight(weight, e, e_h, h_scaled, n, /*first=*/begin == 0);
    weight.index_add_(0, t, h_m, -inverse_rows);
  }
};

// Per chunk of rows, with E = exp(logits - rowmax) and s = rowsum(E), so that softmax = E / s:
//   loss     = sum_rows (rowmax + log s - logit[target]) / N
//   dhidden  = (E W) / (s N)  -  W[target] / N                   (row scaling after the product)
//   dweight += Eᵀ (hidden / (s N))  -  scatter(target, hidden / N)
// The (n, V) buffer is written once by the first product and passes through three elementwise
// sweeps (max, exp, sum; one fused pass on the CPU fast path); the per-row scalings act on (n, C) matrices, and dweight accumulates in
// place (beta = 1) instead of through an (V, C) temporary.
class LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor hidden, torch::Tensor weight,
                               torch::Tensor targets, LossPlan plan) {
    const int64_t rows = hidden.size(0), vocab = weight.size(0);
    // apply() runs this with grad mode off whatever the caller's, so the inputs' flags say whether
    // a gradient will be asked for; linear_cross_entropy detaches them where the caller's grad
    // mode is off (a parameter keeps requires_grad under NoGradGuard: validation would otherwise
    // pay for both gradient products).
    const bool need_grad = hidden.requires_grad() || weight.requires_grad();
    if (plan.chunk_rows <= 0) plan.chunk_rows = default_loss_chunk_rows(vocab);  // ~64 MB of float logits
    const LossRoute route = route_of(hidden, weight, plan);
    const auto math = route.math;
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    LossGradients gradients;
    gradients.inverse_rows = 1.0 / static_cast<double>(rows);
    gradients.weight_m = weight.to(math);
    if (need_grad) {
      gradients.hidden = torch::empty_like(hidden);
      gradients.weight = torch::empty(weight.sizes(), weight.options().dtype(math));
    }
    const ChunkProducts paths = chunk_products(route, hidden, weight, plan.chunk_rows, need_grad);
    auto total = torch::zeros({}, hidden.options().dtype(torch::kDouble));
    for (int64_t begin = 0; begin < rows; begin += plan.chunk_rows) {
      const int64_t n = std::min(rows, begin + plan.chunk_rows) - begin;
      const auto h = hidden.index({Slice(begin, begin + n)});
      const auto t = targets.index({Slice(begin, begin + n)});
      torch::Tensor e;  // (n, V): the logits, then E
      const ChunkExp exp = chunk_exponentials(route, paths, h, t, n, e);
      total += (exp.rowmax.squeeze(1) + exp.sums.log() - exp.picked).sum().to(torch::kDouble);
      if (need_grad) gradients.add(route, paths, e, exp, h, t, begin, n);
    }
    if (need_grad) ctx->save_for_backward({gradients.hidden, gradients.weight.to(weight.scalar_type())});
    return (total * gradients.inverse_rows).to(math);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& scale = grads[0];
    // The usual case, loss.backward() with one micro-batch a step: no (V, C) multiply by one.
    if (scale.device().is_cpu() && scale.item<double>() == 1.0)
      return {saved[0], saved[1], torch::Tensor(), torch::Tensor()};
    return {saved[0] * scale.to(saved[0].scalar_type()), saved[1] * scale.to(saved[1].scalar_type()),
            torch::Tensor(), torch::Tensor()};
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
  if (!torch::GradMode::is_enabled())  // no gradient can be asked for: the logits product alone
    return LinearCrossEntropy::apply(hidden.detach(), weight.detach(), targets, chosen);
  return LinearCrossEntropy::apply(hidden, weight, targets, chosen);
}

torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, int64_t chunk_rows) {
  return linear_cross_entropy(hidden, weight, targets, LossPlan{chunk_rows, LossProducts::packed, std::nullopt});
}

}  // namespace sg
