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

/// The 16 columns of 4 × Groups rows (v[0..4 Groups - 1], 16 32-bit elements each) as 16 vectors
/// of those rows: on return v[j] holds (row 0 [j], …, row 4 Groups - 1 [j], then zeros). Per
/// 128-bit lane, pairs then quadruples of rows interleave (unpack); then the lanes transpose across
/// vectors (shuffle_f32x4). Groups 3 (the a panels' 12 rows) or 4 (16 b columns).
template <int Groups>
__attribute__((target("avx512f"), always_inline)) inline void transpose_x16(__m512 v[16]) {
  static_assert(Groups == 3 || Groups == 4, "12 or 16 rows");
  const __m512 zero = _mm512_setzero_ps();
  __m512 quads[4][4];  // quads[g][c]: lane L holds rows 4g..4g+3 of column 4L + c
  for (int g = 0; g < 4; ++g) {
    if (g >= Groups) {
      for (int c = 0; c < 4; ++c) quads[g][c] = zero;
      continue;
    }
    const __m512 t0 = _mm512_unpacklo_ps(v[4 * g], v[4 * g + 1]), t1 = _mm512_unpackhi_ps(v[4 * g], v[4 * g + 1]);
    const __m512 t2 = _mm512_unpacklo_ps(v[4 * g + 2], v[4 * g + 3]), t3 = _mm512_unpackhi_ps(v[4 * g + 2], v[4 * g + 3]);
    quads[g][0] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    quads[g][1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
    quads[g][2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    quads[g][3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 x0 = _mm512_shuffle_f32x4(quads[0][c], quads[1][c], 0x44);  // lanes 0, 1 of groups 0, 1
    const __m512 x1 = _mm512_shuffle_f32x4(quads[0][c], quads[1][c], 0xEE);  // lanes 2, 3
    const __m512 x2 = _mm512_shuffle_f32x4(quads[2][c], quads[3][c], 0x44);
    const __m512 x3 = _mm512_shuffle_f32x4(quads[2][c], quads[3][c], 0xEE);
    v[c] = _mm512_shuffle_f32x4(x0, x2, 0x88);
    v[4 + c] = _mm512_shuffle_f32x4(x0, x2, 0xDD);
    v[8 + c] = _mm512_shuffle_f32x4(x1, x3, 0x88);
    v[12 + c] = _mm512_shuffle_f32x4(x1, x3, 0xDD);
  }
}

/// The lanes below `count` (0 to 16).
inline __mmask16 first_lanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
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
      const __mmask16 present = first_lanes(rows);
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
        transpose_x16<3>(v);
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

/// Writes a register tile (left: columns 0-15 of each row, right: 16-31) to c's rows × columns,
/// adding c's values first when `accumulate`.
__attribute__((target("avx512f"), always_inline)) inline void store_tile(const __m512 left[kTileRows],
                                                                        const __m512 right[kTileRows], float* c,
                                                                        int64_t ldc, int64_t rows, int64_t columns,
                                                                        bool accumulate) {
  const __mmask16 mask0 = first_lanes(columns), mask1 = first_lanes(columns - 16);
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

/// c's tile is read or written only after the products: its lines (often not in cache: the loss's
/// logits and weight gradient are far larger than the caches) are fetched meanwhile.
inline void prefetch_tile(const float* c, int64_t ldc, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    __builtin_prefetch(c + r * ldc, /*rw=*/1, /*locality=*/3);
    __builtin_prefetch(c + r * ldc + 16, /*rw=*/1, /*locality=*/3);
  }
}

/// c's tile (rows × columns, at most MR × NR) = [c +] a panel · b panel over kc.
__attribute__((target("avx512f"))) void multiply_tile(int64_t kc, const float* a, const float* b, float* c,
                                                      int64_t ldc, int64_t rows, int64_t columns, bool accumulate) {
  __m512 left[kTileRows], right[kTileRows];  // columns 0-15 and 16-31 of each row
  prefetch_tile(c, ldc, rows);
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
  store_tile(left, right, c, ldc, rows, columns, accumulate);
}

/// The float32 product's steps, for the blocked loops (multiply_serial): a panel word is one float.
struct Float32Steps {
  using Word = float;
  static constexpr int64_t kDepthPerWord = 1;
  static void pack_a(const StridedMatrix& a, int64_t i0, int64_t mc, int64_t k0, int64_t kc, Word* out) {
    sg::pack_a(a, i0, mc, k0, kc, out);
  }
  static void pack_b(const StridedMatrix& b, int64_t k0, int64_t kc, int64_t j0, int64_t nc, Word* out) {
    sg::pack_b(b, k0, kc, j0, nc, out);
  }
  static void tile(int64_t words, const Word* a, const Word* b, float* c, int64_t ldc, int64_t rows, int64_t columns,
                   bool accumulate) {
    multiply_tile(words, a, b, c, ldc, rows, columns, accumulate);
  }
};

// ---- The bf16 product (AVX512-BF16) ----
// A panel word holds a pair of k in bf16, k even in its low half and k + 1 in its high half, as
// vdpbf16ps reads them: c += a[k] b[k] + a[k+1] b[k+1] per float32 lane. An odd depth ends with
// a pair whose high half is zero. Operands are rounded to bf16 as they are packed.

/// The bf16 of a float32, to nearest even, as vcvtneps2bf16 rounds it: subnormals to a zero of
/// their sign, NaN kept quiet. For the packing's rare operands with no unit stride.
uint32_t bf16_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7F800000u) == 0) return (bits >> 16) & 0x8000u;
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (bits >> 16) | 0x40u;
  return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}

/// The word of a pair (x at k even, y at k + 1).
uint32_t bf16_pair(float x, float y) { return bf16_bits(x) | (bf16_bits(y) << 16); }

/// 32 consecutive k of a row (x0: k 0-15, x1: k 16-31) as its 16 pair words.
__attribute__((target("avx512f,avx512bf16"), always_inline)) inline __m512 adjacent_pairs(__m512 x0, __m512 x1) {
  return _mm512_castsi512_ps(reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0)));
}

/// The pair words of 16 elements at k even (x) and at k + 1 (y).
__attribute__((target("avx512f,avx512bf16"), always_inline)) inline __m512i stacked_pairs(__m512 x, __m512 y) {
  const __m512i low = _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)));
  const __m512i high = _mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(y)));
  return _mm512_or_si512(low, _mm512_slli_epi32(high, 16));
}

/// The lanes below `count` (0 to 32) of 16-bit elements.
inline __mmask32 first_halves(int64_t count) {
  return count >= 32 ? __mmask32(0xFFFFFFFFu) : count <= 0 ? __mmask32(0) : __mmask32((1u << count) - 1);
}

/// pack_a_bf16 for a bf16 matrix: its elements are the packed words' halves already.
__attribute__((target("avx512f,avx512bw,avx512bf16"), noinline)) void pack_a_from_bf16(const StridedMatrix& a, int64_t i0,
                                                                                       int64_t mc, int64_t k0, int64_t kc,
                                                                                       uint32_t* out) {
  constexpr __mmask16 tile_lanes = (1u << kTileRows) - 1;
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t t = 0; t < mc; t += kTileRows) {
    const int64_t rows = std::min(kTileRows, mc - t);
    uint32_t* panel = out + t * pairs;
    if (a.column_stride == 1) {  // row-major: 32 k of a row are its 16 pair words; 12 rows transposed
      const uint16_t* source = a.bf16 + (i0 + t) * a.row_stride + k0;
      for (int64_t k = 0; k < kc; k += 32) {
        const __mmask32 present = first_halves(kc - k);  // an odd end's high half stays zero
        __m512 v[16];
        for (int r = 0; r < 16; ++r)
          v[r] = r < rows ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(present, source + r * a.row_stride + k))
                          : _mm512_setzero_ps();
        transpose_x16<3>(v);
        const int64_t here = std::min<int64_t>(16, (kc - k + 1) / 2);
        for (int64_t p = 0; p < here; ++p)
          _mm512_mask_storeu_epi32(panel + (k / 2 + p) * kTileRows, tile_lanes, _mm512_castps_si512(v[p]));
      }
    } else if (a.row_stride == 1) {  // column-major: each k's rows are contiguous, paired with the next k's
      const __mmask32 present = first_halves(rows);
      const uint16_t* source = a.bf16 + k0 * a.column_stride + i0 + t;
      for (int64_t p = 0; p < pairs; ++p) {
        const __m512i low = _mm512_cvtepu16_epi32(
            _mm512_castsi512_si256(_mm512_maskz_loadu_epi16(present, source + 2 * p * a.column_stride)));
        const __m512i high = 2 * p + 1 < kc ? _mm512_cvtepu16_epi32(_mm512_castsi512_si256(
                                                  _mm512_maskz_loadu_epi16(present, source + (2 * p + 1) * a.column_stride)))
                                            : _mm512_setzero_si512();
        _mm512_mask_storeu_epi32(panel + p * kTileRows, tile_lanes, _mm512_or_si512(low, _mm512_slli_epi32(high, 16)));
      }
    } else {
      for (int64_t p = 0; p < pairs; ++p)
        for (int64_t r = 0; r < kTileRows; ++r) {
          const uint16_t* element = a.bf16 + (i0 + t + r) * a.row_stride + (k0 + 2 * p) * a.column_stride;
          panel[p * kTileRows + r] =
              r < rows ? element[0] | (2 * p + 1 < kc ? static_cast<uint32_t>(element[a.column_stride]) << 16 : 0u) : 0u;
        }
    }
  }
}

/// a's block (rows [i0, i0 + mc), k in [k0, k0 + kc)) as ceil(mc / MR) panels of ceil(kc / 2) × MR
/// pair words (pair p of row r at p * MR + r), rows past mc zero.
__attribute__((target("avx512f,avx512bf16"), noinline)) void pack_a_bf16(const StridedMatrix& a, int64_t i0, int64_t mc,
                                                                         int64_t k0, int64_t kc, uint32_t* out) {
  if (a.bf16) {
    pack_a_from_bf16(a, i0, mc, k0, kc, out);
    return;
  }
  constexpr __mmask16 tile_lanes = (1u << kTileRows) - 1;
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t t = 0; t < mc; t += kTileRows) {
    const int64_t rows = std::min(kTileRows, mc - t);
    uint32_t* panel = out + t * pairs;
    if (a.column_stride == 1) {  // row-major: 32 k of the 12 rows at a time, paired, then transposed
      const float* source = a.data + (i0 + t) * a.row_stride + k0;
      for (int64_t k = 0; k < kc; k += 32) {
        const __mmask16 mask0 = first_lanes(kc - k), mask1 = first_lanes(kc - k - 16);
        __m512 v[16];
        for (int r = 0; r < 16; ++r)
          v[r] = r < rows ? adjacent_pairs(_mm512_maskz_loadu_ps(mask0, source + r * a.row_stride + k),
                                           _mm512_maskz_loadu_ps(mask1, source + r * a.row_stride + k + 16))
                          : _mm512_setzero_ps();
        transpose_x16<3>(v);
        const int64_t here = std::min<int64_t>(16, (kc - k + 1) / 2);
        for (int64_t p = 0; p < here; ++p)
          _mm512_mask_storeu_epi32(panel + (k / 2 + p) * kTileRows, tile_lanes, _mm512_castps_si512(v[p]));
      }
    } else if (a.row_stride == 1) {  // column-major: each k's rows are contiguous
      const __mmask16 present = first_lanes(rows);
      const float* source = a.data + k0 * a.column_stride + i0 + t;
      for (int64_t p = 0; p < pairs; ++p) {
        const __m512 x = _mm512_maskz_loadu_ps(present, source + 2 * p * a.column_stride);
        const __m512 y = 2 * p + 1 < kc ? _mm512_maskz_loadu_ps(present, source + (2 * p + 1) * a.column_stride)
                                        : _mm512_setzero_ps();
        _mm512_mask_storeu_epi32(panel + p * kTileRows, tile_lanes, stacked_pairs(x, y));
      }
    } else {
      for (int64_t p = 0; p < pairs; ++p)
        for (int64_t r = 0; r < kTileRows; ++r) {
          const float* element = a.data + (i0 + t + r) * a.row_stride + (k0 + 2 * p) * a.column_stride;
          panel[p * kTileRows + r] =
              r < rows ? bf16_pair(element[0], 2 * p + 1 < kc ? element[a.column_stride] : 0.0f) : 0u;
        }
    }
  }
}

/// b's block (k in [k0, k0 + kc), columns [j0, j0 + nc)) as ceil(nc / NR) panels of ceil(kc / 2) × NR
/// pair words (pair p of column j at p * NR + j), columns past nc zero.
__attribute__((target("avx512f,avx512bf16"), noinline)) void pack_b_bf16(const StridedMatrix& b, int64_t k0, int64_t kc,
                                                                         int64_t j0, int64_t nc, uint32_t* out) {
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t q = 0; q < nc; q += kTileColumns) {
    const int64_t columns = std::min(kTileColumns, nc - q);
    uint32_t* panel = out + q * pairs;
    if (b.column_stride == 1) {  // row-major: rows k and k + 1, paired column by column
      const __mmask16 mask0 = first_lanes(columns), mask1 = first_lanes(columns - 16);
      for (int64_t p = 0; p < pairs; ++p) {
        const float* x = b.data + (k0 + 2 * p) * b.row_stride + j0 + q;
        const bool odd = 2 * p + 1 < kc;
        const __m512 zero = _mm512_setzero_ps();
        _mm512_store_si512(panel + p * kTileColumns,
                           stacked_pairs(_mm512_maskz_loadu_ps(mask0, x),
                                         odd ? _mm512_maskz_loadu_ps(mask0, x + b.row_stride) : zero));
        _mm512_store_si512(panel + p * kTileColumns + 16,
                           stacked_pairs(_mm512_maskz_loadu_ps(mask1, x + 16),
                                         odd ? _mm512_maskz_loadu_ps(mask1, x + b.row_stride + 16) : zero));
      }
    } else if (b.row_stride == 1) {  // each column's k contiguous: 32 k of 16 columns at a time, transposed
      for (int64_t half = 0; half < 2; ++half) {
        const int64_t present = std::min<int64_t>(16, columns - 16 * half);
        const float* first = b.data + (j0 + q + 16 * half) * b.column_stride + k0;
        for (int64_t k = 0; k < kc; k += 32) {
          const __mmask16 mask0 = first_lanes(kc - k), mask1 = first_lanes(kc - k - 16);
          __m512 v[16];
          for (int j = 0; j < 16; ++j)
            v[j] = j < present ? adjacent_pairs(_mm512_maskz_loadu_ps(mask0, first + j * b.column_stride + k),
                                                _mm512_maskz_loadu_ps(mask1, first + j * b.column_stride + k + 16))
                               : _mm512_setzero_ps();
          transpose_x16<4>(v);
          const int64_t here = std::min<int64_t>(16, (kc - k + 1) / 2);
          for (int64_t p = 0; p < here; ++p)
            _mm512_store_si512(panel + (k / 2 + p) * kTileColumns + 16 * half, _mm512_castps_si512(v[p]));
        }
      }
    } else {
      for (int64_t p = 0; p < pairs; ++p)
        for (int64_t j = 0; j < kTileColumns; ++j) {
          const float* element = b.data + (k0 + 2 * p) * b.row_stride + (j0 + q + j) * b.column_stride;
          panel[p * kTileColumns + j] =
              j < columns ? bf16_pair(element[0], 2 * p + 1 < kc ? element[b.row_stride] : 0.0f) : 0u;
        }
    }
  }
}

/// c's tile (rows × columns, at most MR × NR) = [c +] a panel · b panel over `pairs` pair words.
__attribute__((target("avx512f,avx512bf16"))) void multiply_tile_bf16(int64_t pairs, const uint32_t* a,
                                                                      const uint32_t* b, float* c, int64_t ldc,
                                                                      int64_t rows, int64_t columns, bool accumulate) {
  __m512 left[kTileRows], right[kTileRows];  // columns 0-15 and 16-31 of each row
  prefetch_tile(c, ldc, rows);
#pragma GCC unroll 12
  for (int r = 0; r < kTileRows; ++r) left[r] = right[r] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b + 16));
#pragma GCC unroll 12
    for (int r = 0; r < kTileRows; ++r) {
      const __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r])));
      left[r] = _mm512_dpbf16_ps(left[r], x, b0);
      right[r] = _mm512_dpbf16_ps(right[r], x, b1);
    }
    a += kTileRows;
    b += kTileColumns;
  }
  store_tile(left, right, c, ldc, rows, columns, accumulate);
}

/// The bf16 product's steps: a panel word is a pair of k in bf16.
struct Bf16Steps {
  using Word = uint32_t;
  static constexpr int64_t kDepthPerWord = 2;
  static void pack_a(const StridedMatrix& a, int64_t i0, int64_t mc, int64_t k0, int64_t kc, Word* out) {
    pack_a_bf16(a, i0, mc, k0, kc, out);
  }
  static void pack_b(const StridedMatrix& b, int64_t k0, int64_t kc, int64_t j0, int64_t nc, Word* out) {
    pack_b_bf16(b, k0, kc, j0, nc, out);
  }
  static void tile(int64_t words, const Word* a, const Word* b, float* c, int64_t ldc, int64_t rows, int64_t columns,
                   bool accumulate) {
    multiply_tile_bf16(words, a, b, c, ldc, rows, columns, accumulate);
  }
};

/// c = [c +] a · b on one thread, in BLIS's blocks: a block of b is kDepth words deep (kDepth k
/// in float32, twice that in bf16 pairs: the same bytes).
template <class Steps>
void multiply_serial(int64_t m, int64_t n, int64_t k, const StridedMatrix& a, const StridedMatrix& b, float* c,
                     int64_t ldc, bool accumulate) {
  using Word = typename Steps::Word;
  static_assert(sizeof(Word) == sizeof(float), "the packing buffers hold 4-byte words");
  constexpr int64_t depth = kDepth * Steps::kDepthPerWord;
  PackBuffers& buffers = thread_buffers();
  auto* packed_b = reinterpret_cast<Word*>(PackBuffers::ensure(buffers.b, buffers.b_size, kDepth * kBlockColumns));
  auto* packed_a = reinterpret_cast<Word*>(PackBuffers::ensure(buffers.a, buffers.a_size, kDepth * kBlockRows));
  for (int64_t jc = 0; jc < n; jc += kBlockColumns) {
    const int64_t nc = std::min(kBlockColumns, n - jc);
    for (int64_t pc = 0; pc < k; pc += depth) {
      const int64_t kc = std::min(depth, k - pc);
      const int64_t words = (kc + Steps::kDepthPerWord - 1) / Steps::kDepthPerWord;
      Steps::pack_b(b, pc, kc, jc, nc, packed_b);
      const bool add = accumulate || pc > 0;
      for (int64_t ic = 0; ic < m; ic += kBlockRows) {
        const int64_t mc = std::min(kBlockRows, m - ic);
        Steps::pack_a(a, ic, mc, pc, kc, packed_a);
        for (int64_t jr = 0; jr < nc; jr += kTileColumns)
          for (int64_t ir = 0; ir < mc; ir += kTileRows)
            Steps::tile(words, packed_a + ir * words, packed_b + jr * words, c + (ic + ir) * ldc + jc + jr, ldc,
                        std::min(kTileRows, mc - ir), std::min(kTileColumns, nc - jr), add);
      }
    }
  }
}

/// The part of m from row i and column j on.
StridedMatrix shifted(const StridedMatrix& m, int64_t i, int64_t j) {
  const int64_t offset = i * m.row_stride + j * m.column_stride;
  return {m.data ? m.data + offset : nullptr, m.row_stride, m.column_stride, m.bf16 ? m.bf16 + offset : nullptr};
}

/// c = [c +] a · b split over torch's threads: each takes a contiguous part of the longer side of
/// c, in whole tiles (so that every element's sum runs in the same order on any thread count).
template <class Steps>
void multiply_parallel(int64_t m, int64_t n, int64_t k, const StridedMatrix& a, const StridedMatrix& b, float* c,
                       int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  const bool split_columns = n >= m;
  const int64_t side = split_columns ? n : m, unit = split_columns ? kTileColumns : kTileRows;
  const int64_t units = (side + unit - 1) / unit;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), units));
  at::parallel_for(0, parts, /*grain_size=*/1, [&](int64_t first, int64_t last) {
    for (int64_t part = first; part < last; ++part) {
      const int64_t begin = std::min(side, units * part / parts * unit);
      const int64_t end = std::min(side, units * (part + 1) / parts * unit);
      if (begin >= end) continue;
      if (split_columns)
        multiply_serial<Steps>(m, end - begin, k, a, shifted(b, 0, begin), c + begin, ldc, accumulate);
      else
        multiply_serial<Steps>(end - begin, n, k, shifted(a, begin, 0), b, c + begin * ldc, ldc, accumulate);
    }
  });
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
  if (a.bf16 || b.bf16) throw std::invalid_argument("gemm_avx512: a bf16 operand (float32 products only)");
  multiply_parallel<Float32Steps>(m, n, k, a, b, c, ldc, accumulate);
}

bool cpu_has_avx512_bf16_gemm() {
  static const bool cpu_has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                              __builtin_cpu_supports("avx512bf16");
  return cpu_has;
}

bool has_avx512_bf16_gemm() { return cpu_has_avx512_bf16_gemm() && cpu_kernels_enabled() && !cpu_bf16_features().empty(); }

void gemm_avx512_bf16(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c, int64_t ldc,
                      bool accumulate) {
  if (!cpu_has_avx512_bf16_gemm()) throw std::logic_error("gemm_avx512_bf16: the CPU has no AVX512-BF16");
  if (b.bf16) throw std::invalid_argument("gemm_avx512_bf16: a bf16 right operand (only the left may be bf16)");
  multiply_parallel<Bf16Steps>(m, n, k, a, b, c, ldc, accumulate);
}

}  // namespace sg
