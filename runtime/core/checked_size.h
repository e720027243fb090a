// Checked size math. A shape, count or length read from a request or a model goes through these helpers
// before it is multiplied or allocated: a hostile shape becomes an error instead of a size that wraps
// around (a tensor with 0 bytes of storage and 2^62 elements, reads past the end of a buffer).
//
// The limits bound every tensor the runtime creates (Tensor's constructor enforces them too). Within them
// every element count, byte size and stride fits in int64 with room to spare, so kernels may multiply the
// dims of a tensor that exists without further checks.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/core/data_type.h"

namespace onnxserve {

struct SizeLimits {
  // Elements in one tensor. A zero dim does not lift the limit on the others: the product of the non-zero
  // dims is bounded too, so strides of empty tensors stay small.
  int64_t max_elements = int64_t{1} << 32;
  // Bytes of one tensor's storage (a string element counts as sizeof(std::string), its characters aside;
  // kernels that copy strings into an output check the characters against it too: runtime/ops/common.h).
  int64_t max_bytes = int64_t{1} << 34;
};

// The highest max_elements SetSizeLimits takes: past 2^60 elements an 8-byte element's byte size would leave
// int64 no headroom for offsets and strides.
inline constexpr int64_t kMaxSettableElements = int64_t{1} << 60;

// The process-wide limits. Thread-safe; meant to be set once at startup, before models load.
SizeLimits GetSizeLimits();
// INVALID_ARGUMENT unless 0 < max_elements <= 2^60 (so that a count times any element size, and any stride,
// still fits in int64) and max_bytes > 0.
absl::Status SetSizeLimits(const SizeLimits& limits);

// a * b, or RESOURCE_EXHAUSTED when it does not fit in int64.
absl::StatusOr<int64_t> CheckedMul(int64_t a, int64_t b);
// a + b, or RESOURCE_EXHAUSTED when it does not fit in int64.
absl::StatusOr<int64_t> CheckedAdd(int64_t a, int64_t b);

// The element count of `shape`: INVALID_ARGUMENT for a negative dim, RESOURCE_EXHAUSTED past max_elements.
absl::StatusOr<int64_t> CheckedElementCount(absl::Span<const int64_t> shape,
                                            int64_t max_elements = GetSizeLimits().max_elements);
// The bytes of storage a `type` tensor of `shape` takes, checked like CheckedElementCount and then against
// limits.max_bytes.
absl::StatusOr<int64_t> CheckedByteSize(DataType type, absl::Span<const int64_t> shape,
                                        const SizeLimits& limits = GetSizeLimits());
// A dim computed in floating point (a Resize output size, a Range count): `value` floored, or an error when
// it is NaN, negative or past max_elements (converting such a double to int64 is undefined behaviour).
absl::StatusOr<int64_t> CheckedDimFromDouble(double value,
                                             int64_t max_elements = GetSizeLimits().max_elements);

}  // namespace onnxserve
