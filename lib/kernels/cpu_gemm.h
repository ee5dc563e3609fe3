// cpu_gemm.h — the loss's own matrix products in AVX-512 (float32, and bf16 operands summed in
// float32), for CPUs where the BLAS in the torch library runs narrower kernels than the CPU can
// (MKL takes 256-bit paths on AMD CPUs, while Zen 5 executes 512-bit FMAs at full width: twice
// the rate). A BLIS-style blocked product
// (packed A and B blocks, a 12 × 32 register tile) split over torch's threads; and the same
// product on bf16-rounded operands with AVX512-BF16's vdpbf16ps, for CPU bf16 runs. Whether it beats
// the BLAS on a machine is measured, not assumed (loss_tuning.h): on a CPU where MKL runs its
// AVX-512 kernels it is not expected to.
//
// Not here: the loss (loss.h), MKL's packed GEMM and the softmax rows (cpu_kernels.h).
#pragma once
#include <cstdint>

namespace sg {

/// A float32 matrix read through strides: element (i, j) at data[i * row_stride + j * column_stride].
/// A row-major (r × c) matrix is {data, c, 1}; its transpose {data, 1, c}. With `bf16` set (and
/// data null) a bf16 matrix instead, element (i, j) at bf16[i * row_stride + j * column_stride]:
/// gemm_avx512_bf16 takes its left operand so (bf16_matrix).
struct StridedMatrix {
  const float* data;
  int64_t row_stride, column_stride;
  const uint16_t* bf16 = nullptr;
};

/// A bf16 matrix (bf16 bits, as c10::BFloat16 holds them) read through strides.
inline StridedMatrix bf16_matrix(const uint16_t* data, int64_t row_stride, int64_t column_stride) {
  return {nullptr, row_stride, column_stride, data};
}

/// Whether the loss takes gemm_avx512 where nobody named a path: the CPU has AVX-512F and the
/// CPU fast paths are on (cpu_kernels.h's enable_cpu_kernels, SINKGATE_CPU_KERNELS).
bool has_avx512_gemm();

/// Whether gemm_avx512 can run here: the CPU has AVX-512F (the switches aside).
bool cpu_has_avx512_gemm();

/// c (m × n, row-major, row stride ldc) = a (m × k) · b (k × n), or c += a · b when
/// `accumulate`; float32 products summed in float32 (in blocks of k, as BLAS does). Runs on
/// torch's threads (at::parallel_for). c must not overlap a or b. Throws std::logic_error
/// where !cpu_has_avx512_gemm().
void gemm_avx512(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c, int64_t ldc,
                 bool accumulate);

/// Whether the loss takes gemm_avx512_bf16 where nobody named a path: the CPU has AVX512-BF16, the
/// fast paths are on and not capped at AVX2 (cpu_kernels.h's cpu_bf16_features).
bool has_avx512_bf16_gemm();

/// Whether gemm_avx512_bf16 can run here: the CPU has AVX-512F and AVX512-BF16 (the switches aside).
bool cpu_has_avx512_bf16_gemm();

/// gemm_avx512 in bf16: c (m × n, float32) = [c +] bf16(a) · bf16(b), a and b float32 rounded to
/// bf16 (to nearest even, subnormals to zero: vcvtneps2bf16) as they are packed, their products
/// summed in float32 by vdpbf16ps two k at a time (in blocks of 512 k). `a` may be a bf16 matrix
/// (bf16_matrix), read as it is. The CPU bf16 run's loss products: float32 logits, where oneDNN's
/// bf16 products round them to bf16. Throws std::logic_error where !cpu_has_avx512_bf16_gemm(),
/// and std::invalid_argument for a bf16 `b`.
void gemm_avx512_bf16(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c, int64_t ldc,
                      bool accumulate);

}  // namespace sg
