#include "runtime/ops/window.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/status_macros.h"

namespace onnxserve {

absl::StatusOr<int64_t> DilatedExtent(int64_t kernel, int64_t dilation) {
  if (kernel < 1 || dilation < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel size ", kernel, " and dilation ", dilation, ": expected both >= 1"));
  }
  ASSIGN_OR_RETURN(const int64_t span, CheckedMul(kernel - 1, dilation));
  return CheckedAdd(span, 1);
}

absl::StatusOr<int64_t> PaddedSize(int64_t in, int64_t pad_begin, int64_t pad_end) {
  ASSIGN_OR_RETURN(const int64_t begin_padded, CheckedAdd(in, pad_begin));
  return CheckedAdd(begin_padded, pad_end);
}

absl::StatusOr<int64_t> WindowCount(int64_t padded, int64_t extent, int64_t stride, bool ceil) {
  if (padded == extent - 1) return 0;
  if (padded < extent) {
    return absl::InvalidArgumentError(
        absl::StrCat("padded input size ", padded, " is smaller than the dilated kernel extent ", extent));
  }
  const int64_t span = padded - extent;  // >= 0 and <= padded: no overflow
  return span / stride + (ceil && span % stride != 0 ? 1 : 0) + 1;
}

absl::StatusOr<int64_t> SamePadding(int64_t in, int64_t extent, int64_t stride) {
  const int64_t windows = in / stride + (in % stride != 0 ? 1 : 0);
  ASSIGN_OR_RETURN(const int64_t start_of_last, CheckedMul(windows - 1, stride));
  ASSIGN_OR_RETURN(const int64_t reach, CheckedAdd(start_of_last, extent));
  return std::max<int64_t>(0, reach - in);
}

}  // namespace onnxserve
