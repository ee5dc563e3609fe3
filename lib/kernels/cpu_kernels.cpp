// cpu_kernels.cpp — MKL's packed GEMM (looked up at run time) and the AVX-512 and AVX2 shifted-exponential rows.
#include "lib/kernels/cpu_kernels.h"

// GCC 12 warns inside its own avx512fintrin.h (the intrinsics' deliberately undefined
// pass-through operands) wherever they are inlined; the warnings say nothing about this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <dlfcn.h>
#include <immintrin.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <stdexcept>
#include <vector>

#include "lib/base/environment.h"

namespace sg {
namespace {

// SINKGATE_CPU_KERNELS=0 in the environment starts with the fast paths off (to compare, or to rule
// them out when something looks wrong); SINKGATE_CPU_KERNELS=avx2 with them capped at AVX2. Read on
// first use (a warning about the old name SG_CPU_KERNELS must not run before main).
std::atomic<bool>& kernels_enabled() {
  static std::atomic<bool> enabled{[] {
    const char* value = sinkgate_env("CPU_KERNELS");
    return !(value && std::string(value) == "0");
  }()};
  return enabled;
}

std::atomic<bool>& capped_at_avx2() {
  static std::atomic<bool> capped{[] {
    const char* value = sinkgate_env("CPU_KERNELS");
    return value && std::string(value) == "avx2";
  }()};
  return capped;
}

// Function-local statics: __builtin_cpu_supports is not to be called before main without
// __builtin_cpu_init.
bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

RowKernel row_kernel() {
  if (!kernels_enabled()) return RowKernel::portable;
  if (cpu_has_avx512() && !capped_at_avx2()) return RowKernel::avx512f;
  return cpu_has_avx2() ? RowKernel::avx2 : RowKernel::portable;
}

// MKL's CBLAS packed-GEMM interface (LP64: MKL_INT is int; the enums are C enums).
enum : int { kRowMajor = 101, kNoTrans = 111, kTrans = 112, kPacked = 151, kBMatrix = 162 };
using PackFunction = void (*)(int layout, int identifier, int trans, int m, int n, int k, float alpha, const float* src,
                              int ld, float* dest);
using PackSizeFunction = size_t (*)(int identifier, int m, int n, int k);
using ComputeFunction = void (*)(int layout, int transa, int transb, int m, int n, int k, const float* a, int lda,
                                 const float* b, int ldb, float beta, float* c, int ldc);

struct Mkl {
  PackFunction pack = nullptr;
  PackSizeFunction pack_size = nullptr;
  ComputeFunction compute = nullptr;
  bool found() const { return pack && pack_size && compute; }
};

const Mkl& mkl() {
  static const Mkl functions = [] {
    Mkl f;
    f.pack = reinterpret_cast<PackFunction>(dlsym(RTLD_DEFAULT, "cblas_sgemm_pack"));
    f.pack_size = reinterpret_cast<PackSizeFunction>(dlsym(RTLD_DEFAULT, "cblas_sgemm_pack_get_size"));
    f.compute = reinterpret_cast<ComputeFunction>(dlsym(RTLD_DEFAULT, "cblas_sgemm_compute"));
    return f;
  }();
  return functions;
}

int as_int(int64_t value) {
  if (value < 0 || value > INT_MAX) throw std::logic_error("PackedRightOperand: dimension out of MKL's int range");
  return static_cast<int>(value);
}

// exp(v - shift) for v <= shift: 2^k p(r), v - shift = k ln2 + r, |r| <= ln2 / 2, ln2 in two
// parts and Cephes' expf polynomial; scalef gives 2^k exactly, down to zero for k < -149.
__attribute__((target("avx512f"), always_inline)) inline __m512 exp_shifted(__m512 v, __m512 shift) {
  // max returns its second operand when either is NaN: a NaN logit stays NaN (and so does the sum).
  const __m512 t = _mm512_max_ps(_mm512_set1_ps(-103.0f), _mm512_sub_ps(v, shift));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), t);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, k);
}

__attribute__((target("avx512f"))) double exp_shifted_row(float* x, int64_t n, float* rowmax) {
  const int64_t wide = n / 64 * 64;
  __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;  // four chains: loads, not latency, bound
  for (int64_t i = 0; i < wide; i += 64) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
    m2 = _mm512_max_ps(m2, _mm512_loadu_ps(x + i + 32));
    m3 = _mm512_max_ps(m3, _mm512_loadu_ps(x + i + 48));
  }
  float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
  for (int64_t i = wide; i < n; ++i) m = std::max(m, x[i]);
  *rowmax = m;
  const __m512 shift = _mm512_set1_ps(m);
  double sum = 0.0;
  for (int64_t start = 0; start < wide; start += 2048) {
    const int64_t end = std::min(wide, start + 2048);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (int64_t i = start; i < end; i += 32) {
      const __m512 e0 = exp_shifted(_mm512_loadu_ps(x + i), shift);
      const __m512 e1 = exp_shifted(_mm512_loadu_ps(x + i + 16), shift);
      _mm512_storeu_ps(x + i, e0);
      _mm512_storeu_ps(x + i + 16, e1);
      s0 = _mm512_add_ps(s0, e0);
      s1 = _mm512_add_ps(s1, e1);
    }
    sum += static_cast<double>(_mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
  }
  for (int64_t i = wide; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += static_cast<double>(x[i]);
  }
  return sum;
}


// The same with AVX2 and FMA (8 lanes), for x86 CPUs without AVX-512 (AMD before Zen 4, Intel's
// client cores): AVX2 has no scalef, so 2^k is applied through the exponent bits, in a way that
// rounds results in the subnormal range once, as scalef does.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 exp_shifted(__m256 v, __m256 shift) {
  // max returns its second operand when either is NaN: a NaN logit stays NaN (and so does the sum).
  const __m256 t = _mm256_max_ps(_mm256_set1_ps(-103.0f), _mm256_sub_ps(v, shift));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), t);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // p · 2^(k + 24) by adding k + 24 to p's exponent (exact: p >= 0.7 and k >= -149 keep it normal),
  // then one rounding multiply by 2^-24, exact unless the result is subnormal. NaN lanes: p is NaN.
  const __m256i scale = _mm256_slli_epi32(_mm256_cvtps_epi32(_mm256_add_ps(k, _mm256_set1_ps(24.0f))), 23);
  const __m256 scaled = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), scale));
  return _mm256_mul_ps(scaled, _mm256_set1_ps(5.9604644775390625e-8f));
}

__attribute__((target("avx2,fma"))) float reduce_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

__attribute__((target("avx2,fma"))) float reduce_add(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) double exp_shifted_row_avx2(float* x, int64_t n, float* rowmax) {
  const int64_t wide = n / 32 * 32;
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  for (int64_t i = 0; i < wide; i += 32) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
    m2 = _mm256_max_ps(m2, _mm256_loadu_ps(x + i + 16));
    m3 = _mm256_max_ps(m3, _mm256_loadu_ps(x + i + 24));
  }
  // A NaN stays out of the maximum (max_ps returns its second operand): its row's sum is NaN below.
  float m = reduce_max(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
  for (int64_t i = wide; i < n; ++i) m = std::max(m, x[i]);
  *rowmax = m;
  const __m256 shift = _mm256_set1_ps(m);
  double sum = 0.0;
  for (int64_t start = 0; start < wide; start += 2048) {
    const int64_t end = std::min(wide, start + 2048);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    for (int64_t i = start; i < end; i += 16) {
      const __m256 e0 = exp_shifted(_mm256_loadu_ps(x + i), shift);
      const __m256 e1 = exp_shifted(_mm256_loadu_ps(x + i + 8), shift);
      _mm256_storeu_ps(x + i, e0);
      _mm256_storeu_ps(x + i + 8, e1);
      s0 = _mm256_add_ps(s0, e0);
      s1 = _mm256_add_ps(s1, e1);
    }
    sum += static_cast<double>(reduce_add(_mm256_add_ps(s0, s1)));
  }
  for (int64_t i = wide; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += static_cast<double>(x[i]);
  }
  return sum;
}

// bf16 rows: 16 bf16 values widened to float32 exactly (a bf16 is the high half of a float32).
__attribute__((target("avx512f"), always_inline)) inline __m512 load_bf16(const uint16_t* p) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}

__attribute__((target("avx512f,avx512bf16"), always_inline)) inline void store_bf16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
}

float bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

/// One row's element i as float32: a float32 row's, or a bf16 row's widened exactly.
__attribute__((target("avx512f"), always_inline)) inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
__attribute__((target("avx512f"), always_inline)) inline __m512 load16(const uint16_t* p) { return load_bf16(p); }
inline float element(const float* p) { return *p; }
inline float element(const uint16_t* p) { return bf16_to_float(*p); }

/// exp_shifted_row's arithmetic on a row of `In` (float32 or bf16), its exponentials written
/// rounded to bf16 to `out`. `out` may be the row itself, read as bf16 (in place) or, for a float32
/// row, as the bf16 elements over its first half: element i is written at byte 2i after the
/// elements up to i + 31 were read (at byte 4i and on), so nothing is overwritten before it is read.
template <class In>
__attribute__((target("avx512f,avx512bf16"))) double exp_shifted_row_to_bf16(const In* x, uint16_t* out, int64_t n,
                                                                           float* rowmax) {
  const int64_t wide = n / 64 * 64;
  __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  for (int64_t i = 0; i < wide; i += 64) {
    m0 = _mm512_max_ps(m0, load16(x + i));
    m1 = _mm512_max_ps(m1, load16(x + i + 16));
    m2 = _mm512_max_ps(m2, load16(x + i + 32));
    m3 = _mm512_max_ps(m3, load16(x + i + 48));
  }
  float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
  for (int64_t i = wide; i < n; ++i) m = std::max(m, element(x + i));
  *rowmax = m;
  const __m512 shift = _mm512_set1_ps(m);
  double sum = 0.0;
  for (int64_t start = 0; start < wide; start += 2048) {
    const int64_t end = std::min(wide, start + 2048);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (int64_t i = start; i < end; i += 32) {
      const __m512 e0 = exp_shifted(load16(x + i), shift);
      const __m512 e1 = exp_shifted(load16(x + i + 16), shift);
      store_bf16(out + i, e0);
      store_bf16(out + i + 16, e1);
      s0 = _mm512_add_ps(s0, e0);
      s1 = _mm512_add_ps(s1, e1);
    }
    sum += static_cast<double>(_mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
  }
  for (int64_t i = wide; i < n; ++i) {
    const float e = std::exp(element(x + i) - m);
    out[i] = c10::BFloat16(e).x;  // to nearest even
    sum += static_cast<double>(e);
  }
  return sum;
}

}  // namespace

bool cpu_has_bf16_rows() {
  static const bool has = __builtin_cpu_supports("avx512bf16") && cpu_has_avx512();
  return has;
}

void exp_shifted_rows_bf16(uint16_t* x, int64_t rows, int64_t n, int64_t stride, float* rowmax, double* sums) {
  if (!cpu_has_bf16_rows()) throw std::logic_error("exp_shifted_rows_bf16: the CPU has no AVX512-BF16");
  at::parallel_for(0, rows, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) sums[r] = exp_shifted_row_to_bf16(x + r * stride, x + r * stride, n, rowmax + r);
  });
}

void exp_shifted_rows_to_bf16(float* x, int64_t rows, int64_t n, int64_t stride, float* rowmax, double* sums) {
  if (!cpu_has_bf16_rows()) throw std::logic_error("exp_shifted_rows_to_bf16: the CPU has no AVX512-BF16");
  at::parallel_for(0, rows, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      sums[r] = exp_shifted_row_to_bf16(x + r * stride, reinterpret_cast<uint16_t*>(x + r * stride), n, rowmax + r);
  });
}

void enable_cpu_kernels(bool enabled) { kernels_enabled() = enabled; }

bool cpu_kernels_enabled() { return kernels_enabled(); }

void limit_cpu_kernels_to_avx2(bool limited) { capped_at_avx2() = limited; }

bool PackedRightOperand::available() { return kernels_enabled() && mkl().found(); }

bool PackedRightOperand::present() { return mkl().found(); }

PackedRightOperand::PackedRightOperand(const float* b, int64_t ldb, bool transposed, int64_t max_rows, int64_t n,
                                       int64_t k)
    : max_rows_(max_rows), n_(n), k_(k) {
  if (!present()) throw std::logic_error("PackedRightOperand: MKL's packed GEMM is not available");
  const auto& f = mkl();
  const size_t bytes = f.pack_size(kBMatrix, as_int(max_rows), as_int(n), as_int(k));
  packed_ = torch::empty({static_cast<int64_t>(bytes / sizeof(float)) + 16}, torch::kFloat);
  f.pack(kRowMajor, kBMatrix, transposed ? kTrans : kNoTrans, as_int(max_rows), as_int(n), as_int(k), 1.0f, b,
         as_int(ldb), packed_.data_ptr<float>());
}

void PackedRightOperand::multiply(const float* a, int64_t lda, int64_t m, float* c, int64_t ldc) const {
  if (m < 1 || m > max_rows_) throw std::logic_error("PackedRightOperand: rows out of range");
  mkl().compute(kRowMajor, kNoTrans, kPacked, as_int(m), as_int(n_), as_int(k_), a, as_int(lda),
                packed_.data_ptr<float>(), as_int(k_), 0.0f, c, as_int(ldc));
}

bool has_exp_shifted_rows() { return row_kernel() != RowKernel::portable; }

RowKernel switched_row_kernel() { return row_kernel(); }

std::vector<RowKernel> exp_shifted_rows_kernels() {
  std::vector<RowKernel> kernels;
  if (!kernels_enabled()) return kernels;
  if (cpu_has_avx512()) kernels.push_back(RowKernel::avx512f);
  if (cpu_has_avx2()) kernels.push_back(RowKernel::avx2);
  return kernels;
}

std::vector<std::string> cpu_bf16_features() {
  static const bool amx = __builtin_cpu_supports("amx-bf16") && __builtin_cpu_supports("amx-tile");
  static const bool avx512_bf16 = __builtin_cpu_supports("avx512bf16") && cpu_has_avx512();
  std::vector<std::string> features;
  if (capped_at_avx2()) return features;
  if (amx) features.push_back("amx-bf16");
  if (avx512_bf16) features.push_back("avx512-bf16");
  return features;
}

std::string cpu_bf16_missing() {
  if (!cpu_bf16_features().empty()) return "";
  if (capped_at_avx2())
    return "the CPU kernels are capped at AVX2 (" + sinkgate_env_name("CPU_KERNELS") +
           "=avx2), which masks AVX512-BF16 and AMX-BF16";
  return "the CPU (" + cpu_model_name() + ") has neither AVX512-BF16 nor AMX-BF16";
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");  // opens: the kernel's description of the machine, not an input
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos || colon + 2 > line.size() ? line : line.substr(colon + 2);
    }
  return "unknown CPU";
}

bool cpu_has_row_kernel(RowKernel kernel) {
  switch (kernel) {
    case RowKernel::portable: return true;
    case RowKernel::avx2: return cpu_has_avx2();
    case RowKernel::avx512f: return cpu_has_avx512();
  }
  return false;
}

void exp_shifted_rows(float* x, int64_t rows, int64_t n, int64_t stride, float* rowmax, double* sums,
                      std::optional<RowKernel> named) {
  RowKernel kernel = row_kernel();
  if (named) {
    if (*named == RowKernel::portable || !cpu_has_row_kernel(*named))
      throw std::logic_error(std::string("exp_shifted_rows: the CPU cannot run the row kernel '") + row_kernel_name(*named) + "'");
    kernel = *named;
  }
  if (kernel == RowKernel::portable) throw std::logic_error("exp_shifted_rows: the CPU has neither AVX-512F nor AVX2 with FMA");
  at::parallel_for(0, rows, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      sums[r] = kernel == RowKernel::avx512f ? exp_shifted_row(x + r * stride, n, rowmax + r)
                                            : exp_shifted_row_avx2(x + r * stride, n, rowmax + r);
  });
}

}  // namespace sg
