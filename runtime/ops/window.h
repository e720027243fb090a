// The arithmetic of sliding windows (Conv, ConvTranspose, DeformConv, Col2Im, the pools): kernel sizes,
// strides, dilations and pads are attributes of a model, so each product and sum here is checked. A model
// can ask for a dilation of 2^62; wrapped around, the extent turns negative, the output size absurd, and
// what is then allocated or indexed no longer matches what the kernels read.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace onnxserve {

// (kernel - 1) * dilation + 1: the input span one window covers; INVALID_ARGUMENT unless kernel and dilation
// are >= 1 (a kernel of size 0, from W's shape, has no extent).
absl::StatusOr<int64_t> DilatedExtent(int64_t kernel, int64_t dilation);

// in + pad_begin + pad_end.
absl::StatusOr<int64_t> PaddedSize(int64_t in, int64_t pad_begin, int64_t pad_end);

// Windows of `extent` at `stride` (>= 1) that start in a padded axis of `padded`: floor((padded - extent) /
// stride) + 1, or with `ceil` rounded up; 0 when the axis is one short of a window (an empty map under a
// 1x1 kernel), as the formula gives. INVALID_ARGUMENT when the window misses by more.
absl::StatusOr<int64_t> WindowCount(int64_t padded, int64_t extent, int64_t stride, bool ceil = false);

// ceil(a / b) for b >= 1 and any a, without a + b - 1 (which overflows for a stride or dilation near 2^63).
inline int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? a / b + (a % b != 0 ? 1 : 0) : -((-a) / b); }

// The total padding SAME_UPPER/SAME_LOWER need for ceil(in / stride) windows of `extent`:
// max(0, (ceil(in / stride) - 1) * stride + extent - in).
absl::StatusOr<int64_t> SamePadding(int64_t in, int64_t extent, int64_t stride);

}  // namespace onnxserve
