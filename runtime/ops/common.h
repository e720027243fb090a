// Helpers shared by operator families: axes, broadcasting, strides and scalar conversions.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/tensor.h"
#include "runtime/core/thread_pool.h"

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

// A real result (a power, log or square root of integers) as T. For an integer T the conversion must not be
// undefined: NaN becomes 0 and values out of T's range (infinities included) saturate.
template <typename T, typename Real>
T FromReal(Real value) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(value)) return T(0);
    if (value <= static_cast<Real>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (value >= static_cast<Real>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  }
  return static_cast<T>(value);
}

// The elements of a small integer tensor (a shape, axes, repeats) as int64.
inline std::vector<int64_t> Int64Values(const Tensor& t) {
  std::vector<int64_t> values(static_cast<size_t>(t.NumElements()));
  for (int64_t i = 0; i < t.NumElements(); ++i) values[i] = t.GetAsInt64(i);
  return values;
}

// Calls fn(T{}) with an unsigned integer type as wide as `type`'s elements, or std::string for strings: for
// kernels that only move elements, so each width is compiled once. Returns false for unsupported types.
template <typename Fn>
bool DispatchByWidth(DataType type, Fn&& fn) {
  if (type == DataType::kString) {
    fn(std::string{});
    return true;
  }
  switch (ElementSize(type)) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    default: return false;
  }
}

// Fills `out` (contiguous, row-major) with the elements of `in`'s storage at
// in_offset + sum(index[d] * in_strides[d]) for every index of out.shape(). Strides may be 0 (broadcast) or
// negative (reversed), so Transpose, Expand, Slice, Split, Tile and DepthToSpace are all such a copy.
// `in` and `out` have the same dtype; rows are copied in parallel on `pool`.
void CopyStrided(const Tensor& in, int64_t in_offset, const std::vector<int64_t>& in_strides, Tensor& out,
                 ThreadPool& pool);

// A string tensor's byte size counts its elements, not their characters (runtime/core/checked_size.h), so a
// kernel that fills a string output with copies of its inputs' strings checks the characters first: one
// 4 MB string broadcast over a million elements asks for 4 TB. Each check is RESOURCE_EXHAUSTED past
// GetSizeLimits().max_bytes characters or past what the current run's memory budget has left (the characters
// are not charged to it: runtime/core/memory_budget.h), and OK for outputs of other types.
//
// For an output of `chars` characters the kernel counted itself (a case change can lengthen a string).
absl::Status CheckStringChars(int64_t chars);
// For an output of `out_elements`, each a copy of any element of `sources` (Gather, Pad): bounded by
// out_elements times the longest of their strings.
absl::Status CheckStringCopies(absl::Span<const Tensor* const> sources, int64_t out_elements);
// The same for copies of strings known at load (a model's label table), the longest of `longest` characters.
absl::Status CheckStringCopies(int64_t longest, int64_t out_elements);
// The characters of a string tensor's longest element.
int64_t LongestString(const Tensor& t);
// For an output of `out_elements` broadcast from `sources` (Expand, Tile, Where, StringConcat), in which each
// element of a source appears out_elements / its count times: bounded by the sum of each source's characters
// times that.
absl::Status CheckBroadcastStrings(absl::Span<const Tensor* const> sources, int64_t out_elements);
// For an output holding each element of `sources` once (Concat, ConcatFromSequence, where one tensor may be
// given many times): bounded by the sum of their characters.
absl::Status CheckJoinedStrings(absl::Span<const Tensor* const> sources);

// A strict weak order with NaN above every number and equal to any other NaN, so that sorting never sees an
// inconsistent comparison (with operator<, a NaN is "equal" to every number, and sorts and groups go wrong).
template <typename C>
inline bool OrderedLess(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Maps an index into [0, size): a negative index counts from the end when `allow_negative`. Any other index
// is an INVALID_ARGUMENT error naming it and the valid range (Gather*, Scatter* and friends share this).
inline absl::StatusOr<int64_t> ResolveIndex(int64_t index, int64_t size, bool allow_negative) {
  const int64_t lowest = allow_negative ? -size : 0;
  if (index < lowest || index >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("index ", index, " is out of range [", lowest, ", ", size - 1, "]"));
  }
  return index < 0 ? index + size : index;
}

// A scalar (or one-element 1-D) int32/int64 input holding an axis, a count or a length. Checked before it is
// read: element 0 of an empty tensor is whatever its recycled buffer last held.
inline absl::StatusOr<int64_t> ScalarInput(const Tensor& t, const char* name) {
  if ((t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64) || t.rank() > 1 ||
      t.NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": expected an int32 or int64 scalar or 1-element 1-D tensor, got ",
                     t.DebugString()));
  }
  return t.GetAsInt64(0);
}

// Runs fn(T{}) for the floating-point element types (float, double, float16, bfloat16); otherwise an
// InvalidArgument error naming `what` ("input \"X\" must be floating-point, got int32[2,3]").
template <typename Fn>
absl::Status DispatchFloating(const Tensor& t, const char* what, Fn&& fn) {
  bool ok = false;
  DispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<ComputeType<T>>) {
      ok = true;
      fn(tag);
    }
  });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " must be floating-point, got ", t.DebugString()));
}

// A floating-point tensor with elements of type P (float or double): `t` itself (shared, no copy) when it
// already is, else a converted copy; an undefined `t` stays undefined. For kernels that compute in one
// precision whatever their inputs (float16 and bfloat16 widened to float).
template <typename P>
Tensor InPrecision(const Tensor& t) {
  if (!t.defined() || t.dtype() == kTypeOf<P>) return t;
  Tensor out(kTypeOf<P>, t.shape());
  DispatchFloating(t, "input", [&](auto tag) {
    using T = decltype(tag);
    const T* in = t.data<T>();
    P* o = out.data<P>();
    for (int64_t i = 0; i < t.NumElements(); ++i) o[i] = static_cast<P>(ToCompute(in[i]));
  }).IgnoreError();  // callers have checked that t is floating-point
  return out;
}

// Runs fn(row) for `rows` independent rows of about `len` elements each, in parallel chunks of ~16K elements.
template <typename Fn>
void ForEachRow(ThreadPool& pool, int64_t rows, int64_t len, const Fn& fn) {
  pool.ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) fn(r);
  });
}

}  // namespace onnxserve
