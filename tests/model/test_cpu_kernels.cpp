// Tests of lib/model/cpu_kernels against float64 references: the AVX-512 shifted exponentials and
// MKL's packed GEMM. Each runs where the machine has the feature and says so where it does not.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "lib/model/cpu_kernels.h"

TEST_CASE("exp_shifted_rows: max, exp(x - max) and sums against float64") {
  if (!sg::has_exp_shifted_rows()) {
    WARN("no AVX-512F on this CPU: exp_shifted_rows not tested (the loss uses ATen's sweeps)");
    return;
  }
  torch::manual_seed(1);
  // Widths around the 64-wide main loop and the 2,048 summation blocks; logits from tame to
  // far apart (tails that underflow to zero and through the subnormals).
  for (int64_t n : {1, 15, 63, 64, 65, 2047, 2049, 50257}) {
    for (double spread : {1.0, 8.0, 40.0}) {
      INFO("width " << n << ", spread " << spread);
      const int64_t rows = 5, stride = n + 3;  // a row stride wider than the row
      auto x = (torch::randn({rows, stride}) * spread).contiguous();
      x.index_put_({2, n - 1}, 100.0);  // the maximum at the very end of a row (the tail loop)
      const auto reference_in = x.to(torch::kDouble).narrow(1, 0, n);
      std::vector<float> rowmax(rows);
      std::vector<double> sums(rows);
      sg::exp_shifted_rows(x.data_ptr<float>(), rows, n, stride, rowmax.data(), sums.data());
      const auto max_ref = reference_in.amax(1);
      const auto shifted = reference_in - max_ref.unsqueeze(1);  // (rows, n), <= 0
      const auto exp_ref = shifted.exp();
      const auto got = x.narrow(1, 0, n).to(torch::kDouble);
      // float32 input: x - max is rounded to half an ulp of |x - max| before the exponential.
      const auto bound = exp_ref * (3e-7 * (1.0 + shifted.abs())) + 1e-44;
      CHECK(((got - exp_ref).abs() - bound).max().item<double>() <= 0.0);
      CHECK((got.narrow(1, 0, n) >= 0).all().item<bool>());
      for (int64_t r = 0; r < rows; ++r) {
        CHECK(rowmax[r] == static_cast<float>(max_ref[r].item<double>()));
        const double sum_ref = exp_ref[r].sum().item<double>();
        CHECK(std::abs(sums[r] - sum_ref) <= 1e-6 * sum_ref);
      }
      // The padding beyond each row is left alone.
      if (stride > n) CHECK(x.narrow(1, n, stride - n).isfinite().all().item<bool>());
    }
  }
}

TEST_CASE("exp_shifted_rows: a NaN anywhere in a row makes its sum NaN, other rows are untouched") {
  if (!sg::has_exp_shifted_rows()) {
    WARN("no AVX-512F on this CPU: exp_shifted_rows not tested");
    return;
  }
  const int64_t n = 300;
  for (int64_t at : {int64_t{0}, int64_t{17}, int64_t{64}, n - 1}) {  // main loop and tail
    INFO("NaN at " << at);
    auto x = torch::randn({2, n});
    x.index_put_({0, at}, std::nan(""));
    std::vector<float> rowmax(2);
    std::vector<double> sums(2);
    sg::exp_shifted_rows(x.data_ptr<float>(), 2, n, n, rowmax.data(), sums.data());
    CHECK(std::isnan(sums[0]));
    CHECK(std::isfinite(sums[1]));
  }
}

TEST_CASE("PackedRightOperand: a (m x k) times op(B) against float64, both orientations, m <= max_rows") {
  if (!sg::PackedRightOperand::available()) {
    WARN("no MKL packed GEMM in this torch: PackedRightOperand not tested (the loss uses torch::mm)");
    return;
  }
  torch::manual_seed(2);
  const int64_t k = 37, n = 301, max_rows = 19;
  for (bool transposed : {false, true}) {
    INFO("transposed " << transposed);
    const auto b = transposed ? torch::randn({n, k}) : torch::randn({k, n});  // row-major storage
    const auto op_b = transposed ? b.t() : b;                                 // (k, n)
    sg::PackedRightOperand packed(b.data_ptr<float>(), transposed ? k : n, transposed, max_rows, n, k);
    for (int64_t m : {int64_t{1}, int64_t{7}, max_rows}) {
      const auto a = torch::randn({m, k});
      auto c = torch::full({m, n}, std::nan(""));
      packed.multiply(a.data_ptr<float>(), k, m, c.data_ptr<float>(), n);
      const auto ref = torch::matmul(a.to(torch::kDouble), op_b.to(torch::kDouble));
      CHECK((c.to(torch::kDouble) - ref).abs().max().item<double>() < 1e-4);
    }
    auto too_many = torch::empty({max_rows + 1, k});
    auto out = torch::empty({max_rows + 1, n});
    CHECK_THROWS(packed.multiply(too_many.data_ptr<float>(), k, max_rows + 1, out.data_ptr<float>(), n));
  }
}

TEST_CASE("enable_cpu_kernels(false) turns both fast paths off") {
  sg::enable_cpu_kernels(false);
  CHECK_FALSE(sg::has_exp_shifted_rows());
  CHECK_FALSE(sg::PackedRightOperand::available());
  sg::enable_cpu_kernels(true);
}
