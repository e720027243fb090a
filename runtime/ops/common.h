// Helpers shared by operator families: axes, broadcasting, strides and scalar conversions.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/tensor.h"

namespace onnxserve {

// Maps axis in [-rank, rank) to [0, rank).
inline absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Row-major strides in elements.
inline std::vector<int64_t> StridesOf(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

// Numpy-style multidirectional broadcasting of two shapes.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Strides of `in` viewed in the broadcast `out` shape: 0 along broadcast dims. `in` has rank <= out's.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Calls fn(out_index, in_offsets...) for every element of `out_shape`, walking each input with its
// broadcast strides (from BroadcastStrides). Innermost dimension is a tight loop.
template <size_t N, typename Fn>
void ForEachBroadcast(const Shape& out_shape, const std::array<std::vector<int64_t>, N>& strides, Fn&& fn) {
  const int64_t total = NumElements(out_shape);
  if (total == 0) return;
  const int64_t rank = static_cast<int64_t>(out_shape.size());
  std::vector<int64_t> index(rank, 0);
  std::array<int64_t, N> offsets{};
  const int64_t inner = rank == 0 ? 1 : out_shape[rank - 1];
  for (int64_t out = 0; out < total; out += inner) {
    for (int64_t k = 0; k < inner; ++k) {
      std::array<int64_t, N> at;
      for (size_t n = 0; n < N; ++n) at[n] = offsets[n] + (rank == 0 ? 0 : k * strides[n][rank - 1]);
      fn(out + k, at);
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      for (size_t n = 0; n < N; ++n) offsets[n] += strides[n][d];
      if (++index[d] < out_shape[d]) break;
      for (size_t n = 0; n < N; ++n) offsets[n] -= strides[n][d] * out_shape[d];
      index[d] = 0;
    }
  }
}

// Arithmetic on float16/bfloat16 goes through float.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
inline ComputeType<T> ToCompute(T v) {
  return static_cast<ComputeType<T>>(v);
}
template <typename T>
inline T FromCompute(ComputeType<T> v) {
  return static_cast<T>(v);
}

}  // namespace onnxserve
