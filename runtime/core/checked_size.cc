#include "runtime/core/checked_size.h"

#include <atomic>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/core/tensor.h"

namespace onnxserve {
namespace {

std::atomic<int64_t> g_max_elements{SizeLimits{}.max_elements};
std::atomic<int64_t> g_max_bytes{SizeLimits{}.max_bytes};

absl::Status TooManyElements(absl::Span<const int64_t> shape, int64_t max_elements) {
  return absl::ResourceExhaustedError(absl::StrCat("shape ", ShapeToString(shape), " has more than ",
                                                   max_elements, " elements (the limit per tensor)"));
}

// Bytes one element takes in memory: strings are std::string objects.
int64_t StorageSizeOf(DataType type) {
  return type == DataType::kString ? static_cast<int64_t>(sizeof(std::string))
                                   : static_cast<int64_t>(ElementSize(type));
}

}  // namespace

SizeLimits GetSizeLimits() {
  return SizeLimits{g_max_elements.load(std::memory_order_relaxed), g_max_bytes.load(std::memory_order_relaxed)};
}

absl::Status SetSizeLimits(const SizeLimits& limits) {
  if (limits.max_elements <= 0 || limits.max_elements > kMaxSettableElements || limits.max_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("size limits need 0 < max_elements <= 2^60 and max_bytes > 0, got ",
                                                   limits.max_elements, " and ", limits.max_bytes));
  }
  g_max_elements.store(limits.max_elements, std::memory_order_relaxed);
  g_max_bytes.store(limits.max_bytes, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product)) {
    return absl::ResourceExhaustedError(absl::StrCat(a, " * ", b, " overflows int64"));
  }
  return product;
}

absl::StatusOr<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    return absl::ResourceExhaustedError(absl::StrCat(a, " + ", b, " overflows int64"));
  }
  return sum;
}

absl::StatusOr<int64_t> CheckedElementCount(absl::Span<const int64_t> shape, int64_t max_elements) {
  int64_t nonzero_product = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(shape), " has a negative dim"));
    }
    if (d == 0) {
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(nonzero_product, d, &nonzero_product) || nonzero_product > max_elements) {
      return TooManyElements(shape, max_elements);
    }
  }
  return empty ? 0 : nonzero_product;
}

absl::StatusOr<int64_t> CheckedByteSize(DataType type, absl::Span<const int64_t> shape,
                                        const SizeLimits& limits) {
  absl::StatusOr<int64_t> count = CheckedElementCount(shape, limits.max_elements);
  if (!count.ok()) return count.status();
  int64_t bytes;
  if (__builtin_mul_overflow(*count, StorageSizeOf(type), &bytes) || bytes > limits.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(DataTypeName(type), ShapeToString(shape), " needs more than ",
                                                     limits.max_bytes, " bytes (the limit per tensor)"));
  }
  return bytes;
}

absl::StatusOr<int64_t> CheckedDimFromDouble(double value, int64_t max_elements) {
  if (std::isnan(value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("size ", value, " is not a number >= 0"));
  }
  // Compared as doubles: max_elements <= 2^60 converts exactly enough, and infinity fails here.
  const double floored = std::floor(value);
  if (floored > static_cast<double>(max_elements)) {
    return absl::ResourceExhaustedError(absl::StrCat("size ", value, " is more than ", max_elements,
                                                     " elements (the limit per tensor)"));
  }
  return static_cast<int64_t>(floored);
}

}  // namespace onnxserve
