#include "runtime/ops/common.h"

#include <algorithm>
#include <memory>
#include <string>

#include "runtime/core/memory_budget.h"
#include "runtime/core/status_macros.h"

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

int64_t StringChars(const Tensor& t) {
  int64_t chars = 0;
  for (const std::string& s : t.values<std::string>()) chars += static_cast<int64_t>(s.size());
  return chars;
}

// The characters of an output holding each element of every source `times(source)` times, checked.
template <typename Times>
absl::Status CheckRepeatedStrings(absl::Span<const Tensor* const> sources, const Times& times) {
  int64_t chars = 0;
  for (const Tensor* source : sources) {
    if (source->dtype() != DataType::kString || source->NumElements() == 0) continue;
    ASSIGN_OR_RETURN(const int64_t copies, CheckedMul(StringChars(*source), times(*source)));
    ASSIGN_OR_RETURN(chars, CheckedAdd(chars, copies));
  }
  return CheckStringChars(chars);
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
  DispatchByWidth(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* src = in.data<T>() + in_offset;
    T* dst = out.data<T>();
    pool.ParallelFor(rows, min_rows, [&](int64_t begin, int64_t end) {
      CopyStridedRows(src, dst, shape, strides, begin, end);
    });
  });
}

absl::Status CheckStringChars(int64_t chars) {
  const int64_t max_bytes = GetSizeLimits().max_bytes;
  if (chars > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the output's strings would hold ", chars,
                                                     " characters, more than ", max_bytes,
                                                     " bytes (the limit per tensor)"));
  }
  // std::string allocates the characters itself, so they are never charged to the run's account; but an
  // output of more than the run has left is refused, as a tensor of that many bytes would be.
  const std::shared_ptr<MemoryAccount>& account = CurrentMemoryAccount();
  if (account != nullptr && chars > account->budget() - account->live_bytes()) {
    return absl::ResourceExhaustedError(absl::StrCat("the output's strings would hold ", chars,
                                                     " characters, more than the run's memory budget of ",
                                                     account->budget(), " bytes has left"));
  }
  return absl::OkStatus();
}

int64_t LongestString(const Tensor& t) {
  size_t longest = 0;
  for (const std::string& s : t.values<std::string>()) longest = std::max(longest, s.size());
  return static_cast<int64_t>(longest);
}

absl::Status CheckStringCopies(int64_t longest, int64_t out_elements) {
  ASSIGN_OR_RETURN(const int64_t chars, CheckedMul(out_elements, longest));
  return CheckStringChars(chars);
}

absl::Status CheckStringCopies(absl::Span<const Tensor* const> sources, int64_t out_elements) {
  int64_t longest = 0;
  for (const Tensor* source : sources) {
    if (source->dtype() == DataType::kString) longest = std::max(longest, LongestString(*source));
  }
  return CheckStringCopies(longest, out_elements);
}

absl::Status CheckBroadcastStrings(absl::Span<const Tensor* const> sources, int64_t out_elements) {
  return CheckRepeatedStrings(sources, [&](const Tensor& source) { return out_elements / source.NumElements(); });
}

absl::Status CheckJoinedStrings(absl::Span<const Tensor* const> sources) {
  return CheckRepeatedStrings(sources, [](const Tensor&) { return int64_t{1}; });
}

}  // namespace onnxserve
