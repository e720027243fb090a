// The micro-kernels behind PackedGemm, one instruction set per file, each file compiled for its own
// instruction set and only called after a CPU check (ActiveIsa()). This header and those files stay free
// of inline functions and standard library templates: a copy instantiated in an AVX-512 file could be the
// one the linker keeps for everyone, and would then run AVX-512 code on a CPU without it.
#pragma once

#include <cstdint>

#include "runtime/math/activation.h"

namespace onnxserve::packed {

// Rows of A one micro-kernel multiplies at once: A is packed in panels of this many rows.
inline constexpr int kPanelRows = 8;
// Columns of B per packed panel. The last panel of a block is narrower: its width rounded up to
// kPanelAlignment, the floats of one AVX-512 vector (two AVX2 ones), so every ISA shares one layout.
inline constexpr int kPanelColumns = 48;
inline constexpr int kPanelAlignment = 16;
// Leftover columns up to this many take a narrow kernel that runs down A's rows instead of B's columns.
inline constexpr int kMaxNarrowColumns = 8;

// Where one panel's product goes, and what joins it on the way out.
struct PanelOutput {
  float* c;
  int64_t ldc;
  // C += product (a later depth block); otherwise C = product + bias + z.
  bool accumulate;
  const float* bias;  // one per row of the panel, or nullptr
  const float* z;     // added element by element, [rows x n] with row stride ldz, or nullptr
  int64_t ldz;
  // Applied after everything else in the last depth block (kNone before it), in the registers, with the
  // very operations of the vector kernels' loops (vector_kernels_simd.inc), so results agree with the
  // standalone operators to the bit: Relu (NaN passes through), Clip, LeakyRelu, HardSigmoid, HardSwish.
  // The callers apply the others to each stored tile.
  Activation activation;
};

// The rows of A a tile multiplies: element (i, k) at data[i * row_stride + k * k_stride]. A packed panel
// is {panel, true, 1, kPanelRows}, its rows past the tile's zero; A read where it lies is {a, false, lda,
// 1}, or {a, false, 1, lda} for A^T row-major, and its rows past the tile's are never read.
struct RowsOfA {
  const float* data;
  bool packed;
  int64_t row_stride;
  int64_t k_stride;
};

// One instruction set's kernels.
struct MicroKernels {
  // Packs A[rows x depth] into panels of kPanelRows rows (kPanelRows floats per k, zero past `rows`; panel
  // p at packed + p * kPanelRows * depth). Row-major A has element (i, k) at a[i * lda + k]; `transposed`,
  // at a[k * lda + i] (A^T row-major).
  void (*pack_rows)(const float* a, int64_t lda, bool transposed, int64_t rows, int64_t depth, float* packed);
  // Packs B[depth x n] (row stride ldb) into column panels: panel j holds columns [48j, 48j + width) for
  // every k, width floats per k, zero-padded past n.
  void (*pack_columns)(const float* b, int64_t ldb, int64_t depth, int64_t n, float* packed);
  // Row k of a pack_columns block of `depth` rows from `row` (n floats): the same layout, filled one row at
  // a time by callers that build B's rows on the fly.
  void (*pack_columns_row)(const float* row, int64_t n, int64_t depth, int64_t k, float* packed);
  // dst[g] = src[g * stride] for g in [0, n): im2col's copy of one grid row, vectorized for strides 1, 2.
  void (*gather_row)(const float* src, int64_t stride, int64_t n, float* dst);
  // C[rows x columns] at out.c (columns <= kPanelColumns, rows <= kPanelRows) from `rows` rows of A and one
  // B panel of `depth` rows, b_stride floats apart: a packed panel's width, or B's own row stride when B is
  // read where it lies. Only the first `columns` floats of each B row are read. A's layout does not change
  // the result; a packed panel makes a tile of at most kMaxNarrowColumns columns faster.
  void (*multiply_tile)(const RowsOfA& a, const float* b_panel, int64_t b_stride, int64_t depth, int64_t columns,
                        int rows, const PanelOutput& out);
};

extern const MicroKernels kAvx2Kernels;    // needs AVX2 and FMA
extern const MicroKernels kAvx512Kernels;  // needs AVX-512F (and so AVX2 and FMA)

namespace avx2 {
// The narrow kernel (columns <= kMaxNarrowColumns), in AVX2: the AVX-512 tile calls it too, since its
// vectors are a panel's 8 rows.
void MultiplyNarrow(const float* a_panel, const float* b_panel, int64_t depth, int64_t b_width, int64_t columns,
                    int rows, const PanelOutput& out);
// Row `row` of C[. x columns] (columns <= kPanelColumns) from that row of A, with 8-wide vectors of B: a
// matrix-vector product, which the AVX-512 tile, 8 rows high, sends here too.
void MultiplyRow(const RowsOfA& a, const float* b_panel, int64_t depth, int64_t b_width, int row, int64_t columns,
                 const PanelOutput& out);
// MicroKernels::pack_rows, which the AVX-512 table shares: 8-float rows are what an 8-row panel transposes.
void PackRows(const float* a, int64_t lda, bool transposed, int64_t rows, int64_t depth, float* packed);
}  // namespace avx2

}  // namespace onnxserve::packed
