#include "runtime/ops/common.h"

#include <algorithm>
#include <string>

namespace onnxserve {

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", ShapeToString(a), " and ", ShapeToString(b),
                                                     " cannot be broadcast"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const std::vector<int64_t> own = StridesOf(in);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) strides[lead + i] = in[i] == 1 ? 0 : own[i];
  return strides;
}

namespace {

// Drops dims of size 1 and merges neighbours that the input walks contiguously, so the innermost loop is
// as long as possible. The result has rank >= 1.
void MergeStridedDims(Shape& shape, std::vector<int64_t>& strides) {
  Shape merged_shape;
  std::vector<int64_t> merged_strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!merged_shape.empty() && merged_strides.back() == strides[d] * shape[d]) {
      merged_shape.back() *= shape[d];
      merged_strides.back() = strides[d];
    } else {
      merged_shape.push_back(shape[d]);
      merged_strides.push_back(strides[d]);
    }
  }
  if (merged_shape.empty()) {
    merged_shape = {1};
    merged_strides = {1};
  }
  shape = std::move(merged_shape);
  strides = std::move(merged_strides);
}

// Copies output rows [begin, end) (a row is the innermost dim) of the strided view.
template <typename T>
void CopyStridedRows(const T* in, T* out, const Shape& shape, const std::vector<int64_t>& strides, int64_t begin,
                     int64_t end) {
  const int64_t outer_rank = static_cast<int64_t>(shape.size()) - 1;
  const int64_t inner = shape.back();
  const int64_t step = strides.back();
  std::vector<int64_t> index(outer_rank, 0);
  int64_t offset = 0;
  for (int64_t d = outer_rank - 1, rest = begin; d >= 0; --d) {
    index[d] = rest % shape[d];
    rest /= shape[d];
    offset += index[d] * strides[d];
  }
  out += begin * inner;
  for (int64_t row = begin; row < end; ++row, out += inner) {
    const T* src = in + offset;
    if (step == 1) {
      std::copy(src, src + inner, out);
    } else if (step == 0) {
      std::fill(out, out + inner, *src);
    } else {
      for (int64_t k = 0; k < inner; ++k) out[k] = src[k * step];
    }
    for (int64_t d = outer_rank - 1; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < shape[d]) break;
      offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

// The transpose case: the innermost out dim walks the input with a stride > 1 while out dim `j` walks it
// contiguously. Copying kTile x kTile blocks keeps both the strided reads and the writes in cache. Tasks
// are (index over the other dims, block of j).
template <typename T>
void CopyTiled(const T* in, T* out, const Shape& shape, const std::vector<int64_t>& strides, size_t j,
               ThreadPool& pool) {
  constexpr int64_t kTile = 16;
  const size_t last = shape.size() - 1;
  const int64_t cols = shape[last], col_stride = strides[last];
  const int64_t rows = shape[j];
  const std::vector<int64_t> out_strides = StridesOf(shape);
  const int64_t row_stride = out_strides[j];
  const int64_t row_blocks = (rows + kTile - 1) / kTile;
  const int64_t outer = NumElements(shape) / (rows * cols);
  pool.ParallelFor(outer * row_blocks, std::max<int64_t>(1, (int64_t{1} << 16) / (kTile * cols)),
                   [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t in_base = 0, out_base = 0;
      for (int64_t d = static_cast<int64_t>(last) - 1, rest = task / row_blocks; d >= 0; --d) {
        if (static_cast<size_t>(d) == j) continue;
        in_base += (rest % shape[d]) * strides[d];
        out_base += (rest % shape[d]) * out_strides[d];
        rest /= shape[d];
      }
      const int64_t row_begin = (task % row_blocks) * kTile;
      const int64_t row_end = std::min(rows, row_begin + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = row_begin; r < row_end; ++r) {
          const T* src = in + in_base + r;
          T* dst = out + out_base + r * row_stride;
          for (int64_t c = c0; c < c1; ++c) dst[c] = src[c * col_stride];
        }
      }
    }
  });
}

// An out dim other than the innermost that the input walks contiguously, or -1.
int64_t ContiguousOuterDim(const std::vector<int64_t>& strides) {
  for (size_t d = 0; d + 1 < strides.size(); ++d) {
    if (strides[d] == 1) return static_cast<int64_t>(d);
  }
  return -1;
}

}  // namespace

void CopyStrided(const Tensor& in, int64_t in_offset, const std::vector<int64_t>& in_strides, Tensor& out,
                 ThreadPool& pool) {
  if (out.NumElements() == 0) return;
  Shape shape = out.shape();
  std::vector<int64_t> strides = in_strides;
  MergeStridedDims(shape, strides);
  const int64_t inner = shape.back();
  const int64_t rows = out.NumElements() / inner;
  // About 64K elements per task: below that, waking a worker costs more than the copy.
  const int64_t min_rows = std::max<int64_t>(1, (int64_t{1} << 16) / inner);
  // An innermost dim read with a stride while another dim is read contiguously is a transpose: tile it.
  const int64_t tiled_dim = strides.back() > 1 ? ContiguousOuterDim(strides) : -1;
  DispatchByWidth(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = in.data<T>() + in_offset;
    T* dst = out.data<T>();
    if (tiled_dim >= 0) {
      CopyTiled(src, dst, shape, strides, static_cast<size_t>(tiled_dim), pool);
      return;
    }
    pool.ParallelFor(rows, min_rows, [&](int64_t begin, int64_t end) {
      CopyStridedRows(src, dst, shape, strides, begin, end);
    });
  });
}

}  // namespace onnxserve
