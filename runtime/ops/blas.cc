#include "runtime/ops/blas.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/run_limits.h"
#include "runtime/core/status_macros.h"
#include "runtime/math/packed_gemm.h"
#include "runtime/ops/common.h"
#include "runtime/ops/window.h"

namespace onnxserve {
namespace {

// OpenBLAS would otherwise start one thread per core in every call, on top of our pool and of the other
// requests the server runs at once. One BLAS thread per caller makes `--threads N` mean N threads.
[[maybe_unused]] const bool kBlasSingleThreaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

// Below this many multiply-adds a GEMM is not worth waking the pool for.
constexpr int64_t kMinParallelGemmWork = int64_t{1} << 18;
// Column blocks narrower than this lose more to packing than they gain from a second thread.
constexpr int64_t kMinGemmBlock = 16;

void BlasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
              lda, b, ldb, beta, c, ldc);
}

void BlasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
              const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
              lda, b, ldb, beta, c, ldc);
}

// Integer GEMM as numpy does it: wrapping arithmetic (done unsigned, where overflow is defined).
template <typename T>
void LoopGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
              int64_t ldb, T beta, T* c, int64_t ldc) {
  using U = std::make_unsigned_t<T>;
  for (int64_t i = 0; i < m; ++i) {
    U* row = reinterpret_cast<U*>(c + i * ldc);
    for (int64_t j = 0; j < n; ++j) row[j] = beta == T{0} ? U{0} : row[j] * static_cast<U>(beta);
    for (int64_t p = 0; p < k; ++p) {
      const U aip = static_cast<U>(alpha) * static_cast<U>(ta ? a[p * lda + i] : a[i * lda + p]);
      if (tb) {
        for (int64_t j = 0; j < n; ++j) row[j] += aip * static_cast<U>(b[j * ldb + p]);
      } else {
        const T* brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += aip * static_cast<U>(brow[j]);
      }
    }
  }
}

template <typename T>
void UninterruptedGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                       const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  StopIfRunEnded(m * n * k);
  if constexpr (std::is_floating_point_v<T>) {
    BlasGemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    LoopGemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

// Multiply-adds one BLAS call may take: a product larger than this (a second or more) is made in blocks of
// rows or columns, so that a run past its deadline stops between them.
constexpr int64_t kMaxUninterruptedGemm = int64_t{1} << 28;
// Blocks are whole multiples of this many rows or columns: OpenBLAS's kernels take edge rows differently,
// so aligned blocks keep the same rows at the edges as one call would.
constexpr int64_t kGemmBlockAlignment = 64;

template <typename T>
void SerialGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m * n * k <= kMaxUninterruptedGemm) return UninterruptedGemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const bool rows = m >= n;
  const int64_t extent = rows ? m : n, other = rows ? n : m;
  const int64_t block =
      std::max<int64_t>(1, kMaxUninterruptedGemm / (other * k) / kGemmBlockAlignment) * kGemmBlockAlignment;
  for (int64_t begin = 0; begin < extent; begin += block) {
    const int64_t size = std::min(block, extent - begin);
    if (rows) {
      UninterruptedGemm(ta, tb, size, n, k, alpha, ta ? a + begin : a + begin * lda, lda, b, ldb, beta,
                        c + begin * ldc, ldc);
    } else {
      UninterruptedGemm(ta, tb, m, size, k, alpha, a, lda, tb ? b + begin * ldb : b + begin, ldb, beta, c + begin,
                        ldc);
    }
  }
}

// The grid positions g in [0, n) whose image coordinate g * stride + offset lies in [0, width).
std::pair<int64_t, int64_t> ValidRange(int64_t width, int64_t offset, int64_t stride, int64_t n) {
  const int64_t lo = std::clamp<int64_t>(CeilDiv(-offset, stride), 0, n);
  const int64_t hi = std::clamp<int64_t>(CeilDiv(width - offset, stride), lo, n);
  return {lo, hi};
}

// dst[g] = src[g * stride + offset] inside the image, 0 outside.
template <typename T>
void GatherRow(const T* src, int64_t width, int64_t offset, int64_t stride, int64_t n, T* dst) {
  const auto [lo, hi] = ValidRange(width, offset, stride, n);
  std::fill(dst, dst + lo, T{});
  // Only when some position reads the image: src + offset alone may lie 2^61 elements outside it.
  if (stride == 1 && lo < hi) {
    std::copy(src + (lo + offset), src + (hi + offset), dst + lo);
  } else {
    for (int64_t g = lo; g < hi; ++g) dst[g] = src[g * stride + offset];
  }
  std::fill(dst + hi, dst + n, T{});
}

// Grid rows [row_begin, row_end) of tap (kh, kw)'s im2col row of one channel of a 2-D image, at `col`: the
// grid rows and columns that read inside the image are computed once, so the inner loop is a plain copy
// (memcpy at stride 1) framed by zero fills, with no per-element bounds checks.
template <typename T>
void Im2ColTapRows(const ConvGeometry& geo, const T* image, int64_t kh, int64_t kw, int64_t row_begin,
                   int64_t row_end, T* col) {
  const int64_t height = geo.image[0], width = geo.image[1], cols = geo.grid[1];
  const int64_t row_stride = geo.strides[0], col_stride = geo.strides[1];
  const int64_t row_offset = kh * geo.dilations[0] - geo.pad_begin[0];
  const auto [row_lo, row_hi] = ValidRange(height, row_offset, row_stride, geo.grid[0]);
  const int64_t first = std::clamp(row_lo, row_begin, row_end), last = std::clamp(row_hi, first, row_end);
  const int64_t col_offset = kw * geo.dilations[1] - geo.pad_begin[1];
  const auto [lo, hi] = ValidRange(width, col_offset, col_stride, cols);
  std::fill(col, col + (first - row_begin) * cols, T{});
  for (int64_t r = first; r < last; ++r) {
    const T* src = image + (r * row_stride + row_offset) * width;
    T* dst = col + (r - row_begin) * cols;
    std::fill(dst, dst + lo, T{});
    // Only when some column reads the image: src + col_offset alone may lie far outside it.
    if (col_stride == 1 && lo < hi) {
      std::memcpy(dst + lo, src + (lo + col_offset), (hi - lo) * sizeof(T));
    } else {
      for (int64_t g = lo; g < hi; ++g) dst[g] = src[g * col_stride + col_offset];
    }
    std::fill(dst + hi, dst + cols, T{});
  }
  std::fill(col + (last - row_begin) * cols, col + (row_end - row_begin) * cols, T{});
}

// Im2Col of grid rows [row_begin, row_end) of one channel of a 2-D image, the common case. Kernel rows
// `shift` = stride / dilation apart read image rows one grid row apart, so a tap's rows but the last are
// the rows of the tap `shift` kernel rows above it, moved up one grid row: one copy, and one grid row to
// gather (a keyword spotter's 10x4 stride-2 stem gathers 2 of its 10 kernel rows, not all 10, at 5 floats
// a grid row).
template <typename T>
void Im2Col2D(const ConvGeometry& geo, const T* image, int64_t row_begin, int64_t row_end, T* col) {
  const int64_t cols = geo.grid[1], block_size = (row_end - row_begin) * cols;
  // No kernel row has a tap `shift` rows above it when the stride spans the kernel (and then `shift` can be
  // as large as a hostile stride, whose product below would overflow).
  const int64_t rows_apart = geo.strides[0] % geo.dilations[0] == 0 ? geo.strides[0] / geo.dilations[0] : 0;
  const int64_t shift = rows_apart < geo.kernel[0] ? rows_apart : 0;
  const int64_t tap_above = shift * geo.kernel[1] * block_size;  // floats back to that tap's rows
  for (int64_t kh = 0; kh < geo.kernel[0]; ++kh) {
    for (int64_t kw = 0; kw < geo.kernel[1]; ++kw, col += block_size) {
      if (shift == 0 || kh < shift || block_size == 0) {
        Im2ColTapRows(geo, image, kh, kw, row_begin, row_end, col);
        continue;
      }
      std::memcpy(col, col - tap_above + cols, (block_size - cols) * sizeof(T));
      Im2ColTapRows(geo, image, kh, kw, row_end - 1, row_end, col + block_size - cols);
    }
  }
}

// dst[g * stride + offset] += src[g] inside the image.
template <typename T>
void ScatterAddRow(const T* src, int64_t width, int64_t offset, int64_t stride, int64_t n, T* dst) {
  const auto [lo, hi] = ValidRange(width, offset, stride, n);
  for (int64_t g = lo; g < hi; ++g) dst[g * stride + offset] += src[g];
}

// Walks the rows of one channel's column matrix: for each kernel offset and each run of grid positions
// along the last axis, calls row(kk, image_offset or -1 when outside the image, last_axis_offset, col_pos).
template <typename RowFn>
void ForEachColumnRun(const ConvGeometry& geo, RowFn&& row) {
  const size_t rank = geo.image.size();
  const size_t last = rank - 1;
  std::vector<int64_t> image_strides(rank, 1);
  for (size_t d = last; d-- > 0;) image_strides[d] = image_strides[d + 1] * geo.image[d + 1];
  std::vector<int64_t> koff(rank, 0), gidx(rank, 0);
  // An empty grid (a 0-sized input axis, which a request may send) has no column rows to walk; dividing by
  // its last axis below would trap.
  if (geo.GridSize() == 0) return;
  const int64_t kernel_size = geo.KernelSize();
  const int64_t runs = geo.GridSize() / geo.grid[last];
  for (int64_t kk = 0; kk < kernel_size; ++kk) {
    for (size_t d = rank, rest = kk; d-- > 0;) {
      koff[d] = static_cast<int64_t>(rest % geo.kernel[d]);
      rest /= geo.kernel[d];
    }
    std::fill(gidx.begin(), gidx.end(), 0);
    for (int64_t run = 0; run < runs; ++run) {
      int64_t image_offset = 0;
      for (size_t d = 0; d < last && image_offset >= 0; ++d) {
        const int64_t x = gidx[d] * geo.strides[d] - geo.pad_begin[d] + koff[d] * geo.dilations[d];
        image_offset = x < 0 || x >= geo.image[d] ? -1 : image_offset + x * image_strides[d];
      }
      const int64_t last_offset = koff[last] * geo.dilations[last] - geo.pad_begin[last];
      row(kk, image_offset, last_offset, run * geo.grid[last]);
      for (size_t d = last; d-- > 0;) {
        if (++gidx[d] < geo.grid[d]) break;
        gidx[d] = 0;
      }
    }
  }
}

}  // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc, ThreadPool* pool) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // cblas may leave C untouched for an empty product; the contract is C = beta * C.
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T{0} ? T{0} : c[i * ldc + j] * beta;
    }
    return;
  }
  const bool parallel = pool != nullptr && pool->num_threads() > 1 && m * n * k >= kMinParallelGemmWork &&
                        std::max(m, n) >= 2 * kMinGemmBlock;
  if (!parallel) return SerialGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (n >= m) {
    pool->ParallelFor(n, kMinGemmBlock, [&](int64_t begin, int64_t end) {
      const T* b_block = trans_b ? b + begin * ldb : b + begin;
      SerialGemm(trans_a, trans_b, m, end - begin, k, alpha, a, lda, b_block, ldb, beta, c + begin, ldc);
    });
  } else {
    pool->ParallelFor(m, kMinGemmBlock, [&](int64_t begin, int64_t end) {
      const T* a_block = trans_a ? a + begin : a + begin * lda;
      SerialGemm(trans_a, trans_b, end - begin, n, k, alpha, a_block, lda, b, ldb, beta, c + begin * ldc, ldc);
    });
  }
}

#define ONNXSERVE_INSTANTIATE_GEMM(T)                                                                       \
  template void Gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, \
                        T*, int64_t, ThreadPool*)
ONNXSERVE_INSTANTIATE_GEMM(float);
ONNXSERVE_INSTANTIATE_GEMM(double);
ONNXSERVE_INSTANTIATE_GEMM(int32_t);
ONNXSERVE_INSTANTIATE_GEMM(int64_t);
ONNXSERVE_INSTANTIATE_GEMM(uint32_t);
ONNXSERVE_INSTANTIATE_GEMM(uint64_t);
#undef ONNXSERVE_INSTANTIATE_GEMM

Tensor WidenToFloat(const Tensor* t) {
  if (t == nullptr) return Tensor();
  Tensor f(DataType::kFloat, t->shape());
  float* out = f.data<float>();
  if (t->dtype() == DataType::kFloat16) {
    for (Float16 v : t->values<Float16>()) *out++ = static_cast<float>(v);
  } else {
    for (BFloat16 v : t->values<BFloat16>()) *out++ = static_cast<float>(v);
  }
  return f;
}

void NarrowFromFloat(const Tensor& f, Tensor& out) {
  const float* in = f.data<float>();
  if (out.dtype() == DataType::kFloat16) {
    for (Float16& v : out.mutable_values<Float16>()) v = Float16(*in++);
  } else {
    for (BFloat16& v : out.mutable_values<BFloat16>()) v = BFloat16(*in++);
  }
}

ConvShape2D ConvGeometry::Shape2D(int64_t batch) const {
  // The zeros the last window reads past the image. Below zero (a 1x1 at stride 2 of an even image leaves
  // its last column unread) it is 0 for oneDNN: its formula for the output size then still gives ours,
  // since the unread part is shorter than a stride.
  auto pad_end = [&](int d) {
    const int64_t extent = (kernel[d] - 1) * dilations[d] + 1;
    return std::max<int64_t>(0, (grid[d] - 1) * strides[d] + extent - image[d] - pad_begin[d]);
  };
  return {.batch = batch,
          .in_h = image[0],
          .in_w = image[1],
          .out_h = grid[0],
          .out_w = grid[1],
          .stride_h = strides[0],
          .stride_w = strides[1],
          .dilation_h = dilations[0],
          .dilation_w = dilations[1],
          .pad_top = pad_begin[0],
          .pad_left = pad_begin[1],
          .pad_bottom = pad_end(0),
          .pad_right = pad_end(1)};
}

ConvGeometry::Dims ConvGeometry::OrOnes(const std::vector<int64_t>& given, size_t rank) {
  return given.empty() ? Dims(rank, 1) : Dims(given.begin(), given.end());
}

int64_t ConvGeometry::ImageSize() const { return NumElements(image); }
int64_t ConvGeometry::GridSize() const { return NumElements(grid); }
int64_t ConvGeometry::KernelSize() const { return NumElements(kernel); }

bool ConvGeometry::IsPointwise() const {
  for (size_t d = 0; d < image.size(); ++d) {
    if (kernel[d] != 1 || strides[d] != 1 || pad_begin[d] != 0 || image[d] != grid[d]) return false;
  }
  return true;
}

absl::Status ConvAttributes::Parse(const KernelInfo& info) {
  ASSIGN_OR_RETURN(std::string pad, info.Attr<std::string>("auto_pad", "NOTSET"));
  if (pad == "NOTSET") {
    auto_pad = AutoPad::kNotSet;
  } else if (pad == "SAME_UPPER") {
    auto_pad = AutoPad::kSameUpper;
  } else if (pad == "SAME_LOWER") {
    auto_pad = AutoPad::kSameLower;
  } else if (pad == "VALID") {
    auto_pad = AutoPad::kValid;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("auto_pad \"", pad, "\": expected NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
  }
  ASSIGN_OR_RETURN(group, info.Attr<int64_t>("group", 1));
  if (group < 1) return absl::InvalidArgumentError(absl::StrCat("group ", group, ": expected >= 1"));
  ASSIGN_OR_RETURN(kernel_shape, info.Attr<std::vector<int64_t>>("kernel_shape", {}));
  ASSIGN_OR_RETURN(strides, info.Attr<std::vector<int64_t>>("strides", {}));
  ASSIGN_OR_RETURN(dilations, info.Attr<std::vector<int64_t>>("dilations", {}));
  ASSIGN_OR_RETURN(pads, info.Attr<std::vector<int64_t>>("pads", {}));
  auto check_positive = [](const char* name, const std::vector<int64_t>& values) -> absl::Status {
    if (std::all_of(values.begin(), values.end(), [](int64_t v) { return v >= 1; })) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(name, " [", absl::StrJoin(values, ","), "]: expected positive values"));
  };
  RETURN_IF_ERROR(check_positive("kernel_shape", kernel_shape));
  RETURN_IF_ERROR(check_positive("strides", strides));
  RETURN_IF_ERROR(check_positive("dilations", dilations));
  if (std::any_of(pads.begin(), pads.end(), [](int64_t v) { return v < 0; })) {
    return absl::InvalidArgumentError(absl::StrCat("pads [", absl::StrJoin(pads, ","), "]: expected >= 0"));
  }
  return absl::OkStatus();
}

absl::Status ConvAttributes::Resolve(absl::Span<const int64_t> weight_spatial, ConvGeometry* geo) const {
  const size_t rank = weight_spatial.size();
  auto check = [rank](const char* name, const std::vector<int64_t>& v, size_t expected) -> absl::Status {
    if (v.empty() || v.size() == expected) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(name, " has ", v.size(), " values, expected ", expected,
                                                   " for ", rank, " spatial axes"));
  };
  RETURN_IF_ERROR(check("kernel_shape", kernel_shape, rank));
  RETURN_IF_ERROR(check("strides", strides, rank));
  RETURN_IF_ERROR(check("dilations", dilations, rank));
  RETURN_IF_ERROR(check("pads", pads, 2 * rank));
  if (!kernel_shape.empty() && !std::equal(kernel_shape.begin(), kernel_shape.end(), weight_spatial.begin())) {
    return absl::InvalidArgumentError(absl::StrCat("kernel_shape [", absl::StrJoin(kernel_shape, ","),
                                                   "] does not match W's spatial dims ",
                                                   ShapeToString(weight_spatial)));
  }
  geo->kernel.assign(weight_spatial.begin(), weight_spatial.end());
  geo->strides = ConvGeometry::OrOnes(strides, rank);
  geo->dilations = ConvGeometry::OrOnes(dilations, rank);
  return absl::OkStatus();
}

absl::Status ConvAttributes::PlaceOutput(ConvGeometry& geo) const {
  const size_t rank = geo.image.size();
  geo.grid.resize(rank);
  geo.pad_begin.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = geo.image[d], stride = geo.strides[d];
    ASSIGN_OR_RETURN(const int64_t extent, DilatedExtent(geo.kernel[d], geo.dilations[d]));
    int64_t padded = in;
    switch (auto_pad) {
      case ConvAttributes::AutoPad::kNotSet: {
        const bool has_pads = !pads.empty();
        geo.pad_begin[d] = has_pads ? pads[d] : 0;
        if (has_pads) {
          ASSIGN_OR_RETURN(padded, PaddedSize(in, pads[d], pads[d + rank]));
        }
        break;
      }
      case ConvAttributes::AutoPad::kValid:
        geo.pad_begin[d] = 0;
        break;
      case ConvAttributes::AutoPad::kSameUpper:
      case ConvAttributes::AutoPad::kSameLower: {
        // An odd total pad puts the extra element at the end for SAME_UPPER.
        ASSIGN_OR_RETURN(const int64_t total, SamePadding(in, extent, stride));
        const bool upper = auto_pad == ConvAttributes::AutoPad::kSameUpper;
        geo.pad_begin[d] = upper ? total / 2 : total - total / 2;
        ASSIGN_OR_RETURN(padded, CheckedAdd(in, total));
        break;
      }
    }
    absl::StatusOr<int64_t> windows = WindowCount(padded, extent, stride);
    if (!windows.ok()) return absl::InvalidArgumentError(absl::StrCat("spatial axis ", d, ": ", windows.status().message()));
    geo.grid[d] = *windows;
  }
  // The grid bounds im2col's columns and Y: check it before anything multiplies it.
  return CheckedElementCount(geo.grid).status();
}

template <typename T>
void Im2Col(const ConvGeometry& geo, int64_t channels, const T* image, T* col, ThreadPool& pool) {
  const int64_t image_size = geo.ImageSize();
  const int64_t grid_size = geo.GridSize();
  const int64_t rows_per_channel = geo.KernelSize() * grid_size;
  const int64_t width = geo.image.back();
  const int64_t grid_width = geo.grid.back();
  const int64_t stride = geo.strides.back();
  pool.ParallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const T* src = image + c * image_size;
      T* dst = col + c * rows_per_channel;
      if (geo.image.size() == 2) {
        Im2Col2D(geo, src, 0, geo.grid[0], dst);
        continue;
      }
      ForEachColumnRun(geo, [&](int64_t kk, int64_t image_offset, int64_t last_offset, int64_t pos) {
        T* out = dst + kk * grid_size + pos;
        if (image_offset < 0) {
          std::fill(out, out + grid_width, T{});
        } else {
          GatherRow(src + image_offset, width, last_offset, stride, grid_width, out);
        }
      });
    }
  });
}

template <typename T>
void Im2ColRows(const ConvGeometry& geo, int64_t channels, const T* image, int64_t row_begin, int64_t row_end,
                T* col, ThreadPool& pool) {
  const int64_t image_size = geo.ImageSize();
  const int64_t rows_per_channel = geo.KernelSize() * (row_end - row_begin) * geo.grid[1];
  pool.ParallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      Im2Col2D(geo, image + c * image_size, row_begin, row_end, col + c * rows_per_channel);
    }
  });
}

namespace {

// row[i - n_begin] = 0 for the grid positions i in [begin, end) (clamped to the row's [n_begin, n_end)).
void ZeroPositions(int64_t begin, int64_t end, int64_t n_begin, int64_t n_end, float* row) {
  begin = std::max(begin, n_begin);
  end = std::min(end, n_end);
  if (begin < end) std::fill(row + (begin - n_begin), row + (end - n_begin), 0.0f);
}

// Im2ColRow of a tap when strides are 1 and the grid is as wide as the image (a "same" convolution): grid
// position i of the rows [row_lo, row_hi) that read inside the image reads plane[i + shift], so those rows
// are one contiguous copy of the plane, instead of a copy per grid row; the columns the tap puts outside
// the image, [0, lo) and [hi, width) of each row, are zeroed after it.
void ShiftedPlaneRow(const float* plane, int64_t plane_size, int64_t width, int64_t shift, int64_t row_lo,
                     int64_t row_hi, int64_t lo, int64_t hi, int64_t n_begin, int64_t n, float* row) {
  const int64_t n_end = n_begin + n;
  const int64_t copy_begin = std::clamp(row_lo * width, n_begin, n_end);
  const int64_t copy_end = std::clamp(row_hi * width, copy_begin, n_end);
  // Positions whose plane[i + shift] would fall outside the plane are outside columns, zeroed below.
  const int64_t read_begin = std::clamp(-shift, copy_begin, copy_end);
  const int64_t read_end = std::clamp(plane_size - shift, read_begin, copy_end);
  ZeroPositions(n_begin, read_begin, n_begin, n_end, row);
  if (read_begin < read_end) {
    onnxserve::GatherRow(plane + (read_begin + shift), 1, read_end - read_begin, row + (read_begin - n_begin));
  }
  ZeroPositions(read_end, n_end, n_begin, n_end, row);
  if (lo == 0 && hi == width) return;
  for (int64_t line = copy_begin / width * width; line < copy_end; line += width) {
    ZeroPositions(line, line + lo, n_begin, copy_end, row);
    ZeroPositions(line + hi, line + width, n_begin, copy_end, row);
  }
}

}  // namespace

void Im2ColRow(const ConvGeometry& geo, const float* image, int64_t k, int64_t n_begin, int64_t n, float* row) {
  const int64_t height = geo.image[0], width = geo.image[1], grid_width = geo.grid[1];
  const int64_t row_stride = geo.strides[0], col_stride = geo.strides[1], taps = geo.KernelSize();
  const int64_t channel = k / taps, kh = k % taps / geo.kernel[1], kw = k % taps % geo.kernel[1];
  const float* plane = image + channel * height * width;
  const int64_t row_offset = kh * geo.dilations[0] - geo.pad_begin[0];
  const int64_t col_offset = kw * geo.dilations[1] - geo.pad_begin[1];
  // The grid columns whose tap lands inside the image are the same on every grid row.
  const auto [lo, hi] = ValidRange(width, col_offset, col_stride, grid_width);
  if (row_stride == 1 && col_stride == 1 && grid_width == width) {
    const auto [row_lo, row_hi] = ValidRange(height, row_offset, 1, geo.grid[0]);
    return ShiftedPlaneRow(plane, height * width, width, row_offset * width + col_offset, row_lo, row_hi, lo, hi,
                           n_begin, n, row);
  }
  // The columns cover grid rows from oh on, the first from column ow, the last possibly partly.
  int64_t oh = n_begin / grid_width, ow = n_begin % grid_width;
  for (float* dst = row; dst < row + n; ow = 0, ++oh) {
    const int64_t ow_end = std::min(grid_width, ow + (row + n - dst));
    const int64_t ih = oh * row_stride + row_offset;
    const int64_t first = std::clamp(lo, ow, ow_end), last = std::clamp(hi, first, ow_end);
    if (ih < 0 || ih >= height) {
      for (int64_t g = ow; g < ow_end; ++g) *dst++ = 0.0f;
      continue;
    }
    for (int64_t g = ow; g < first; ++g) *dst++ = 0.0f;
    if (first < last) {
      GatherRow(plane + (ih * width + (first * col_stride + col_offset)), col_stride, last - first, dst);
    }
    dst += last - first;
    for (int64_t g = last; g < ow_end; ++g) *dst++ = 0.0f;
  }
}

template <typename T>
void Col2Im(const ConvGeometry& geo, int64_t channels, const T* col, T* image, ThreadPool& pool) {
  const int64_t image_size = geo.ImageSize();
  const int64_t grid_size = geo.GridSize();
  const int64_t rows_per_channel = geo.KernelSize() * grid_size;
  const int64_t width = geo.image.back();
  const int64_t grid_width = geo.grid.back();
  const int64_t stride = geo.strides.back();
  pool.ParallelFor(channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const T* src = col + c * rows_per_channel;
      T* dst = image + c * image_size;
      ForEachColumnRun(geo, [&](int64_t kk, int64_t image_offset, int64_t last_offset, int64_t pos) {
        if (image_offset >= 0) {
          ScatterAddRow(src + kk * grid_size + pos, width, last_offset, stride, grid_width, dst + image_offset);
        }
      });
    }
  });
}

template void Im2Col<float>(const ConvGeometry&, int64_t, const float*, float*, ThreadPool&);
template void Im2Col<double>(const ConvGeometry&, int64_t, const double*, double*, ThreadPool&);
template void Im2ColRows<float>(const ConvGeometry&, int64_t, const float*, int64_t, int64_t, float*,
                                ThreadPool&);
template void Im2ColRows<double>(const ConvGeometry&, int64_t, const double*, int64_t, int64_t, double*,
                                 ThreadPool&);
template void Col2Im<float>(const ConvGeometry&, int64_t, const float*, float*, ThreadPool&);
template void Col2Im<double>(const ConvGeometry&, int64_t, const double*, double*, ThreadPool&);

absl::StatusOr<MatMulPlan> PlanMatMul(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("MatMul needs operands of rank >= 1, got A ",
                                                   ShapeToString(a), " and B ", ShapeToString(b)));
  }
  MatMulPlan plan;
  const size_t ra = a.size(), rb = b.size();
  plan.m = ra >= 2 ? a[ra - 2] : 1;
  plan.k = a[ra - 1];
  const int64_t kb = rb >= 2 ? b[rb - 2] : b[0];
  plan.n = rb >= 2 ? b[rb - 1] : 1;
  if (plan.k != kb) {
    return absl::InvalidArgumentError(absl::StrCat("A ", ShapeToString(a), " and B ", ShapeToString(b),
                                                   ": inner dims ", plan.k, " and ", kb, " differ"));
  }
  const Shape a_batch(a.begin(), a.end() - std::min<size_t>(ra, 2));
  const Shape b_batch(b.begin(), b.end() - std::min<size_t>(rb, 2));
  ASSIGN_OR_RETURN(plan.batch, BroadcastShapes(a_batch, b_batch));
  plan.b_matrices = NumElements(b_batch);
  plan.batch_strides = {BroadcastStrides(a_batch, plan.batch), BroadcastStrides(b_batch, plan.batch)};
  plan.output = plan.batch;
  if (ra >= 2) plan.output.push_back(plan.m);
  if (rb >= 2) plan.output.push_back(plan.n);
  return plan;
}

std::vector<std::pair<int64_t, int64_t>> MatrixPairs(const MatMulPlan& plan) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(static_cast<size_t>(NumElements(plan.batch)));
  ForEachBroadcast<2>(plan.batch, plan.batch_strides,
                      [&](int64_t, const std::array<int64_t, 2>& at) { pairs.push_back({at[0], at[1]}); });
  return pairs;
}

}  // namespace onnxserve
