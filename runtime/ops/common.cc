#include "runtime/ops/common.h"

#include <algorithm>

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

}  // namespace onnxserve
