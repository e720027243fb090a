// AVX-512 micro-kernels of PackedGemm. An 8 x 48 tile of C lives in 24 zmm registers for a whole depth
// block: per k, three vectors of B and eight broadcasts of A feed 24 FMAs, and C is touched once per
// block. A panel of at most 4 rows (batches of 2 to 4) takes a 4 x 48 tile, 12 FMAs per k instead of 24
// of which half would multiply zero rows. Narrower tiles (32, 16 and a masked last vector) cover the
// columns left over; the last few
// columns (a 7x7 map's 49th, a 14x14 map's last 4) go to the AVX2 narrow kernel, which runs down A's rows
// instead, so a single leftover column costs one FMA per k, not eight.
#include <immintrin.h>

#include "runtime/math/packed_gemm_kernels.h"

namespace onnxserve::packed {
namespace avx512 {
namespace {

constexpr int kLanes = 16;
// How far ahead of the k it multiplies a tile prefetches A, in floats: 64 k steps, some 800 cycles, about
// what L3 takes to answer with a few lines in flight (measured: 16 steps gained half as much).
constexpr int kPrefetchDistance = 64 * kPanelRows;

__mmask16 TailMask(int64_t columns) {
  return columns >= kLanes ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << columns) - 1);
}

int64_t RoundUpToLanes(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// The in-register activations of PanelOutput over kCount accumulators, in vector_kernels_avx512.cc's
// operations: Clamp(x, lo, hi) is min(hi, max(lo, x)), LeakyRelu a blend on x < 0, and vmaxps returns its
// second operand when either is NaN, so NaN survives Relu as it does the operator. One switch for a whole
// tile, between adding what joins C and storing it, as in packed_gemm_avx2.cc. (The masked forms of max
// and min: the unmasked intrinsics trip g++ 12's -Wmaybe-uninitialized on their own undefined
// pass-through.)
template <int kCount>
inline void ActivateAll(__m512* acc, const Activation& a) {
  const __mmask16 all = 0xFFFF;
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  const __m512 alpha = _mm512_set1_ps(a.alpha), beta = _mm512_set1_ps(a.beta);
  switch (a.kind) {
    case ActivationKind::kRelu:
#pragma GCC unroll 24
      for (int i = 0; i < kCount; ++i) acc[i] = _mm512_maskz_max_ps(all, zero, acc[i]);
      return;
    case ActivationKind::kClip:
#pragma GCC unroll 24
      for (int i = 0; i < kCount; ++i) acc[i] = _mm512_maskz_min_ps(all, beta, _mm512_maskz_max_ps(all, alpha, acc[i]));
      return;
    case ActivationKind::kLeakyRelu:
#pragma GCC unroll 24
      for (int i = 0; i < kCount; ++i) {
        const __mmask16 negative = _mm512_cmp_ps_mask(acc[i], zero, _CMP_LT_OQ);
        acc[i] = _mm512_mask_blend_ps(negative, acc[i], _mm512_mul_ps(alpha, acc[i]));
      }
      return;
    case ActivationKind::kHardSigmoid:
#pragma GCC unroll 24
      for (int i = 0; i < kCount; ++i) {
        const __m512 linear = _mm512_fmadd_ps(alpha, acc[i], beta);
        acc[i] = _mm512_maskz_min_ps(all, one, _mm512_maskz_max_ps(all, zero, linear));
      }
      return;
    case ActivationKind::kHardSwish: {
      const __m512 sixth = _mm512_set1_ps(1.0f / 6.0f), half = _mm512_set1_ps(0.5f);
#pragma GCC unroll 24
      for (int i = 0; i < kCount; ++i) {
        const __m512 gate = _mm512_fmadd_ps(acc[i], sixth, half);
        acc[i] = _mm512_mul_ps(acc[i], _mm512_maskz_min_ps(all, one, _mm512_maskz_max_ps(all, zero, gate)));
      }
      return;
    }
    default:
      return;  // kNone, and the kinds the caller applies
  }
}

// acc + C (a later depth block) or acc + bias + z (the first) for one row of a tile, under `mask`.
inline __m512 Join(__m512 acc, int row, int64_t column, __mmask16 mask, const PanelOutput& out) {
  if (out.accumulate) return _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mask, out.c + row * out.ldc + column));
  if (out.bias != nullptr) acc = _mm512_add_ps(acc, _mm512_set1_ps(out.bias[row]));
  if (out.z != nullptr) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mask, out.z + row * out.ldz + column));
  return acc;
}

// Where the first kRows rows of A start, when `rows` of them are the tile's. Packed, the rows are adjacent
// and zero past the tile's; read in place, a row past them may lie past A's end, so those rows read the
// last one again (their sums are never stored).
template <int kRows, bool kPacked>
void StartRows(const RowsOfA& a, int rows, const float** starts) {
  const int64_t row_stride = kPacked ? 1 : a.row_stride;
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) starts[r] = a.data + (kPacked || r < rows ? r : rows - 1) * row_stride;
}

// C[rows x columns] at `column` from the first kRows rows of A (rows <= kRows) and one B panel of kVectors
// * 16 floats per k. kRows is 8, or 4 for a panel of at most 4 rows (batches of 2 to 4), which the 8-row
// tile would multiply at half speed or less. kPacked says A is a packed panel, whose strides are then
// constants.
template <int kRows, int kVectors, bool kPacked>
void MultiplyWide(const RowsOfA& a, const float* b, int64_t b_stride, int64_t depth, int rows, int64_t column,
                  int64_t columns, const PanelOutput& out) {
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  __mmask16 masks[kVectors];  // the last vector's columns may be partial
#pragma GCC unroll 3
  for (int v = 0; v < kVectors; ++v) masks[v] = v + 1 < kVectors ? __mmask16(0xFFFF) : TailMask(columns - v * kLanes);
  const float* a_rows[kRows];
  StartRows<kRows, kPacked>(a, rows, a_rows);
  const int64_t k_stride = kPacked ? kPanelRows : a.k_stride;
#pragma GCC unroll 2
  for (int64_t k = 0; k < depth; ++k, b += b_stride) {
    // Deep layers' weights come from L3 (a 7x7 map gives each weight only 49 uses): fetch A ahead. (A read
    // in place is an activation that the last layer left in cache.)
    if (kPacked) _mm_prefetch(reinterpret_cast<const char*>(a_rows[0] + k * k_stride + kPrefetchDistance), _MM_HINT_T0);
    __m512 bv[kVectors];
    // The last vector masked: B read where it lies has no zero padding past its columns.
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_maskz_loadu_ps(masks[v], b + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 ar = _mm512_set1_ps(a_rows[r][k * k_stride]);
#pragma GCC unroll 3
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows && r < rows; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) acc[r][v] = Join(acc[r][v], r, column + v * kLanes, masks[v], out);
  }
  ActivateAll<kRows * kVectors>(&acc[0][0], out.activation);  // rows past `rows` too: never stored
#pragma GCC unroll 8
  for (int r = 0; r < kRows && r < rows; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) {
      _mm512_mask_storeu_ps(out.c + r * out.ldc + column + v * kLanes, masks[v], acc[r][v]);
    }
  }
}

void PackColumns(const float* b, int64_t ldb, int64_t depth, int64_t n, float* packed) {
  for (int64_t column = 0; column < n; column += kPanelColumns) {
    const int64_t columns = n - column < kPanelColumns ? n - column : kPanelColumns;
    const int64_t width = RoundUpToLanes(columns);
    const float* src = b + column;
    for (int64_t k = 0; k < depth; ++k, src += ldb, packed += width) {
      for (int64_t v = 0; v < width; v += kLanes) {
        _mm512_store_ps(packed + v, _mm512_maskz_loadu_ps(TailMask(columns - v), src + v));
      }
    }
  }
}

void GatherRow(const float* src, int64_t stride, int64_t n, float* dst) {
  if (stride == 1) {
    for (int64_t g = 0; g < n; g += kLanes) {
      const __mmask16 mask = TailMask(n - g);
      _mm512_mask_storeu_ps(dst + g, mask, _mm512_maskz_loadu_ps(mask, src + g));
    }
  } else if (stride == 2) {
    // The even lanes of 32 consecutive floats; masks keep the last loads inside the row.
    const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (int64_t g = 0; g < n; g += kLanes) {
      const int64_t needed = 2 * (n - g < kLanes ? n - g : kLanes) - 1;  // floats up to the last even one
      const __m512 lo = _mm512_maskz_loadu_ps(TailMask(needed), src + 2 * g);
      const __m512 hi = _mm512_maskz_loadu_ps(TailMask(needed > kLanes ? needed - kLanes : 0), src + 2 * g + kLanes);
      _mm512_mask_storeu_ps(dst + g, TailMask(n - g), _mm512_permutex2var_ps(lo, evens, hi));
    }
  } else {
    for (int64_t g = 0; g < n; ++g) dst[g] = src[g * stride];
  }
}

void PackColumnsRow(const float* row, int64_t n, int64_t depth, int64_t k, float* packed) {
  for (int64_t column = 0; column < n; column += kPanelColumns, packed += depth * kPanelColumns) {
    const int64_t columns = n - column < kPanelColumns ? n - column : kPanelColumns;
    const int64_t width = RoundUpToLanes(columns);
    float* dst = packed + k * width;
    for (int64_t v = 0; v < width; v += kLanes) {
      _mm512_store_ps(dst + v, _mm512_maskz_loadu_ps(TailMask(columns - v), row + column + v));
    }
  }
}

using TileKernel = void (*)(const RowsOfA&, const float*, int64_t, int64_t, int, int64_t, int64_t,
                            const PanelOutput&);
constexpr int kHalfPanelRows = kPanelRows / 2;
// By A's layout (packed or in place), then by vectors.
constexpr TileKernel kTiles[2][kPanelColumns / kLanes + 1] = {
    {nullptr, MultiplyWide<kPanelRows, 1, false>, MultiplyWide<kPanelRows, 2, false>,
     MultiplyWide<kPanelRows, 3, false>},
    {nullptr, MultiplyWide<kPanelRows, 1, true>, MultiplyWide<kPanelRows, 2, true>,
     MultiplyWide<kPanelRows, 3, true>}};
constexpr TileKernel kHalfTiles[2][kPanelColumns / kLanes + 1] = {
    {nullptr, MultiplyWide<kHalfPanelRows, 1, false>, MultiplyWide<kHalfPanelRows, 2, false>,
     MultiplyWide<kHalfPanelRows, 3, false>},
    {nullptr, MultiplyWide<kHalfPanelRows, 1, true>, MultiplyWide<kHalfPanelRows, 2, true>,
     MultiplyWide<kHalfPanelRows, 3, true>}};

void MultiplyTile(const RowsOfA& a, const float* b_panel, int64_t b_stride, int64_t depth, int64_t columns, int rows,
                  const PanelOutput& out) {
  const int64_t vectors = RoundUpToLanes(columns) / kLanes;
  if (a.packed && columns <= kMaxNarrowColumns) {
    avx2::MultiplyNarrow(a.data, b_panel, depth, b_stride, columns, rows, out);
  } else if (rows == 1) {
    avx2::MultiplyRow(a, b_panel, depth, b_stride, 0, columns, out);
  } else if (rows <= kHalfPanelRows) {
    kHalfTiles[a.packed][vectors](a, b_panel, b_stride, depth, rows, 0, columns, out);
  } else {
    kTiles[a.packed][vectors](a, b_panel, b_stride, depth, rows, 0, columns, out);
  }
}

}  // namespace
}  // namespace avx512

const MicroKernels kAvx512Kernels = {
    .pack_rows = avx2::PackRows,  // a transpose bound by loads and stores, not by vector width
    .pack_columns = avx512::PackColumns,
    .pack_columns_row = avx512::PackColumnsRow,
    .gather_row = avx512::GatherRow,
    .multiply_tile = avx512::MultiplyTile,
};

}  // namespace onnxserve::packed
