// cpu_gemm.cpp — see cpu_gemm.h. The loops are BLIS's (Van Zee and van de Geijn, "BLIS: A
// Framework for Rapidly Instantiating BLAS Functionality", 2015): for each (KC × NC) block of b,
// packed into NR-column panels, and each (MC × KC) block of a, packed into MR-row panels, a
// register tile of MR × NR results accumulates over KC.
#include "lib/kernels/cpu_gemm.h"

// GCC 12 warns inside its own avx512fintrin.h (the intrinsics' deliberately undefined
// pass-through operands) wherever they are inlined; the warnings say nothing about this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "lib/kernels/cpu_kernels.h"

namespace sg {
namespace {

constexpr int64_t kTileRows = 12;     // MR: 12 × 2 accumulators of 16 floats, 24 of the 32 zmm registers
constexpr int64_t kTileColumns = 32;  // NR
// The blocks: a b panel (KC × NR, 32 KB) stays in L1 across an a block's tiles, the a block
// (MC × KC, 120 KB) in L2, the b block (KC × NC, 3 MB) in L3.
constexpr int64_t kDepth = 256;          // KC
constexpr int64_t kBlockRows = 120;      // MC, a multiple of kTileRows
constexpr int64_t kBlockColumns = 3072;  // NC, a multiple of kTileColumns

/// The packing buffers of one thread, grown as needed and kept (64-byte aligned).
struct PackBuffers {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> a, b;
  int64_t a_size = 0, b_size = 0;

  static float* ensure(std::unique_ptr<float, Free>& buffer, int64_t& size, int64_t floats) {
    if (floats > size) {
      const size_t bytes = (static_cast<size_t>(floats) * sizeof(float) + 63) / 64 * 64;
      buffer.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      if (!buffer) throw std::bad_alloc();
      size = floats;
    }
    return buffer.get();
  }
};

PackBuffers& thread_buffers() {
  thread_local PackBuffers buffers;
  return buffers;
}

/// The 16 columns of 12 rows (v[0..11], 16 floats each) as 16 vectors of those rows: on return
/// v[j] holds (row 0 [j], …, row 11 [j], 0, 0, 0, 0). Per 128-bit lane, pairs then quadruples of
/// rows interleave (unpack); then the lanes transpose across vectors (shuffle_f32x4).
__attribute__((target("avx512f"), always_inline)) inline void transpose_12x16(__m512 v[16]) {
  __m512 quads[4][4];  // quads[g][c]: lane L holds rows 4g..4g+3 of column 4L + c
  for (int g = 0; g < 3; ++g) {
    const __m512 t0 = _mm512_unpacklo_ps(v[4 * g], v[4 * g + 1]), t1 = _mm512_unpackhi_ps(v[4 * g], v[4 * g + 1]);
    const __m512 t2 = _mm512_unpacklo_ps(v[4 * g + 2], v[4 * g + 3]), t3 = _mm512_unpackhi_ps(v[4 * g + 2], v[4 * g + 3]);
    quads[g][0] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    quads[g][1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    quads[g][2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    quads[g][3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int c = 0; c < 4; ++c) {
    const __m512 x0 = _mm512_shuffle_f32x4(quads[0][c], quads[1][c], 0x44);  // lanes 0, 1 of groups 0, 1
    const __m512 x1 = _mm512_shuffle_f32x4(quads[0][c], quads[1][c], 0xEE);  // lanes 2, 3
    const __m512 x2 = _mm512_shuffle_f32x4(quads[2][c], zero, 0x44);
    const __m512 x3 = _mm512_shuffle_f32x4(quads[2][c], zero, 0xEE);
    v[c] = _mm512_shuffle_f32x4(x0, x2, 0x88);
    v[4 + c] = _mm512_shuffle_f32x4(x0, x2, 0xDD);
    v[8 + c] = _mm512_shuffle_f32x4(x1, x3, 0x88);
    v[12 + c] = _mm512_shuffle_f32x4(x1, x3, 0xDD);
  }
}

/// a's block (rows [i0, i0 + mc), columns [k0, k0 + kc)) as ceil(mc / MR) panels of kc × MR
/// (element (r, k) of a panel at k * MR + r), rows past mc zero.
__attribute__((target("avx512f"), noinline)) void pack_a(const StridedMatrix& a, int64_t i0, int64_t mc, int64_t k0,
                                                        int64_t kc, float* out) {
  constexpr __mmask16 tile_lanes = (1u << kTileRows) - 1;
  for (int64_t t = 0; t < mc; t += kTileRows) {
    const int64_t rows = std::min(kTileRows, mc - t);
    float* panel = out + t * kc;
    if (a.row_stride == 1) {  // a column-major: each k's rows are contiguous
      const __mmask16 present = static_cast<__mmask16>((1u << rows) - 1);
      const float* source = a.data + k0 * a.column_stride + i0 + t;
      for (int64_t k = 0; k < kc; ++k)
        _mm512_mask_storeu_ps(panel + k * kTileRows, tile_lanes,
                              _mm512_maskz_loadu_ps(present, source + k * a.column_stride));
    } else if (a.column_stride == 1) {  // row-major: 16 columns of the 12 rows at a time, transposed
      const float* source = a.data + (i0 + t) * a.row_stride + k0;
      int64_t k = 0;
      for (; k + 16 <= kc; k += 16) {
        __m512 v[16];
        for (int r = 0; r < kTileRows; ++r)
          v[r] = r < rows ? _mm512_loadu_ps(source + r * a.row_stride + k) : _mm512_setzero_ps();
        transpose_12x16(v);
        for (int j = 0; j < 16; ++j) _mm512_mask_storeu_ps(panel + (k + j) * kTileRows, tile_lanes, v[j]);
      }
      for (; k < kc; ++k)
        for (int64_t r = 0; r < kTileRows; ++r) panel[k * kTileRows + r] = r < rows ? source[r * a.row_stride + k] : 0.0f;
    } else {
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t r = 0; r < kTileRows; ++r)
          panel[k * kTileRows + r] =
              r < rows ? a.data[(i0 + t + r) * a.row_stride + (k0 + k) * a.column_stride] : 0.0f;
    }
  }
}

/// b's block (rows [k0, k0 + kc), columns [j0, j0 + nc)) as ceil(nc / NR) panels of kc × NR
/// (element (k, j) of a panel at k * NR + j), columns past nc zero.
__attribute__((noinline)) void pack_b(const StridedMatrix& b, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  for (int64_t p = 0; p < nc; p += kTileColumns) {
    const int64_t columns = std::min(kTileColumns, nc - p);
    float* panel = out + p * kc;
    if (b.column_stride == 1) {  // b row-major: each k's columns are contiguous
      for (int64_t k = 0; k < kc; ++k) {
        float* row = panel + k * kTileColumns;
        std::memcpy(row, b.data + (k0 + k) * b.row_stride + j0 + p, sizeof(float) * columns);
        if (columns < kTileColumns) std::memset(row + columns, 0, sizeof(float) * (kTileColumns - columns));
      }
    } else {
      if (columns < kTileColumns) std::memset(panel, 0, sizeof(float) * kc * kTileColumns);
      for (int64_t j = 0; j < columns; ++j) {
        const float* source = b.data + (j0 + p + j) * b.column_stride + k0 * b.row_stride;
        if (b.row_stride == 1)
          for (int64_t k = 0; k < kc; ++k) panel[k * kTileColumns + j] = source[k];
        else
          for (int64_t k = 0; k < kc; ++k) panel[k * kTileColumns + j] = source[k * b.row_stride];
      }
    }
  }
}

/// c's tile (rows × columns, at most MR × NR) = [c +] a panel · b panel over kc.
__attribute__((target("avx512f"))) void multiply_tile(int64_t kc, const float* a, const float* b, float* c,
                                                      int64_t ldc, int64_t rows, int64_t columns, bool accumulate) {
  __m512 left[kTileRows], right[kTileRows];  // columns 0-15 and 16-31 of each row
  // c's tile is read or written only after the products: its lines (often not in cache: the
  // loss's logits and weight gradient are far larger than the caches) are fetched meanwhile.
  for (int64_t r = 0; r < rows; ++r) {
    __builtin_prefetch(c + r * ldc, /*rw=*/1, /*locality=*/3);
    __builtin_prefetch(c + r * ldc + 16, /*rw=*/1, /*locality=*/3);
  }
#pragma GCC unroll 12
  for (int r = 0; r < kTileRows; ++r) left[r] = right[r] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 x = _mm512_set1_ps(a[r]);
      left[r] = _mm512_fmadd_ps(x, b0, left[r]);
      right[r] = _mm512_fmadd_ps(x, b1, right[r]);
    }
    a += kTileRows;
    b += kTileColumns;
  }
  const __mmask16 mask0 = columns >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << columns) - 1);
  const __mmask16 mask1 = columns >= 32 ? __mmask16(0xFFFF) : columns <= 16 ? __mmask16(0) : __mmask16((1u << (columns - 16)) - 1);
#pragma GCC unroll 12
  for (int r = 0; r < kTileRows; ++r) {
    if (r >= rows) break;
    float* row = c + r * ldc;
    __m512 x0 = left[r], x1 = right[r];
    if (accumulate) {
      x0 = _mm512_add_ps(x0, _mm512_maskz_loadu_ps(mask0, row));
      x1 = _mm512_add_ps(x1, _mm512_maskz_loadu_ps(mask1, row + 16));
    }
    _mm512_mask_storeu_ps(row, mask0, x0);
    _mm512_mask_storeu_ps(row + 16, mask1, x1);
  }
}

/// c = [c +] a · b on one thread, in BLIS's blocks.
void multiply_serial(int64_t m, int64_t n, int64_t k, const StridedMatrix& a, const StridedMatrix& b, float* c, int64_t ldc,
                     bool accumulate) {
  PackBuffers& buffers = thread_buffers();
  float* packed_b = PackBuffers::ensure(buffers.b, buffers.b_size, kDepth * kBlockColumns);
  float* packed_a = PackBuffers::ensure(buffers.a, buffers.a_size, kDepth * kBlockRows);
  for (int64_t jc = 0; jc < n; jc += kBlockColumns) {
    const int64_t nc = std::min(kBlockColumns, n - jc);
    for (int64_t pc = 0; pc < k; pc += kDepth) {
      const int64_t kc = std::min(kDepth, k - pc);
      pack_b(b, pc, kc, jc, nc, packed_b);
      const bool add = accumulate || pc > 0;
      for (int64_t ic = 0; ic < m; ic += kBlockRows) {
        const int64_t mc = std::min(kBlockRows, m - ic);
        pack_a(a, ic, mc, pc, kc, packed_a);
        for (int64_t jr = 0; jr < nc; jr += kTileColumns)
          for (int64_t ir = 0; ir < mc; ir += kTileRows)
            multiply_tile(kc, packed_a + ir * kc, packed_b + jr * kc, c + (ic + ir) * ldc + jc + jr, ldc,
                          std::min(kTileRows, mc - ir), std::min(kTileColumns, nc - jr), add);
      }
    }
  }
}

}  // namespace

bool cpu_has_avx512_gemm() {
  static const bool cpu_has = __builtin_cpu_supports("avx512f");
  return cpu_has;
}

bool has_avx512_gemm() { return cpu_has_avx512_gemm() && cpu_kernels_enabled(); }

void gemm_avx512(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c, int64_t ldc,
                 bool accumulate) {
  if (!cpu_has_avx512_gemm()) throw std::logic_error("gemm_avx512: the CPU has no AVX-512F");
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  // Each thread takes a contiguous part of the longer side of c, in whole tiles.
  const bool split_columns = n >= m;
  const int64_t side = split_columns ? n : m, unit = split_columns ? kTileColumns : kTileRows;
  const int64_t units = (side + unit - 1) / unit;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), units));
  at::parallel_for(0, parts, /*grain_size=*/1, [&](int64_t first, int64_t last) {
    for (int64_t part = first; part < last; ++part) {
      const int64_t begin = std::min(side, units * part / parts * unit);
      const int64_t end = std::min(side, units * (part + 1) / parts * unit);
      if (begin >= end) continue;
      if (split_columns) {
        const StridedMatrix b_part{b.data + begin * b.column_stride, b.row_stride, b.column_stride};
        multiply_serial(m, end - begin, k, a, b_part, c + begin, ldc, accumulate);
      } else {
        const StridedMatrix a_part{a.data + begin * a.row_stride, a.row_stride, a.column_stride};
        multiply_serial(end - begin, n, k, a_part, b, c + begin * ldc, ldc, accumulate);
      }
    }
  });
}

}  // namespace sg
