// BLAS lowering shared by MatMul, Gemm, Conv and ConvTranspose: a row-major GEMM over OpenBLAS that
// parallelizes on our intra-op pool, and the im2col/col2im transforms that lower convolutions onto it.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/core/tensor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/math/conv_shape.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

// ---- numpy.matmul planning (MatMul, MatMulInteger, QLinearMatMul) ----------------------------------------

// A batch of [m,k] x [k,n] products. 1-D operands become a [1,k] row / [k,1] column whose unit dim the
// output drops; batch dims broadcast.
struct MatMulPlan {
  int64_t m = 1, n = 1, k = 1;
  Shape batch;                                         // broadcast batch dims of the output
  std::array<std::vector<int64_t>, 2> batch_strides;  // per operand, in matrices (0 along broadcast dims)
  int64_t b_matrices = 1;                              // how many matrices B holds
  Shape output;
};

absl::StatusOr<MatMulPlan> PlanMatMul(const Shape& a, const Shape& b);

// For each output matrix, in output order, the index of the A matrix and of the B matrix it multiplies.
std::vector<std::pair<int64_t, int64_t>> MatrixPairs(const MatMulPlan& plan);


// C[M,N] = alpha * op(A) * op(B) + beta * C, all row-major, op(X) = X^T when trans_X.
// lda/ldb/ldc are the row strides of A, B and C as stored. T: float, double (cblas), int32_t, int64_t,
// uint32_t, uint64_t (a plain loop; integer alpha/beta are 1/0 in practice, see the overloads' callers).
//
// Threads: OpenBLAS is pinned to one thread at first use so that `--threads N` means N threads in total;
// when `pool` is given and the product is big enough, the output is split into column (or row) blocks,
// one cblas call per pool thread. With pool == nullptr the call runs on the calling thread only.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc, ThreadPool* pool);

// float16 and bfloat16 compute in float (OpenBLAS has no half GEMM): inputs are widened into float
// copies, the float result narrowed into the output.
inline bool IsHalfType(DataType t) { return t == DataType::kFloat16 || t == DataType::kBFloat16; }
// A float copy of a float16/bfloat16 tensor (its shape kept); nullptr stays nullptr.
Tensor WidenToFloat(const Tensor* t);
// out[i] = narrow(f[i]); `out` is float16 or bfloat16 with as many elements as `f`.
void NarrowFromFloat(const Tensor& f, Tensor& out);

// The spatial geometry of a convolution, one entry per spatial axis. For Conv the "image" is the input
// and the "grid" the output; for ConvTranspose the image is the output and the grid the input. Both read
// image[g * stride - pad_begin + k * dilation] for grid position g and kernel offset k.
// Inline up to 3-D: a Conv of a small map computes in a few microseconds, and six heap vectors per call
// were a tenth of the keyword spotter's time outside its kernels.
struct ConvGeometry {
  using Dims = absl::InlinedVector<int64_t, 3>;
  Dims image;   // spatial dims of the tensor that im2col reads / col2im writes
  Dims grid;    // spatial dims of the GEMM's column space
  Dims kernel;
  Dims strides;
  Dims dilations;
  Dims pad_begin;

  int64_t ImageSize() const;
  int64_t GridSize() const;
  int64_t KernelSize() const;
  // A 1x1 kernel, stride 1, no padding, same image and grid: the image already is the column matrix.
  bool IsPointwise() const;
  // A 2-D geometry as the math kernels take it (oneDNN's paths, Winograd3x3), for `batch` images.
  ConvShape2D Shape2D(int64_t batch) const;
  // An attribute's values, or `rank` ones where the model left it out (strides, dilations).
  static Dims OrOnes(const std::vector<int64_t>& given, size_t rank);
};

// Attributes common to Conv and ConvTranspose, parsed and checked once at load.
struct ConvAttributes {
  enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  std::vector<int64_t> kernel_shape;  // empty: taken from W
  std::vector<int64_t> strides;       // empty: all 1
  std::vector<int64_t> dilations;     // empty: all 1
  std::vector<int64_t> pads;          // empty: all 0; else [begin..., end...]

  absl::Status Parse(const KernelInfo& info);
  // Fills kernel/strides/dilations with defaults for `spatial_rank` axes, checking the given lengths and
  // that kernel_shape, when given, matches W's spatial dims.
  absl::Status Resolve(absl::Span<const int64_t> weight_spatial, ConvGeometry* geometry) const;
  // Conv's output: the grid and begin pads from geometry's image (set), kernel, strides and dilations
  // (Resolve) and the padding mode; the grid's size is checked.
  absl::Status PlaceOutput(ConvGeometry& geometry) const;
};

// col[(c * K + kk), g] = image[c][...] for `channels` channels: rows are (channel, kernel offset), columns
// grid positions; out-of-image reads are 0. Splits channels over `pool`.
template <typename T>
void Im2Col(const ConvGeometry& geo, int64_t channels, const T* image, T* col, ThreadPool& pool);

// Im2Col of the 2-D grid rows [row_begin, row_end) only (geo has 2 spatial axes): col is
// [channels * K, (row_end - row_begin) * grid[1]]. Lets Conv build one cache-sized column block at a time.
template <typename T>
void Im2ColRows(const ConvGeometry& geo, int64_t channels, const T* image, int64_t row_begin, int64_t row_end,
                T* col, ThreadPool& pool);

// Columns [n_begin, n_begin + n) of row k of the 2-D im2col matrix of `image` (every channel): what
// PackedGemm asks for, row by row, as it packs each cache block of the columns. It copies with the packed
// path's vector instructions, so only that path, which has checked PackedGemmSupported(), may call it.
void Im2ColRow(const ConvGeometry& geo, const float* image, int64_t k, int64_t n_begin, int64_t n, float* row);

// The adjoint of Im2Col: image[c][...] += col[(c * K + kk), g]. The caller zeroes (or biases) the image
// first. Splits channels over `pool` (each channel's image is written by one thread).
template <typename T>
void Col2Im(const ConvGeometry& geo, int64_t channels, const T* col, T* image, ThreadPool& pool);

}  // namespace onnxserve
