// AVX2 + FMA micro-kernels of PackedGemm. Sixteen ymm registers hold a 4 x 24 block of C (twelve
// accumulators, three vectors of B and one broadcast of A), so an 8 x 48 tile is four such blocks, each a
// pass over its half of the A panel and its half of the B panel; per k a block does 12 FMAs for 3 loads
// and 4 broadcasts, which keeps both FMA ports busy. A panel's last 2 rows, or its last one (batches of 1
// to 3 and their like), take 2 x 24 blocks or one 1 x 48 row instead of a block of mostly zero rows.
// Every element of C sums its depth in the same order whatever its row, so channels computed from equal
// weights come out bit-identical.
#include <immintrin.h>

#include "runtime/math/packed_gemm_kernels.h"

namespace onnxserve::packed {
namespace avx2 {
namespace {

constexpr int kLanes = 8;
constexpr int kBlockRows = 4;
constexpr int kBlockVectors = 3;
// How far ahead of the k it multiplies a block prefetches A, in floats: 64 k steps, as the AVX-512 tile.
constexpr int kPrefetchDistance = 64 * kPanelRows;

// Lanes [0, n) set, n clamped to [0, 8].
__m256i TailMask(int64_t n) {
  static const int32_t kTable[2 * kLanes] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t lanes = n < 0 ? 0 : n > kLanes ? kLanes : n;
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + kLanes - lanes));
}

int64_t RoundUpToPanelAlignment(int64_t n) { return (n + kPanelAlignment - 1) / kPanelAlignment * kPanelAlignment; }

// The in-register activations of PanelOutput over kCount accumulators, in vector_kernels_avx2.cc's
// operations: Clamp(x, lo, hi) is min(hi, max(lo, x)), LeakyRelu a blend on x < 0, and vmaxps returns its
// second operand when either is NaN, so NaN survives Relu as it does the operator. One switch for a whole
// block: a switch in each of a block's twelve stores made every product 2-6% slower (MobileNet's 1x1
// convolutions of depth 16), activation or not.
template <int kCount>
inline void ActivateAll(__m256* acc, const Activation& a) {
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  const __m256 alpha = _mm256_set1_ps(a.alpha), beta = _mm256_set1_ps(a.beta);
  switch (a.kind) {
    case ActivationKind::kRelu:
#pragma GCC unroll 12
      for (int i = 0; i < kCount; ++i) acc[i] = _mm256_max_ps(zero, acc[i]);
      return;
    case ActivationKind::kClip:
#pragma GCC unroll 12
      for (int i = 0; i < kCount; ++i) acc[i] = _mm256_min_ps(beta, _mm256_max_ps(alpha, acc[i]));
      return;
    case ActivationKind::kLeakyRelu:
#pragma GCC unroll 12
      for (int i = 0; i < kCount; ++i) {
        acc[i] = _mm256_blendv_ps(acc[i], _mm256_mul_ps(alpha, acc[i]), _mm256_cmp_ps(acc[i], zero, _CMP_LT_OQ));
      }
      return;
    case ActivationKind::kHardSigmoid:
#pragma GCC unroll 12
      for (int i = 0; i < kCount; ++i) {
        acc[i] = _mm256_min_ps(one, _mm256_max_ps(zero, _mm256_fmadd_ps(alpha, acc[i], beta)));
      }
      return;
    case ActivationKind::kHardSwish: {
      const __m256 sixth = _mm256_set1_ps(1.0f / 6.0f), half = _mm256_set1_ps(0.5f);
#pragma GCC unroll 12
      for (int i = 0; i < kCount; ++i) {
        acc[i] = _mm256_mul_ps(acc[i], _mm256_min_ps(one, _mm256_max_ps(zero, _mm256_fmadd_ps(acc[i], sixth, half))));
      }
      return;
    }
    default:
      return;  // kNone, and the kinds the caller applies
  }
}

// acc + C (a later depth block) or acc + bias + z (the first) for one vector of lanes [0, lanes).
inline __m256 Join(__m256 acc, int row, int64_t column, int64_t lanes, const PanelOutput& out) {
  const bool full = lanes >= kLanes;
  if (out.accumulate) {
    const float* c = out.c + row * out.ldc + column;
    return _mm256_add_ps(acc, full ? _mm256_loadu_ps(c) : _mm256_maskload_ps(c, TailMask(lanes)));
  }
  if (out.bias != nullptr) acc = _mm256_add_ps(acc, _mm256_set1_ps(out.bias[row]));
  if (out.z != nullptr) {
    const float* z = out.z + row * out.ldz + column;
    acc = _mm256_add_ps(acc, full ? _mm256_loadu_ps(z) : _mm256_maskload_ps(z, TailMask(lanes)));
  }
  return acc;
}

// Vector v of kVectors at b, the last one masked when `columns` ends inside it: B read where it lies has
// no zero padding past its columns, and the next floats may be past its end.
struct TailLoad {
  TailLoad(int64_t columns, int vectors)
      : last(vectors - 1), partial(columns < vectors * kLanes), mask(TailMask(columns - last * kLanes)) {}
  __m256 Load(const float* b, int v) const {
    return v == last && partial ? _mm256_maskload_ps(b + v * kLanes, mask) : _mm256_loadu_ps(b + v * kLanes);
  }
  int last;
  bool partial;
  __m256i mask;
};

// Writes one vector of C to the lanes [0, lanes).
inline void StoreVector(__m256 acc, int row, int64_t column, int64_t lanes, const PanelOutput& out) {
  float* c = out.c + row * out.ldc + column;
  if (lanes >= kLanes) {
    _mm256_storeu_ps(c, acc);
  } else {
    _mm256_maskstore_ps(c, TailMask(lanes), acc);
  }
}

// Where rows [row, row + kRows) of A start, when `rows` of them are the tile's. Packed, the rows are
// adjacent and zero past the tile's; read in place, a row past them may lie past A's end, so those rows
// read the last one again (their sums are never stored).
template <int kRows, bool kPacked>
void StartRows(const RowsOfA& a, int row, int rows, const float** starts) {
  const int64_t row_stride = kPacked ? 1 : a.row_stride;
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) starts[r] = a.data + (row + (kPacked || r < rows ? r : rows - 1)) * row_stride;
}

// C[rows x columns] (rows <= kRows, columns <= kVectors * 8) at (row, column) of the tile, from rows
// [row, row + kRows) of A and kVectors vectors of the B panel, whose rows are b_width floats apart. kRows
// is 4, or 2 for the last two rows of a panel (a batch of 2, 6), which a 4-row block would run at half
// speed. kPacked says A is a packed panel, whose strides are then constants.
template <int kRows, int kVectors, bool kPacked>
void MultiplyBlock(const RowsOfA& a, const float* b, int64_t depth, int64_t b_width, int row, int rows,
                   int64_t column, int64_t columns, const PanelOutput& out) {
  __m256 acc[kRows][kVectors];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm256_setzero_ps();
  }
  const float* a_rows[kRows];
  StartRows<kRows, kPacked>(a, row, rows, a_rows);
  const int64_t k_stride = kPacked ? kPanelRows : a.k_stride;
  b += column;
  const TailLoad tail(columns, kVectors);
#pragma GCC unroll 2
  for (int64_t k = 0; k < depth; ++k, b += b_width) {
    // Deep layers' weights come from L3 (a 7x7 map gives each weight only 49 uses): fetch A ahead. (A read
    // in place is an activation that the last layer left in cache.)
    if (kPacked) _mm_prefetch(reinterpret_cast<const char*>(a_rows[0] + k * k_stride + kPrefetchDistance), _MM_HINT_T0);
    __m256 bv[kVectors];
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) bv[v] = tail.Load(b, v);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a_rows[r] + k * k_stride);
#pragma GCC unroll 3
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) {
      if (v * kLanes >= columns) break;
      acc[r][v] = Join(acc[r][v], row + r, column + v * kLanes, columns - v * kLanes, out);
    }
  }
  ActivateAll<kRows * kVectors>(&acc[0][0], out.activation);  // rows past `rows` too: never stored
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) {
      if (v * kLanes >= columns) break;
      StoreVector(acc[r][v], row + r, column + v * kLanes, columns - v * kLanes, out);
    }
  }
}

// C[1 x columns] (columns <= kVectors * 8) at `row` of the tile from that row of A: a matrix-vector
// product (batch 1), where a 4-row block would spend three quarters of its FMAs on the panel's zero rows.
// Each element sums its depth in MultiplyBlock's order, so a lone row agrees to the bit with the same row
// in a block.
template <int kVectors>
void MultiplyRowVectors(const RowsOfA& rows_of_a, const float* b, int64_t depth, int64_t b_width, int row,
                        int64_t columns, const PanelOutput& out) {
  __m256 acc[kVectors];
  const float* a = rows_of_a.data + row * rows_of_a.row_stride;
#pragma GCC unroll 6
  for (int v = 0; v < kVectors; ++v) acc[v] = _mm256_setzero_ps();
  const TailLoad tail(columns, kVectors);
#pragma GCC unroll 2
  for (int64_t k = 0; k < depth; ++k, a += rows_of_a.k_stride, b += b_width) {
    const __m256 ar = _mm256_broadcast_ss(a);
#pragma GCC unroll 6
    for (int v = 0; v < kVectors; ++v) acc[v] = _mm256_fmadd_ps(ar, tail.Load(b, v), acc[v]);
  }
#pragma GCC unroll 6
  for (int v = 0; v < kVectors; ++v) acc[v] = Join(acc[v], row, v * kLanes, columns - v * kLanes, out);
  ActivateAll<kVectors>(acc, out.activation);
#pragma GCC unroll 6
  for (int v = 0; v < kVectors; ++v) StoreVector(acc[v], row, v * kLanes, columns - v * kLanes, out);
}

using RowKernel = void (*)(const RowsOfA&, const float*, int64_t, int64_t, int, int64_t, const PanelOutput&);
constexpr RowKernel kRowKernels[kPanelColumns / kLanes + 1] = {
    nullptr,
    MultiplyRowVectors<1>,
    MultiplyRowVectors<2>,
    MultiplyRowVectors<3>,
    MultiplyRowVectors<4>,
    MultiplyRowVectors<5>,
    MultiplyRowVectors<6>,
};

using BlockKernel = void (*)(const RowsOfA&, const float*, int64_t, int64_t, int, int, int64_t, int64_t,
                             const PanelOutput&);
// By A's layout (packed or in place), then by vectors.
constexpr BlockKernel kBlockKernels[2][kBlockVectors + 1] = {
    {nullptr, MultiplyBlock<kBlockRows, 1, false>, MultiplyBlock<kBlockRows, 2, false>,
     MultiplyBlock<kBlockRows, 3, false>},
    {nullptr, MultiplyBlock<kBlockRows, 1, true>, MultiplyBlock<kBlockRows, 2, true>,
     MultiplyBlock<kBlockRows, 3, true>}};
constexpr BlockKernel kPairKernels[2][kBlockVectors + 1] = {
    {nullptr, MultiplyBlock<2, 1, false>, MultiplyBlock<2, 2, false>, MultiplyBlock<2, 3, false>},
    {nullptr, MultiplyBlock<2, 1, true>, MultiplyBlock<2, 2, true>, MultiplyBlock<2, 3, true>}};

// C[rows x kColumns]: per k, the 8 rows of A's panel form one vector, multiplied by each column's
// broadcast B value; the tile is transposed through memory on the way out. Few columns would leave the
// FMAs waiting on each other's latency, so consecutive k steps go to kChains separate sums.
template <int kColumns>
void MultiplyNarrowColumns(const float* a, const float* b, int64_t depth, int64_t b_width, int rows,
                           const PanelOutput& out) {
  constexpr int kChains = kColumns >= 8 ? 1 : 8 / kColumns;
  __m256 acc[kChains][kColumns];
#pragma GCC unroll 8
  for (int s = 0; s < kChains; ++s) {
#pragma GCC unroll 8
    for (int j = 0; j < kColumns; ++j) acc[s][j] = _mm256_setzero_ps();
  }
  int64_t k = 0;
  for (; k + kChains <= depth; k += kChains) {
#pragma GCC unroll 8
    for (int s = 0; s < kChains; ++s) {
      const __m256 av = _mm256_loadu_ps(a + (k + s) * kPanelRows);
#pragma GCC unroll 8
      for (int j = 0; j < kColumns; ++j) {
        acc[s][j] = _mm256_fmadd_ps(av, _mm256_set1_ps(b[(k + s) * b_width + j]), acc[s][j]);
      }
    }
  }
  for (; k < depth; ++k) {
    const __m256 av = _mm256_loadu_ps(a + k * kPanelRows);
#pragma GCC unroll 8
    for (int j = 0; j < kColumns; ++j) acc[0][j] = _mm256_fmadd_ps(av, _mm256_set1_ps(b[k * b_width + j]), acc[0][j]);
  }
#pragma GCC unroll 8
  for (int s = 1; s < kChains; ++s) {
#pragma GCC unroll 8
    for (int j = 0; j < kColumns; ++j) acc[0][j] = _mm256_add_ps(acc[0][j], acc[s][j]);
  }
  alignas(32) float tile[kColumns][kPanelRows];
#pragma GCC unroll 8
  for (int j = 0; j < kColumns; ++j) _mm256_store_ps(tile[j], acc[0][j]);
  for (int r = 0; r < rows; ++r) {
    float* c = out.c + r * out.ldc;
    for (int j = 0; j < kColumns; ++j) {
      float value = tile[j][r];
      if (out.accumulate) {
        value += c[j];
      } else {
        if (out.bias != nullptr) value += out.bias[r];
        if (out.z != nullptr) value += out.z[r * out.ldz + j];
      }
      c[j] = value;
    }
  }
  // The activation on each finished row, as one masked vector: the same operations as the wide tiles'.
  if (out.activation.kind == ActivationKind::kNone) return;
  const __m256i mask = TailMask(kColumns);
  for (int r = 0; r < rows; ++r) {
    float* c = out.c + r * out.ldc;
    __m256 values = _mm256_maskload_ps(c, mask);
    ActivateAll<1>(&values, out.activation);
    _mm256_maskstore_ps(c, mask, values);
  }
}

using NarrowKernel = void (*)(const float*, const float*, int64_t, int64_t, int, const PanelOutput&);
constexpr NarrowKernel kNarrowKernels[kMaxNarrowColumns + 1] = {
    nullptr,
    MultiplyNarrowColumns<1>,
    MultiplyNarrowColumns<2>,
    MultiplyNarrowColumns<3>,
    MultiplyNarrowColumns<4>,
    MultiplyNarrowColumns<5>,
    MultiplyNarrowColumns<6>,
    MultiplyNarrowColumns<7>,
    MultiplyNarrowColumns<8>,
};

// One k row of a panel: `columns` floats of src, zero-padded to `width`.
void PackPanelRow(const float* src, int64_t columns, int64_t width, float* dst) {
  for (int64_t v = 0; v < width; v += kLanes) {
    const __m256 values =
        columns - v >= kLanes ? _mm256_loadu_ps(src + v) : _mm256_maskload_ps(src + v, TailMask(columns - v));
    _mm256_storeu_ps(dst + v, values);
  }
}

void PackColumns(const float* b, int64_t ldb, int64_t depth, int64_t n, float* packed) {
  for (int64_t column = 0; column < n; column += kPanelColumns) {
    const int64_t columns = n - column < kPanelColumns ? n - column : kPanelColumns;
    const int64_t width = RoundUpToPanelAlignment(columns);
    const float* src = b + column;
    for (int64_t k = 0; k < depth; ++k, src += ldb, packed += width) PackPanelRow(src, columns, width, packed);
  }
}

void PackColumnsRow(const float* row, int64_t n, int64_t depth, int64_t k, float* packed) {
  for (int64_t column = 0; column < n; column += kPanelColumns, packed += depth * kPanelColumns) {
    const int64_t columns = n - column < kPanelColumns ? n - column : kPanelColumns;
    const int64_t width = RoundUpToPanelAlignment(columns);
    PackPanelRow(row + column, columns, width, packed + k * width);
  }
}

// The 8 x 8 block whose rows are rows[0..8) transposed in place: rows[j] becomes column j.
inline void Transpose8x8(__m256* rows) {
  __m256 pairs[8], quads[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    pairs[2 * i] = _mm256_unpacklo_ps(rows[2 * i], rows[2 * i + 1]);
    pairs[2 * i + 1] = _mm256_unpackhi_ps(rows[2 * i], rows[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 8; h += 4) {
    quads[h] = _mm256_shuffle_ps(pairs[h], pairs[h + 2], _MM_SHUFFLE(1, 0, 1, 0));
    quads[h + 1] = _mm256_shuffle_ps(pairs[h], pairs[h + 2], _MM_SHUFFLE(3, 2, 3, 2));
    quads[h + 2] = _mm256_shuffle_ps(pairs[h + 1], pairs[h + 3], _MM_SHUFFLE(1, 0, 1, 0));
    quads[h + 3] = _mm256_shuffle_ps(pairs[h + 1], pairs[h + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    rows[j] = _mm256_permute2f128_ps(quads[j], quads[j + 4], 0x20);
    rows[j + 4] = _mm256_permute2f128_ps(quads[j], quads[j + 4], 0x31);
  }
}

// One panel of `rows` (<= 8) rows of row-major A: 8 k steps at a time, the rows' next 8 floats are
// transposed into 8 k steps of the panel.
void PackRowPanel(const float* a, int64_t lda, int rows, int64_t depth, float* packed) {
  for (int64_t k = 0; k < depth; k += kLanes, packed += kLanes * kPanelRows) {
    const bool full = depth - k >= kLanes;  // masked loads are slow on AMD's cores: only for the last k
    const __m256i mask = TailMask(depth - k);
    __m256 block[kPanelRows];
#pragma GCC unroll 8
    for (int r = 0; r < kPanelRows; ++r) {
      const float* src = a + r * lda + k;
      block[r] = r >= rows ? _mm256_setzero_ps() : full ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, mask);
    }
    Transpose8x8(block);
    const int64_t steps = depth - k < kLanes ? depth - k : kLanes;
    for (int j = 0; j < steps; ++j) _mm256_storeu_ps(packed + j * kPanelRows, block[j]);
  }
}

void GatherRow(const float* src, int64_t stride, int64_t n, float* dst) {
  if (stride == 1) {
    int64_t g = 0;
    for (; g + kLanes <= n; g += kLanes) _mm256_storeu_ps(dst + g, _mm256_loadu_ps(src + g));
    if (g < n) {
      const __m256i mask = TailMask(n - g);
      _mm256_maskstore_ps(dst + g, mask, _mm256_maskload_ps(src + g, mask));
    }
  } else if (stride == 2) {
    // The even lanes of 16 consecutive floats; masks keep the last loads inside the row.
    for (int64_t g = 0; g < n; g += kLanes) {
      const int64_t needed = 2 * (n - g < kLanes ? n - g : kLanes) - 1;  // floats up to the last even one
      const __m256 lo = _mm256_maskload_ps(src + 2 * g, TailMask(needed));
      const __m256 hi = _mm256_maskload_ps(src + 2 * g + kLanes, TailMask(needed - kLanes));
      // [lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6], then the middle 64-bit pairs swap places.
      const __m256 evens = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
      const __m256 ordered =
          _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), _MM_SHUFFLE(3, 1, 2, 0)));
      _mm256_maskstore_ps(dst + g, TailMask(n - g), ordered);
    }
  } else {
    for (int64_t g = 0; g < n; ++g) dst[g] = src[g * stride];
  }
}

// The vectors of the next block of a tile row that has `left` vectors to go. A block of one vector has
// four chains of FMAs, too few to hide their latency: it runs at half speed, so the last four vectors of
// a 32-column tail go 2 + 2, not 3 + 1 (an MLP's 512 columns end in one).
int64_t BlockVectors(int64_t left) {
  if (left == kBlockVectors + 1) return 2;
  return left < kBlockVectors ? left : kBlockVectors;
}

void MultiplyTile(const RowsOfA& a, const float* b_panel, int64_t b_stride, int64_t depth, int64_t columns, int rows,
                  const PanelOutput& out) {
  if (a.packed && columns <= kMaxNarrowColumns) {
    return MultiplyNarrow(a.data, b_panel, depth, b_stride, columns, rows, out);
  }
  for (int row = 0; row < rows; row += kBlockRows) {
    const int block_rows = rows - row < kBlockRows ? rows - row : kBlockRows;
    if (block_rows == 1) {
      MultiplyRow(a, b_panel, depth, b_stride, row, columns, out);
      continue;
    }
    const BlockKernel* kernels = (block_rows == 2 ? kPairKernels : kBlockKernels)[a.packed];
    for (int64_t column = 0, vectors = 0; column < columns; column += vectors * kLanes) {
      const int64_t left = columns - column;
      vectors = BlockVectors((left + kLanes - 1) / kLanes);
      kernels[vectors](a, b_panel, depth, b_stride, row, block_rows, column,
                       left < vectors * kLanes ? left : vectors * kLanes, out);
    }
  }
}

}  // namespace

void MultiplyNarrow(const float* a_panel, const float* b_panel, int64_t depth, int64_t b_width, int64_t columns,
                    int rows, const PanelOutput& out) {
  kNarrowKernels[columns](a_panel, b_panel, depth, b_width, rows, out);
}

void MultiplyRow(const RowsOfA& a, const float* b_panel, int64_t depth, int64_t b_width, int row, int64_t columns,
                 const PanelOutput& out) {
  kRowKernels[(columns + kLanes - 1) / kLanes](a, b_panel, depth, b_width, row, columns, out);
}

void PackRows(const float* a, int64_t lda, bool transposed, int64_t rows, int64_t depth, float* packed) {
  for (int64_t row = 0; row < rows; row += kPanelRows, packed += kPanelRows * depth) {
    const int panel_rows = rows - row < kPanelRows ? static_cast<int>(rows - row) : kPanelRows;
    if (!transposed) {
      PackRowPanel(a + row * lda, lda, panel_rows, depth, packed);
      continue;
    }
    // A^T stores each k's rows side by side: one vector per k, masked only for a partial panel.
    const __m256i mask = TailMask(panel_rows);
    for (int64_t k = 0; k < depth; ++k) {
      const float* src = a + k * lda + row;
      _mm256_storeu_ps(packed + k * kPanelRows,
                       panel_rows == kPanelRows ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, mask));
    }
  }
}

}  // namespace avx2

const MicroKernels kAvx2Kernels = {
    .pack_rows = avx2::PackRows,
    .pack_columns = avx2::PackColumns,
    .pack_columns_row = avx2::PackColumnsRow,
    .gather_row = avx2::GatherRow,
    .multiply_tile = avx2::MultiplyTile,
};

}  // namespace onnxserve::packed
