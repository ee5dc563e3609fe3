// Tests of lib/kernels/cpu_gemm (the loss's AVX-512 matrix products, float32 and bf16) against
// float64 products computed by torch in double (of bf16-rounded operands for the bf16 product), over shapes on and off its tile and block edges, every stride
// pattern the loss passes (row-major and transposed operands), accumulation, and threads.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "lib/kernels/cpu_gemm.h"
#include "lib/model/runtime.h"

namespace {

/// a as a StridedMatrix of its (rows, columns), read through a transposed buffer when `transposed`.
struct Operand {
  torch::Tensor storage;  // float32, contiguous
  sg::StridedMatrix view;
};

Operand operand(const torch::Tensor& matrix, bool transposed) {
  if (!transposed) {
    auto storage = matrix.contiguous();
    return {storage, {storage.data_ptr<float>(), storage.size(1), 1}};
  }
  auto storage = matrix.t().contiguous();  // (columns, rows): element (i, j) at j * rows + i
  return {storage, {storage.data_ptr<float>(), 1, storage.size(1)}};
}

/// One of the products under test: gemm_avx512 or gemm_avx512_bf16.
using Gemm = void (*)(int64_t, int64_t, int64_t, sg::StridedMatrix, sg::StridedMatrix, float*, int64_t, bool);

/// Runs `gemm` over the shapes, both layouts of each operand and with and without accumulation,
/// against float64 products of the operands as `round` gives them (the identity, or bf16): the
/// error of each element, over sum |a b| + 1, within 1.2e-7 times min(k, block_depth) + 1e-6
/// (float32 sums of k exact-enough products, in blocks); c's padding past each row untouched.
/// `rounded`: the products differ from the unrounded operands' by more than 1e-4 of that scale.
void check_products(Gemm gemm, const std::vector<std::tuple<int64_t, int64_t, int64_t>>& shapes, int64_t block_depth,
                    const std::function<torch::Tensor(const torch::Tensor&)>& round, bool rounded) {
  for (const auto& [m, n, k] : shapes)
    for (bool a_transposed : {false, true})
      for (bool b_transposed : {false, true})
        for (bool accumulate : {false, true}) {
          INFO("m " << m << " n " << n << " k " << k << (a_transposed ? " a transposed" : "")
                    << (b_transposed ? " b transposed" : "") << (accumulate ? " accumulating" : ""));
          const auto a = torch::randn({m, k}), b = torch::randn({n, k}).t();  // b (k, n)
          const auto before = torch::randn({m, n + 3});  // c with a row stride wider than its row
          const auto x = operand(a, a_transposed), y = operand(b, b_transposed);
          auto c = before.clone();
          gemm(m, n, k, x.view, y.view, c.data_ptr<float>(), n + 3, accumulate);
          auto expected = torch::mm(round(a).to(torch::kDouble), round(b).to(torch::kDouble));
          if (accumulate) expected += before.narrow(1, 0, n).to(torch::kDouble);
          const auto got = c.narrow(1, 0, n).to(torch::kDouble);
          const auto scale = torch::mm(a.abs().to(torch::kDouble), b.abs().to(torch::kDouble)) + 1.0;
          const double worst = ((got - expected).abs() / scale).max().item<double>();
          INFO("largest error / (sum |a b| + 1): " << worst);
          CHECK(worst < 1.2e-7 * static_cast<double>(std::min(k, block_depth)) + 1e-6);
          CHECK(torch::equal(c.narrow(1, n, 3), before.narrow(1, n, 3)));
          if (rounded && k >= 32) {
            auto exact = torch::mm(a.to(torch::kDouble), b.to(torch::kDouble));
            if (accumulate) exact += before.narrow(1, 0, n).to(torch::kDouble);
            CHECK(((got - exact).abs() / scale).max().item<double>() > 1e-4);
          }
        }
}

}  // namespace

TEST_CASE("gemm_avx512: products against float64 on and off the tile and block edges, every stride pattern") {
  if (!sg::has_avx512_gemm()) {
    WARN("no AVX-512F on this CPU: gemm_avx512 not tested (the loss uses MKL or torch::mm)");
    return;
  }
  torch::manual_seed(3);
  // m around the 12-row tile and the 120-row block, n around the 32-column tile and the
  // 3,072-column block, k around the 256-deep block.
  check_products(sg::gemm_avx512,
                 {{1, 1, 1}, {12, 32, 256}, {13, 33, 257}, {11, 31, 255}, {121, 17, 5}, {7, 3100, 40}, {250, 64, 600},
                  {3, 5, 1000}, {240, 96, 512}},
                 256, [](const torch::Tensor& t) { return t; }, /*rounded=*/false);
}

TEST_CASE("gemm_avx512: operands with no unit stride (every other element of a wider matrix)") {
  if (!sg::has_avx512_gemm()) return;
  torch::manual_seed(5);
  const int64_t m = 29, n = 45, k = 300;
  const auto wide_a = torch::randn({m, 2 * k}), wide_b = torch::randn({2 * k, 2 * n});
  const auto a = wide_a.index({torch::indexing::Slice(), torch::indexing::Slice(0, 2 * k, 2)});      // (m, k)
  const auto b = wide_b.index({torch::indexing::Slice(0, 2 * k, 2), torch::indexing::Slice(1, 2 * n, 2)});  // (k, n)
  auto c = torch::empty({m, n});
  sg::gemm_avx512(m, n, k, {wide_a.data_ptr<float>(), 2 * k, 2}, {wide_b.data_ptr<float>() + 1, 2 * (2 * n), 2},
                  c.data_ptr<float>(), n, false);
  const auto expected = torch::mm(a.to(torch::kDouble), b.to(torch::kDouble));
  const auto scale = torch::mm(a.abs().to(torch::kDouble), b.abs().to(torch::kDouble)) + 1.0;
  CHECK(((c.to(torch::kDouble) - expected).abs() / scale).max().item<double>() < 1.2e-7 * 256 + 1e-6);
}

TEST_CASE("gemm_avx512: k = 0 gives zeros, or leaves c as it was when accumulating") {
  if (!sg::has_avx512_gemm()) return;
  auto c = torch::ones({4, 5});
  const float unused = 0.0f;
  sg::gemm_avx512(4, 5, 0, {&unused, 0, 1}, {&unused, 5, 1}, c.data_ptr<float>(), 5, /*accumulate=*/true);
  CHECK(torch::equal(c, torch::ones({4, 5})));
  sg::gemm_avx512(4, 5, 0, {&unused, 0, 1}, {&unused, 5, 1}, c.data_ptr<float>(), 5, /*accumulate=*/false);
  CHECK(torch::equal(c, torch::zeros({4, 5})));
}

TEST_CASE("gemm_avx512: the same product on one thread and on several") {
  if (!sg::has_avx512_gemm()) return;
  torch::manual_seed(4);
  const auto a = torch::randn({200, 300}), b = torch::randn({300, 150});
  const int previous = torch::get_num_threads();
  std::vector<torch::Tensor> results;
  for (int threads : {1, 2, 3}) {
    torch::set_num_threads(threads);
    auto c = torch::empty({200, 150});
    sg::gemm_avx512(200, 150, 300, {a.data_ptr<float>(), 300, 1}, {b.data_ptr<float>(), 150, 1}, c.data_ptr<float>(),
                    150, false);
    results.push_back(c);
  }
  torch::set_num_threads(previous);
  // Each element's sum runs in the same order whichever thread computes it.
  CHECK(torch::equal(results[0], results[1]));
  CHECK(torch::equal(results[0], results[2]));
}

/// The float64 product of a and b (k × n) rounded to bf16 first, as gemm_avx512_bf16 rounds its
/// operands (to nearest even; torch's own conversion, not the kernel's).
torch::Tensor bf16_reference(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::mm(a.to(torch::kBFloat16).to(torch::kDouble), b.to(torch::kBFloat16).to(torch::kDouble));
}

TEST_CASE("gemm_avx512_bf16: products of bf16-rounded operands against float64, on and off the tile, pair and block edges") {
  if (!sg::cpu_has_avx512_bf16_gemm()) {
    WARN("no AVX512-BF16 on this CPU: gemm_avx512_bf16 not tested (bf16 runs use oneDNN's products)");
    return;
  }
  torch::manual_seed(6);
  // m around the 12-row tile and the 120-row block, n around the 32-column tile and the 16-column
  // half panel, k odd and even around the 32-k packing step and the 512-k block. The operands are
  // rounded (the last check): the products differ from float32's by far more than the bound.
  check_products(sg::gemm_avx512_bf16,
                 {{1, 1, 1}, {12, 32, 512}, {13, 33, 513}, {11, 31, 511}, {121, 17, 5}, {7, 3100, 40},
                  {250, 64, 1100}, {3, 5, 33}, {240, 96, 1024}, {25, 47, 31}},
                 512, [](const torch::Tensor& t) { return t.to(torch::kBFloat16); }, /*rounded=*/true);
}

TEST_CASE("gemm_avx512_bf16: operands with no unit stride, rounding ties, subnormals and NaN as vcvtneps2bf16 treats them") {
  if (!sg::cpu_has_avx512_bf16_gemm()) return;
  torch::manual_seed(7);
  const int64_t m = 29, n = 45, k = 301;
  const auto wide_a = torch::randn({m, 2 * k}), wide_b = torch::randn({2 * k, 2 * n});
  const auto a = wide_a.index({torch::indexing::Slice(), torch::indexing::Slice(0, 2 * k, 2)});
  const auto b = wide_b.index({torch::indexing::Slice(0, 2 * k, 2), torch::indexing::Slice(1, 2 * n, 2)});
  auto c = torch::empty({m, n});
  sg::gemm_avx512_bf16(m, n, k, {wide_a.data_ptr<float>(), 2 * k, 2}, {wide_b.data_ptr<float>() + 1, 2 * (2 * n), 2},
                       c.data_ptr<float>(), n, false);
  const auto scale = torch::mm(a.abs().to(torch::kDouble), b.abs().to(torch::kDouble)) + 1.0;
  CHECK(((c.to(torch::kDouble) - bf16_reference(a, b)).abs() / scale).max().item<double>() < 1.2e-7 * 512 + 1e-6);
  // Single elements through every packing path (row-major, column-major, no unit stride): a tie
  // rounds to even, a subnormal counts as zero, a NaN stays NaN.
  const float tie_down = 1.0f + std::ldexp(1.0f, -8);              // halfway between 1 and 1 + 2^-7: to 1
  const float tie_up = 1.0f + 3.0f * std::ldexp(1.0f, -8);         // halfway between 1 + 2^-7 and 1 + 2^-6: up
  const float subnormal = std::ldexp(1.0f, -130);
  for (const int64_t stride : {int64_t{1}, int64_t{3}}) {
    INFO("stride " << stride);
    std::vector<float> left(3 * stride, 0.0f), right(3 * stride, 0.0f);
    left[0] = tie_down, left[stride] = tie_up, left[2 * stride] = 1.0f;
    right[0] = 1.0f, right[stride] = 1.0f, right[2 * stride] = subnormal;
    float out = -1.0f;
    // a 1 × 3 row (k along a row of `left`), b 3 × 1 (k down a column of `right`).
    sg::gemm_avx512_bf16(1, 1, 3, {left.data(), 3 * stride, stride}, {right.data(), stride, 1}, &out, 1, false);
    CHECK(out == 1.0f + (1.0f + std::ldexp(1.0f, -6)));
    // The same read transposed: a 3 × 1 column, b 1 × 3 row.
    float outer[9];
    sg::gemm_avx512_bf16(3, 3, 1, {left.data(), stride, 1}, {right.data(), 1, stride}, outer, 3, false);
    CHECK(outer[0] == 1.0f);
    CHECK(outer[3] == 1.0f + std::ldexp(1.0f, -6));
    CHECK(outer[2] == 0.0f);  // tie_down's 1 × the subnormal, flushed
    right[0] = std::nanf("");
    sg::gemm_avx512_bf16(1, 1, 3, {left.data(), 3 * stride, stride}, {right.data(), stride, 1}, &out, 1, false);
    CHECK(std::isnan(out));
  }
}

TEST_CASE("gemm_avx512_bf16: a bf16 left operand, row-major and transposed, odd depths, and a bf16 right operand refused") {
  if (!sg::cpu_has_avx512_bf16_gemm()) return;
  torch::manual_seed(9);
  for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1}, {13, 33, 31}, {121, 40, 1025}, {30, 7, 64}})
    for (bool transposed : {false, true}) {
      INFO("m " << m << " n " << n << " k " << k << (transposed ? " a transposed" : ""));
      const auto a = torch::randn({m, k}).to(torch::kBFloat16), b = torch::randn({k, n});
      // Stored with a wider row (stride k + 5, or m + 5 transposed), as the loss's bf16 E is.
      const auto storage = transposed ? torch::zeros({k, m + 5}, torch::kBFloat16) : torch::zeros({m, k + 5}, torch::kBFloat16);
      if (transposed) storage.narrow(1, 0, m).copy_(a.t()); else storage.narrow(1, 0, k).copy_(a);
      const auto* bits = reinterpret_cast<const uint16_t*>(storage.data_ptr<at::BFloat16>());
      const auto view = transposed ? sg::bf16_matrix(bits, 1, m + 5) : sg::bf16_matrix(bits, k + 5, 1);
      auto c = torch::empty({m, n});
      sg::gemm_avx512_bf16(m, n, k, view, {b.data_ptr<float>(), n, 1}, c.data_ptr<float>(), n, false);
      const auto expected = bf16_reference(a.to(torch::kFloat), b);
      const auto scale = torch::mm(a.abs().to(torch::kDouble), b.abs().to(torch::kDouble)) + 1.0;
      CHECK(((c.to(torch::kDouble) - expected).abs() / scale).max().item<double>() < 1.2e-7 * 512 + 1e-6);
    }
  const float unused = 0.0f;
  const uint16_t bits = 0;
  float out = 0.0f;
  CHECK_THROWS_AS(sg::gemm_avx512_bf16(1, 1, 1, {&unused, 1, 1}, sg::bf16_matrix(&bits, 1, 1), &out, 1, false),
                  std::invalid_argument);
  CHECK_THROWS_AS(sg::gemm_avx512(1, 1, 1, sg::bf16_matrix(&bits, 1, 1), {&unused, 1, 1}, &out, 1, false),
                  std::invalid_argument);
}

TEST_CASE("gemm_avx512_bf16: the same product on one thread and on several, and k = 0") {
  if (!sg::cpu_has_avx512_bf16_gemm()) return;
  torch::manual_seed(8);
  const auto a = torch::randn({200, 700}), b = torch::randn({700, 150});
  const int previous = torch::get_num_threads();
  std::vector<torch::Tensor> results;
  for (int threads : {1, 2, 3}) {
    torch::set_num_threads(threads);
    auto c = torch::empty({200, 150});
    sg::gemm_avx512_bf16(200, 150, 700, {a.data_ptr<float>(), 700, 1}, {b.data_ptr<float>(), 150, 1},
                         c.data_ptr<float>(), 150, false);
    results.push_back(c);
  }
  torch::set_num_threads(previous);
  CHECK(torch::equal(results[0], results[1]));
  CHECK(torch::equal(results[0], results[2]));
  auto c = torch::ones({4, 5});
  const float unused = 0.0f;
  sg::gemm_avx512_bf16(4, 5, 0, {&unused, 0, 1}, {&unused, 5, 1}, c.data_ptr<float>(), 5, /*accumulate=*/false);
  CHECK(torch::equal(c, torch::zeros({4, 5})));
}

TEST_CASE("lib/ is built with OpenMP: its at::parallel_for runs on torch's threads") {
  const int previous = torch::get_num_threads();
  torch::set_num_threads(2);
  const int64_t used = sg::parallel_for_threads();
  torch::set_num_threads(previous);
  // Without -fopenmp, at::parallel_for (a header template) runs serially in lib/'s code.
  CHECK(used == 2);
}
