// cpu_kernels.h — the CPU float32 fast paths of the loss: a packed right-hand GEMM operand (MKL's
// packed-GEMM API, found at run time in the torch library) and a row kernel for the shifted
// exponentials of a softmax (AVX-512, or AVX2 with FMA on CPUs without it). Each says whether it
// can run here; callers keep a portable path (torch::mm, ATen's elementwise operations) for when
// it cannot.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/io/loss_plan.h"

namespace sg {

/// Turns the fast paths below on or off for this process, so that the portable paths can be run
/// and compared on a machine that has both. On by default; SINKGATE_CPU_KERNELS=0 in the
/// environment starts the process with them off. The switches decide what runs where nobody named
/// a path; a path named explicitly (a loss plan that names its row kernel, loss.h) runs wherever
/// the CPU has it.
void enable_cpu_kernels(bool enabled);

/// Whether the fast paths are on (enable_cpu_kernels, SINKGATE_CPU_KERNELS).
bool cpu_kernels_enabled();

/// A right-hand GEMM operand op(B) (k × n, row-major storage) packed once and multiplied by many
/// left-hand matrices: c (m × n) = a (m × k) · op(B), float32, row-major, on torch's threads.
/// Packing is done by MKL's cblas_sgemm_pack, looked up in the loaded torch library; where that
/// is absent (a torch without MKL) available() is false and construction throws std::logic_error.
class PackedRightOperand {
 public:
  /// Whether MKL's packed-GEMM functions are present in this process and the fast paths are on.
  static bool available();
  /// Whether MKL's packed-GEMM functions are present in this process (the switches aside): the
  /// operand can be constructed.
  static bool present();

  /// b: row-major (k × n), or (n × k) read transposed when `transposed`, leading dimension ldb.
  /// max_rows: the largest m that multiply() will be given.
  PackedRightOperand(const float* b, int64_t ldb, bool transposed, int64_t max_rows, int64_t n, int64_t k);

  /// c (m × n, leading dimension ldc) = a (m × k, leading dimension lda) · op(B); m <= max_rows.
  void multiply(const float* a, int64_t lda, int64_t m, float* c, int64_t ldc) const;

 private:
  torch::Tensor packed_;  // MKL's opaque packed form
  int64_t max_rows_, n_, k_;
};

/// Caps the row kernel below at AVX2 (true) or lets it take AVX-512 where the CPU has it (false,
/// the default), so that the AVX2 kernel can be run and compared on an AVX-512 machine.
/// SINKGATE_CPU_KERNELS=avx2 in the environment starts the process capped.
void limit_cpu_kernels_to_avx2(bool limited);

/// Whether exp_shifted_rows runs here (the CPU has AVX-512F, or AVX2 with FMA).
bool has_exp_shifted_rows();

/// The row kernel the switches (SINKGATE_CPU_KERNELS, enable_cpu_kernels, the AVX2 cap) let run
/// here: avx512f, avx2 (with FMA), or portable (ATen's sweeps) where none does.
RowKernel switched_row_kernel();

/// Whether the CPU has the instruction set of the row kernel (portable: always), whatever the
/// switches say.
bool cpu_has_row_kernel(RowKernel kernel);

/// Every fused row kernel this CPU can run (what switched_row_kernel() gives uncapped, then capped
/// at AVX2), none when the fast paths are off: to test or time each of them.
std::vector<RowKernel> exp_shifted_rows_kernels();

/// The bf16 matrix instructions this CPU has, best first: "amx-bf16" (AMX tiles), "avx512-bf16"
/// (AVX512-BF16's vdpbf16ps). None where it has neither, or where SINKGATE_CPU_KERNELS=avx2 (or
/// limit_cpu_kernels_to_avx2) caps the CPU at AVX2: the bf16 training path then refuses to run, as
/// on a CPU without them, rather than emulate bf16 products at a fraction of float32's speed.
std::vector<std::string> cpu_bf16_features();

/// "" where cpu_bf16_features() has one; else the error's sentence naming what is missing.
std::string cpu_bf16_missing();

/// What /proc/cpuinfo calls this CPU ("model name"), or "unknown CPU".
std::string cpu_model_name();

/// For each row r of x (rows × n, row stride `stride`, float32), in place:
///   rowmax[r] = max_j x[r, j];  x[r, j] = exp(x[r, j] - rowmax[r]);  sums[r] = sum_j x[r, j]
/// Each row is read twice, the second time from cache; the exponential is accurate to about
/// 2 ulp of float32 (Cephes' polynomial), results below exp(-103) are 0; sums are accumulated in
/// float over blocks of 2,048 and in double across blocks. Rows are split over torch's threads.
/// `kernel` names the kernel (avx512f or avx2, run where cpu_has_row_kernel(kernel) whatever the
/// switches); none takes switched_row_kernel()'s. Throws std::logic_error where the kernel cannot
/// run (portable included: it is ATen's, not this function). Both instruction sets give the same exponentials and maxima; their sums differ only in
/// the order of the additions.
void exp_shifted_rows(float* x, int64_t rows, int64_t n, int64_t stride, float* rowmax, double* sums,
                      std::optional<RowKernel> kernel = std::nullopt);

/// Whether exp_shifted_rows_bf16 can run here: the CPU has AVX512-BF16 (the switches aside).
bool cpu_has_bf16_rows();

/// exp_shifted_rows on bf16 rows in place (a CPU bf16 run's logits, as the bf16 products give
/// them): each element read as float32 (exactly), its shifted exponential computed in float32 by
/// the AVX-512 kernel's arithmetic and written back rounded to bf16 (to nearest even, AVX512-BF16's
/// vcvtneps2bf16, which flushes subnormal results to zero); rowmax and sums as there, the sums over
/// the float32 exponentials before rounding. One pass less than widening the logits to float32 and
/// narrowing the exponentials back. Throws std::logic_error where !cpu_has_bf16_rows().
void exp_shifted_rows_bf16(uint16_t* x, int64_t rows, int64_t n, int64_t stride, float* rowmax, double* sums);

/// The same on float32 rows (x: rows × n, row stride `stride` floats): rowmax and sums as
/// exp_shifted_rows gives them, the exponentials written in bf16 (rounded as above) over the first
/// half of each row's bytes, in place: element j of row r at ((uint16_t*) (x + r * stride))[j]. The
/// CPU bf16 run's loss: float32 logits, bf16 exponentials for the gradient products, one pass.
/// Throws std::logic_error where !cpu_has_bf16_rows().
void exp_shifted_rows_to_bf16(float* x, int64_t rows, int64_t n, int64_t stride, float* rowmax, double* sums);

}  // namespace sg
