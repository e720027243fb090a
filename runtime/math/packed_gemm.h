// A float GEMM for products with one operand known at load: convolution weights (the left operand, W x
// columns) and MatMul/Gemm weights (the right one, X x W). The weights are packed once, into the layout
// the micro-kernel streams, when a model compiles; each run packs only the other operand (im2col columns,
// the input itself), block by cache-sized block. Bias, a residual and the piecewise-linear activations
// (runtime/math/activation.h) are applied as each tile of C leaves the registers, the transcendental ones
// on each finished tile while it is in L1, so C is written once per depth block and never re-read from
// memory for them.
//
// Micro-kernels exist for AVX2 + FMA and for AVX-512F (runtime/math/isa.h picks one); on a CPU with
// neither, PackedGemmSupported() is false and callers keep their OpenBLAS path.
#pragma once

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "runtime/core/tensor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/math/activation.h"

namespace onnxserve {

// Whether this CPU runs the packed micro-kernels (ActiveIsa() is AVX2 or better).
bool PackedGemmSupported();

// dst[g] = src[g * stride] for g in [0, n) with the packed path's vector instructions: im2col's copy of one
// grid row. Only for callers that have checked PackedGemmSupported().
void GatherRow(const float* src, int64_t stride, int64_t n, float* dst);

// A constant left operand, row-major [rows x depth], packed in panels of 8 rows (8 floats per k, zero past
// `rows`), depth block by depth block: a block's slices of all the panels lie together, in the order the
// product reads them, so that a thread streams its rows of W as one run per block. Panel by panel (each
// panel's whole depth together), a block's pass read 8 runs some 150 KiB apart, which the prefetchers lost
// at every jump: ResNet-50's 7x7-stage 1x1 Convs, whose 4 MB of weights stream from memory, took 1.1-1.25
// times as long (AVX2, one and two threads).
class PackedRows {
 public:
  PackedRows(const float* a, int64_t rows, int64_t depth, int64_t lda);

  int64_t rows() const { return rows_; }
  int64_t depth() const { return depth_; }
  // Panel p's slice of the depth block that starts at k: rows [8p, 8p + 8), 8 floats per k to the block's
  // end.
  const float* panel(int64_t p, int64_t k) const;

 private:
  int64_t rows_, depth_, panels_, depth_block_;
  Tensor data_;
};

// A constant right operand [depth x columns], scaled by `scale`, packed in panels of 48 columns. Given as
// stored: row-major B (ldb its row stride), or, when `transposed`, B^T row-major (Gemm's transB = 1).
class PackedColumns {
 public:
  PackedColumns(const float* b, int64_t depth, int64_t columns, int64_t ldb, bool transposed, float scale);

  int64_t depth() const { return depth_; }
  int64_t columns() const { return columns_; }
  const float* data() const { return data_.data<float>(); }

 private:
  int64_t depth_, columns_;
  Tensor data_;
};

// What joins the product in C.
struct GemmEpilogue {
  const float* bias = nullptr;  // added to each row of C, one value per row
  const float* z = nullptr;     // added element by element: [rows x n] with row stride ldz (may be C itself;
  int64_t ldz = 0;              // 0 repeats one row: a bias per column)
  Activation activation;        // applied last
};

// C[a.rows() x n] = activation(A * B + bias + z), B row-major [a.depth() x n] with row stride ldb, C with row
// stride ldc. Splits columns (or, when they are few, rows) over `pool`; a null pool: the calling thread.
void PackedGemm(const PackedRows& a, int64_t n, const float* b, int64_t ldb, float* c, int64_t ldc,
                const GemmEpilogue& epilogue, ThreadPool* pool);

// Writes columns [n_begin, n_begin + n) of row k of B into `row`. Called from pool threads, row by row of
// each cache block just before it is packed, so B never exists whole (im2col columns).
using ColumnRowFn = absl::FunctionRef<void(int64_t k, int64_t n_begin, int64_t n, float* row)>;

// The same product with B's rows made on the fly.
void PackedGemm(const PackedRows& a, int64_t n, ColumnRowFn rows, float* c, int64_t ldc,
                const GemmEpilogue& epilogue, ThreadPool* pool);

// C[m x b.columns()] = activation(A * B + bias + z) with A [m x b.depth()] given as stored: row-major (lda its
// row stride), or, when `transposed_a`, A^T row-major. Splits B's panels (or, when few, rows) over `pool`
// (null: the calling thread).
void PackedGemm(const float* a, int64_t m, int64_t lda, bool transposed_a, const PackedColumns& b, float* c,
                int64_t ldc, const GemmEpilogue& epilogue, ThreadPool* pool);

}  // namespace onnxserve
