// Tests of lib/kernels/cpu_kernels against float64 references: the shifted exponentials (AVX-512 and AVX2) and
// MKL's packed GEMM. Each runs where the machine has the feature and says so where it does not.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "lib/kernels/cpu_kernels.h"

TEST_CASE("exp_shifted_rows: max, exp(x - max) and sums against float64, each instruction set") {
  const auto kernels = sg::exp_shifted_rows_kernels();
  if (kernels.empty()) {
    WARN("neither AVX-512F nor AVX2 with FMA on this CPU: exp_shifted_rows not tested (the loss uses ATen's sweeps)");
    return;
  }
  if (kernels.size() == 1) WARN("only the " << sg::row_kernel_name(kernels[0]) << " row kernel runs on this CPU");
  for (const auto& kernel : kernels) {
    sg::limit_cpu_kernels_to_avx2(kernel == sg::RowKernel::avx2);
    REQUIRE(sg::switched_row_kernel() == kernel);
    torch::manual_seed(1);
    // Widths around the 64-wide main loop and the 2,048 summation blocks; logits from tame to
    // far apart (tails that underflow to zero and through the subnormals).
    for (int64_t n : {1, 15, 63, 64, 65, 2047, 2049, 50257}) {
      for (double spread : {1.0, 8.0, 40.0}) {
        INFO(sg::row_kernel_name(kernel) << ", width " << n << ", spread " << spread);
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
  sg::limit_cpu_kernels_to_avx2(false);
}

TEST_CASE("exp_shifted_rows_bf16: max, exp(x - max) rounded to bf16 and sums against float64 on bf16 rows") {
  if (!sg::cpu_has_bf16_rows()) {
    WARN("no AVX512-BF16 on this CPU: exp_shifted_rows_bf16 not tested (no bf16 run trains here)");
    return;
  }
  torch::manual_seed(2);
  for (int64_t n : {1, 15, 63, 64, 65, 2047, 2049, 50257}) {
    for (double spread : {1.0, 8.0, 40.0}) {
      INFO("width " << n << ", spread " << spread);
      const int64_t rows = 5, stride = n + 3;
      auto x = (torch::randn({rows, stride}) * spread).to(torch::kBFloat16).contiguous();
      x.index_put_({2, n - 1}, 100.0);  // the maximum at the very end of a row (the tail loop)
      const auto reference_in = x.to(torch::kDouble).narrow(1, 0, n);  // the bf16 values, exactly
      std::vector<float> rowmax(rows);
      std::vector<double> sums(rows);
      sg::exp_shifted_rows_bf16(reinterpret_cast<uint16_t*>(x.data_ptr<at::BFloat16>()), rows, n, stride, rowmax.data(),
                                sums.data());
      const auto max_ref = reference_in.amax(1);
      const auto shifted = reference_in - max_ref.unsqueeze(1);
      const auto exp_ref = shifted.exp();
      const auto got = x.narrow(1, 0, n).to(torch::kDouble);
      // Rounded to bf16 (half of 2^-7 relative), after float32's own error; results below bf16's
      // smallest normal (1.2e-38) may be flushed to zero.
      const auto bound = exp_ref * (std::ldexp(1.0, -8) + 3e-7 * (1.0 + shifted.abs())) + 1.2e-38;
      CHECK(((got - exp_ref).abs() - bound).max().item<double>() <= 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        CHECK(rowmax[r] == static_cast<float>(max_ref[r].item<double>()));
        const double sum_ref = exp_ref[r].sum().item<double>();
        CHECK(std::abs(sums[r] - sum_ref) <= 1e-6 * sum_ref);  // summed before the rounding
      }
      if (stride > n) CHECK(x.narrow(1, n, stride - n).to(torch::kFloat).isfinite().all().item<bool>());
    }
  }
}

TEST_CASE("exp_shifted_rows_to_bf16: float32 rows in, exp(x - max) in bf16 over each row's first half, against float64") {
  if (!sg::cpu_has_bf16_rows()) {
    WARN("no AVX512-BF16 on this CPU: exp_shifted_rows_to_bf16 not tested (no bf16 run trains here)");
    return;
  }
  torch::manual_seed(12);
  for (int64_t n : {1, 15, 63, 64, 65, 2047, 2049, 50257}) {
    for (double spread : {1.0, 8.0, 40.0}) {
      INFO("width " << n << ", spread " << spread);
      const int64_t rows = 5, stride = n + 3;
      auto x = (torch::randn({rows, stride}) * spread).contiguous();
      x.index_put_({2, n - 1}, 100.0);  // the maximum at the very end of a row (the tail loop)
      const auto reference_in = x.to(torch::kDouble).narrow(1, 0, n);
      std::vector<float> rowmax(rows);
      std::vector<double> sums(rows);
      sg::exp_shifted_rows_to_bf16(x.data_ptr<float>(), rows, n, stride, rowmax.data(), sums.data());
      const auto max_ref = reference_in.amax(1);
      const auto shifted = reference_in - max_ref.unsqueeze(1);
      const auto exp_ref = shifted.exp();
      // Row r's bf16 exponentials: the first n of its 2 * stride halves.
      const auto halves = torch::from_blob(x.data_ptr<float>(), {rows, 2 * stride}, torch::kBFloat16);
      const auto got = halves.narrow(1, 0, n).to(torch::kDouble);
      const auto bound = exp_ref * (std::ldexp(1.0, -8) + 3e-7 * (1.0 + shifted.abs())) + 1.2e-38;
      CHECK(((got - exp_ref).abs() - bound).max().item<double>() <= 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        CHECK(rowmax[r] == static_cast<float>(max_ref[r].item<double>()));
        const double sum_ref = exp_ref[r].sum().item<double>();
        CHECK(std::abs(sums[r] - sum_ref) <= 1e-6 * sum_ref);
      }
    }
  }
}

TEST_CASE("exp_shifted_rows: the AVX2 and AVX-512 kernels give the same exponentials, subnormals included") {
  const auto kernels = sg::exp_shifted_rows_kernels();
  if (kernels.size() < 2) {
    WARN("this CPU does not run both row kernels: not compared");
    return;
  }
  torch::manual_seed(2);
  const int64_t rows = 7, n = 4099;
  // Differences from the maximum reaching past -103 (zero), through the subnormals (-87.3 .. -103).
  auto x = torch::rand({rows, n}) * -110.0;
  x.index_put_({torch::indexing::Slice(), 0}, 0.0);
  auto wide = x.clone(), narrow = x.clone();
  std::vector<float> max_wide(rows), max_narrow(rows);
  std::vector<double> sum_wide(rows), sum_narrow(rows);
  sg::exp_shifted_rows(wide.data_ptr<float>(), rows, n, n, max_wide.data(), sum_wide.data());
  sg::limit_cpu_kernels_to_avx2(true);
  sg::exp_shifted_rows(narrow.data_ptr<float>(), rows, n, n, max_narrow.data(), sum_narrow.data());
  sg::limit_cpu_kernels_to_avx2(false);
  INFO("elements that differ: " << (wide != narrow).sum().item<int64_t>());
  CHECK(torch::equal(wide, narrow));
  CHECK(((narrow > 0) & (narrow < 1.1754944e-38)).any().item<bool>());  // subnormals were made
  CHECK((narrow == 0).any().item<bool>());
  CHECK(max_wide == max_narrow);
  for (int64_t r = 0; r < rows; ++r) CHECK(std::abs(sum_wide[r] - sum_narrow[r]) <= 1e-6 * sum_wide[r]);
}

TEST_CASE("exp_shifted_rows: a NaN anywhere in a row makes its sum NaN, other rows are untouched") {
  const auto kernels = sg::exp_shifted_rows_kernels();
  if (kernels.empty()) {
    WARN("no row kernel on this CPU: exp_shifted_rows not tested");
    return;
  }
  const int64_t n = 300;
  for (const auto& kernel : kernels) {
    sg::limit_cpu_kernels_to_avx2(kernel == sg::RowKernel::avx2);
    for (int64_t at : {int64_t{0}, int64_t{17}, int64_t{64}, n - 1}) {  // main loops and tails
      INFO(sg::row_kernel_name(kernel) << ", NaN at " << at);
      auto x = torch::randn({2, n});
      x.index_put_({0, at}, std::nan(""));
      std::vector<float> rowmax(2);
      std::vector<double> sums(2);
      sg::exp_shifted_rows(x.data_ptr<float>(), 2, n, n, rowmax.data(), sums.data());
      CHECK(std::isnan(sums[0]));
      CHECK(std::isfinite(sums[1]));
    }
  }
  sg::limit_cpu_kernels_to_avx2(false);
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
