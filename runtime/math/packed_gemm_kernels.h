// The micro-kernels behind PackedGemm, one instruction set per file. Each file is compiled for its own
// instruction set and only called after a CPU check, so this header and those files stay free of standard
// library templates: an inline function instantiated there could be the copy the linker keeps for
// everyone, and would then run AVX-512 code on a CPU without it.
#pragma once

#include <cstdint>

namespace onnxserve::avx512 {

// Rows of A one micro-kernel multiplies at once: A is packed in panels of this many rows.
inline constexpr int kPanelRows = 8;
// Columns of B per packed panel. The last panel of a block is narrower: its width rounded up to 16.
inline constexpr int kPanelColumns = 48;

// Where one panel's product goes, and what joins it on the way out.
struct PanelOutput {
  float* c;
  int64_t ldc;
  // C += product (a later depth block); otherwise C = product + bias + z.
  bool accumulate;
  const float* bias;  // one per row of the panel, or nullptr
  const float* z;     // added element by element, [rows x n] with row stride ldz, or nullptr
  int64_t ldz;
  bool relu;  // max(C, 0) after everything else (the last depth block); NaN passes through
};

// Floats PackColumns writes for a [depth x n] block.
int64_t PackedColumnsSize(int64_t depth, int64_t n);

// Packs B[depth x n] (row stride ldb) into column panels: panel j holds columns [48j, 48j + width) for
// every k, width floats per k, zero-padded past n.
void PackColumns(const float* b, int64_t ldb, int64_t depth, int64_t n, float* packed);

// dst[g] = src[g * stride] for g in [0, n): im2col's copy of one grid row, vectorized for strides 1 and 2.
void GatherRow(const float* src, int64_t stride, int64_t n, float* dst);

// Row k of a PackColumns block of `depth` rows from `row` (n floats): the same layout, filled one row at a
// time by callers that build B's rows on the fly.
void PackColumnsRow(const float* row, int64_t n, int64_t depth, int64_t k, float* packed);

// C[rows x columns] at out.c (columns <= kPanelColumns) from one A panel (kPanelRows x depth, kPanelRows
// floats per k, rows past `rows` zero) and one B panel of `depth` rows (columns rounded up to 16 floats
// per k).
void MultiplyTile(const float* a_panel, const float* b_panel, int64_t depth, int64_t columns, int rows,
                  const PanelOutput& out);

}  // namespace onnxserve::avx512
