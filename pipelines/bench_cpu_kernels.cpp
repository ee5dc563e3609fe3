// bench_cpu_kernels.cpp — the CPU float32 loss's pieces on this machine, timed (never by ctest).
//
// Times, in interleaved rounds so that a drift of the machine's speed touches every candidate:
//   - the CPU's FMA peak in 256- and 512-bit registers, and the loss's three matrix products for
//     a chunk of up to 1,024 rows under torch::mm and under the loss's own AVX-512 product
//     (lib/kernels/cpu_gemm.h), as GFLOP/s: whether the BLAS runs as wide as the CPU can;
//   - the softmax row pass over ROWS x V float32 logits: the AVX-512 kernel, the AVX2 kernel
//     (lib/kernels/cpu_kernels.h; each where the CPU has it) and ATen's four sweeps (amax, sub_,
//     exp_, sum) that run where neither does;
//   - the whole loss (forward and gradients, lib/kernels/loss.h) under every plan that
//     lib/kernels/loss_tuning.h measures for that shape, as a ratio to the reference plan's time in
//     the same round; with the section `bf16`, the plans a CPU bf16 run measures, under autocast.
//   Where the CPU has AVX512-BF16, the products also under torch::mm in bf16 (oneDNN) and the
//   loss's own bf16 product (gemm_avx512_bf16), and the FMA peak's bf16 counterpart (vdpbf16ps).
// Prints the CPU model and the kernels this machine runs first. Build: ninja -C build
// bench_cpu_kernels. Run (V = 50,257 and the rows and width of tier cpu by default):
//   build/bin/bench_cpu_kernels                       # 2,048 x 256 x 50,257, 5 rounds
//   build/bin/bench_cpu_kernels 1024 768 50257 3      # rows width vocab rounds
//   build/bin/bench_cpu_kernels 2048 256 50257 3 products   # one section: products, rows, loss or bf16
// GCC 12 warns inside its own avx512fintrin.h (the intrinsics' deliberately undefined
// pass-through operands) wherever they are inlined; the warnings say nothing about this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <immintrin.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "lib/kernels/cpu_gemm.h"
#include "lib/kernels/cpu_kernels.h"
#include "lib/kernels/loss.h"
#include "lib/kernels/loss_tuning.h"
#include "lib/model/runtime.h"

namespace {

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// FLOP/s of independent FMA chains in 512-bit (`wide`) or 256-bit registers on every thread: the
/// CPU's float32 peak for code of that width (how many FMAs a cycle it retires, at its clock).
__attribute__((target("avx512f"))) double fma_chains_512(int64_t iterations) {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_set1_ps(1.0f);
  const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_fmadd_ps(acc[k], b, c);
  float sum = 0;
  for (auto& a : acc) sum += _mm512_reduce_add_ps(a);
  return sum;
}

__attribute__((target("avx2,fma"))) double fma_chains_256(int64_t iterations) {
  __m256 acc[12];
  for (auto& a : acc) a = _mm256_set1_ps(1.0f);
  const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) acc[k] = _mm256_fmadd_ps(acc[k], b, c);
  __m256 total = acc[0];
  for (int k = 1; k < 12; ++k) total = _mm256_add_ps(total, acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, total);
  return lanes[0];
}

/// The same with vdpbf16ps: 32 multiply-adds of bf16 pairs per instruction.
__attribute__((target("avx512f,avx512bf16"))) double dpbf16_chains(int64_t iterations) {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_set1_ps(1.0f);
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], b, b);
  float sum = 0;
  for (auto& a : acc) sum += _mm512_reduce_add_ps(a);
  return sum;
}

/// The best of five runs (the first ones also wake the threads and raise the clock); `bf16`: the
/// vdpbf16ps chains (FLOPs of their float32 multiply-adds).
double fma_peak(bool wide, bool bf16 = false) {
  const int64_t iterations = 10000000, threads = at::get_num_threads();
  std::vector<double> sink(static_cast<size_t>(threads));
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        sink[static_cast<size_t>(t)] = bf16   ? dpbf16_chains(iterations)
                                       : wide ? fma_chains_512(iterations)
                                              : fma_chains_256(iterations);
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(threads) * iterations * 12 * (bf16 ? 32 : wide ? 16 : 8) * 2 / seconds);
  }
  return best;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2048, width = argc > 2 ? std::atoll(argv[2]) : 256;
  const int64_t vocab = argc > 3 ? std::atoll(argv[3]) : 50257;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  const std::string only = argc > 5 ? argv[5] : "";  // products, rows, loss or bf16: that section alone
  if (rows < 1 || width < 1 || vocab < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: bench_cpu_kernels [ROWS WIDTH VOCAB ROUNDS [products|rows|loss|bf16]]\n");
    return 2;
  }
  sg::tune_allocator();  // the heap as sg-train has it: buffers reused, not faulted in afresh per chunk
  std::printf("# %s; %d threads; row kernels:", sg::cpu_model_name().c_str(), at::get_num_threads());
  const auto kernels = sg::exp_shifted_rows_kernels();
  for (const auto k : kernels) std::printf(" %s", sg::row_kernel_name(k));
  std::printf("%s; MKL packed GEMM %s\n", kernels.empty() ? " none" : "",
              sg::PackedRightOperand::available() ? "present" : "absent");

  // The loss's three products for one chunk of up to 1,024 rows, as GFLOP/s: torch::mm (MKL as
  // it runs here) against gemm_avx512 (lib/kernels/cpu_gemm.h), with the largest difference.
  if (only.empty() || only == "products") {
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      std::printf("FMA peak on %d threads: %.1f GFLOP/s in 256-bit registers", at::get_num_threads(), fma_peak(false) / 1e9);
      if (__builtin_cpu_supports("avx512f")) std::printf(", %.1f in 512-bit", fma_peak(true) / 1e9);
      if (sg::cpu_has_avx512_bf16_gemm()) std::printf(", %.1f in vdpbf16ps", fma_peak(true, true) / 1e9);
      std::printf("\n");
    }
    torch::manual_seed(0);
    const int64_t n = std::min<int64_t>(rows, 1024);
    const auto h = torch::randn({n, width}), w = torch::randn({vocab, width}) * 0.02;
    const auto e = torch::rand({n, vocab}), hs = torch::randn({n, width});
    struct Product {
      const char* name;
      int64_t m, n, k;
      std::function<torch::Tensor()> reference;
      std::function<void(torch::Tensor&)> own;
      std::function<torch::Tensor()> reference_bf16;       // torch::mm on bf16 operands (oneDNN)
      std::function<void(torch::Tensor&)> own_bf16;       // gemm_avx512_bf16
    };
    const auto h_b = h.to(torch::kBFloat16), w_b = w.to(torch::kBFloat16), e_b = e.to(torch::kBFloat16),
               hs_b = hs.to(torch::kBFloat16);
    std::vector<Product> products{
        {"logits h Wt", n, vocab, width, [&] { return torch::mm(h, w.t()); },
         [&](torch::Tensor& c) {
           sg::gemm_avx512(n, vocab, width, {h.data_ptr<float>(), width, 1}, {w.data_ptr<float>(), 1, width},
                           c.data_ptr<float>(), vocab, false);
         },
         [&] { return torch::mm(h_b, w_b.t()); },
         [&](torch::Tensor& c) {
           sg::gemm_avx512_bf16(n, vocab, width, {h.data_ptr<float>(), width, 1}, {w.data_ptr<float>(), 1, width},
                                c.data_ptr<float>(), vocab, false);
         }},
        {"E W", n, width, vocab, [&] { return torch::mm(e, w); },
         [&](torch::Tensor& c) {
           sg::gemm_avx512(n, width, vocab, {e.data_ptr<float>(), vocab, 1}, {w.data_ptr<float>(), width, 1},
                           c.data_ptr<float>(), width, false);
         },
         [&] { return torch::mm(e_b, w_b); },
         [&](torch::Tensor& c) {
           sg::gemm_avx512_bf16(n, width, vocab, {e.data_ptr<float>(), vocab, 1}, {w.data_ptr<float>(), width, 1},
                                c.data_ptr<float>(), width, false);
         }},
        {"Et hs", vocab, width, n, [&] { return torch::mm(e.t(), hs); },
         [&](torch::Tensor& c) {
           sg::gemm_avx512(vocab, width, n, {e.data_ptr<float>(), 1, vocab}, {hs.data_ptr<float>(), width, 1},
                           c.data_ptr<float>(), width, false);
         },
         [&] { return torch::mm(e_b.t(), hs_b); },
         [&](torch::Tensor& c) {
           sg::gemm_avx512_bf16(vocab, width, n, {e.data_ptr<float>(), 1, vocab}, {hs.data_ptr<float>(), width, 1},
                                c.data_ptr<float>(), width, false);
         }},
    };
    std::printf("the loss's products, %lld-row chunk (GFLOP/s, median of %d rounds):\n", static_cast<long long>(n), rounds);
    for (auto& p : products) {
      const double flop = 2.0 * p.m * p.n * p.k;
      std::vector<double> mm, own;
      torch::Tensor expected, got = torch::empty({p.m, p.n});
      for (int round = 0; round <= rounds; ++round) {
        const double t_mm = seconds_of([&] { expected = p.reference(); });
        const double t_own = sg::has_avx512_gemm() ? seconds_of([&] { p.own(got); }) : 0.0;
        if (round > 0) mm.push_back(t_mm), own.push_back(t_own);
      }
      if (sg::has_avx512_gemm())
        std::printf("  %-12s torch::mm %6.1f  gemm_avx512 %6.1f  (max |difference| %.2e)", p.name, flop / median(mm) / 1e9,
                    flop / median(own) / 1e9, (got - expected).abs().max().item<double>());
      else
        std::printf("  %-12s torch::mm %6.1f  gemm_avx512 absent", p.name, flop / median(mm) / 1e9);
      if (sg::cpu_has_avx512_bf16_gemm()) {  // bf16: oneDNN's products against the loss's own
        std::vector<double> mm_b, own_b;
        torch::Tensor expected_b, got_b = torch::empty({p.m, p.n});
        for (int round = 0; round <= rounds; ++round) {
          const double t_mm = seconds_of([&] { expected_b = p.reference_bf16(); });
          const double t_own = seconds_of([&] { p.own_bf16(got_b); });
          if (round > 0) mm_b.push_back(t_mm), own_b.push_back(t_own);
        }
        std::printf("; bf16: torch::mm %6.1f  gemm_avx512_bf16 %6.1f", flop / median(mm_b) / 1e9, flop / median(own_b) / 1e9);
      }
      std::printf("\n");
    }
  }

  if (only == "products") return 0;

  // The row pass, on fresh copies of the same logits (the copy is not timed).
  if (only.empty() || only == "rows") {
  torch::manual_seed(0);
  const auto logits = torch::randn({rows, vocab}) * 3;
  auto x = torch::empty_like(logits);
  std::vector<float> rowmax(rows);
  std::vector<double> sums(rows);
  std::vector<std::string> passes;  // the row kernels by name, then ATen's sweeps
  for (const auto k : kernels) passes.emplace_back(sg::row_kernel_name(k));
  passes.push_back("aten");
  std::vector<std::vector<double>> pass_times(passes.size());
  for (int round = 0; round <= rounds; ++round)  // round 0: a warm-up, not kept
    for (size_t p = 0; p < passes.size(); ++p) {
      x.copy_(logits);
      const double t = seconds_of([&] {
        if (passes[p] == "aten") {
          const auto m = x.amax(1, /*keepdim=*/true);
          x.sub_(m).exp_();
          const auto s = x.sum(1);
        } else {
          sg::limit_cpu_kernels_to_avx2(passes[p] == "avx2");
          sg::exp_shifted_rows(x.data_ptr<float>(), rows, vocab, vocab, rowmax.data(), sums.data());
        }
      });
      if (round > 0) pass_times[p].push_back(t);
    }
  sg::limit_cpu_kernels_to_avx2(false);
  std::printf("row pass over %lld x %lld logits (median of %d rounds):", static_cast<long long>(rows),
              static_cast<long long>(vocab), rounds);
  for (size_t p = 0; p < passes.size(); ++p)
    std::printf("  %s %.1f ms", passes[p].c_str(), median(pass_times[p]) * 1e3);
  std::printf("\n");
  }
  if (only == "rows") return 0;

  // The whole loss under every plan, as a ratio to the reference plan in the same round (section
  // bf16: a bf16 run's plans, under CPU autocast as a bf16 run calls the loss).
  const bool bf16 = only == "bf16";
  if (bf16 && sg::cpu_bf16_features().empty()) {
    std::printf("no bf16 products on this CPU: %s\n", sg::cpu_bf16_missing().c_str());
    return 0;
  }
  if (bf16) {
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCPU, true);
  }
  const auto plans = sg::loss_plan_candidates(rows, vocab, bf16);
  const auto hidden = torch::randn({rows, width}).requires_grad_(true);
  const auto weight = (torch::randn({vocab, width}) * 0.02).requires_grad_(true);
  const auto targets = torch::randint(vocab, {rows}, torch::kLong);
  std::vector<std::vector<double>> times(plans.size()), ratios(plans.size());
  for (int round = 0; round <= rounds; ++round) {
    std::vector<double> taken(plans.size());
    for (size_t k = 0; k < plans.size(); ++k) {
      const size_t p = (k + static_cast<size_t>(round)) % plans.size();  // rotated, round by round
      taken[p] = seconds_of([&] { sg::linear_cross_entropy(hidden, weight, targets, plans[p]); });
    }
    if (round == 0) continue;
    for (size_t p = 0; p < plans.size(); ++p) {
      times[p].push_back(taken[p]);
      ratios[p].push_back(taken[p] / taken[0]);
    }
  }
  std::printf("%sloss of %lld x %lld x %lld, forward and gradients (median of %d rounds; ratio: to the reference "
              "in the same round, min-max):\n",
              bf16 ? "bf16 run's " : "", static_cast<long long>(rows), static_cast<long long>(width),
              static_cast<long long>(vocab), rounds);
  for (size_t p = 0; p < plans.size(); ++p)
    std::printf("  %5lld rows %-10s %8.1f ms  %.3f (%.3f-%.3f)%s\n", static_cast<long long>(plans[p].chunk_rows),
                sg::loss_products_name(plans[p].products), median(times[p]) * 1e3, median(ratios[p]),
                *std::min_element(ratios[p].begin(), ratios[p].end()),
                *std::max_element(ratios[p].begin(), ratios[p].end()), p == 0 ? "  (reference)" : "");
  const auto chosen = sg::loss_plan(rows, width, vocab, bf16);
  std::printf("sg-train's plan for this shape here: %lld rows %s\n", static_cast<long long>(chosen.chunk_rows),
              sg::loss_products_name(chosen.products));
  return 0;
}
