#include "runtime/core/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/allocator.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/memory_budget.h"

namespace onnxserve {
namespace {

// The element count of a tensor about to exist, for the constructors that cannot return a status: throws
// std::invalid_argument for a negative dim and std::length_error past the size limits.
int64_t ElementCountOrThrow(DataType type, absl::Span<const int64_t> shape) {
  const absl::StatusOr<int64_t> bytes = CheckedByteSize(type, shape);
  if (!bytes.ok()) {
    const std::string message(bytes.status().message());
    if (absl::IsInvalidArgument(bytes.status())) throw std::invalid_argument(message);
    throw std::length_error(message);
  }
  return NumElements(shape);
}

}  // namespace

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

Tensor::Tensor(DataType type, Shape shape)
    : type_(type), shape_(std::move(shape)), num_elements_(ElementCountOrThrow(type_, shape_)) {
  if (type_ == DataType::kString) {
    const size_t count = static_cast<size_t>(num_elements_);
    const MemoryCharge charge = MemoryCharge::ToCurrentRun(count * sizeof(std::string));
    std::string* strings = nullptr;
    try {
      strings = new std::string[count];
    } catch (...) {
      charge.Release();
      throw;
    }
    owner_ = std::shared_ptr<void>(strings, [charge](void* p) {
      delete[] static_cast<std::string*>(p);
      charge.Release();
    });
    data_ = strings;
    return;
  }
  owner_ = AllocateBuffer(ByteSize());
  data_ = owner_.get();
}

absl::StatusOr<Tensor> Tensor::Create(DataType type, Shape shape) {
  const absl::StatusOr<int64_t> bytes = CheckedByteSize(type, shape);
  if (!bytes.ok()) return bytes.status();
  return Tensor(type, std::move(shape));
}

Tensor Tensor::Wrap(DataType type, Shape shape, std::shared_ptr<void> owner, void* data) {
  Tensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.num_elements_ = ElementCountOrThrow(type, t.shape_);
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.num_elements_ = ElementCountOrThrow(type_, t.shape_);
  if (t.num_elements_ != num_elements_) {
    throw std::invalid_argument(absl::StrCat("cannot view ", DebugString(), " as ", ShapeToString(t.shape_)));
  }
  return t;
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();
  Tensor t(type_, shape_);
  if (type_ == DataType::kString) {
    for (int64_t i = 0; i < num_elements_; ++i) t.data<std::string>()[i] = data<std::string>()[i];
  } else if (ByteSize() > 0) {
    std::memcpy(t.data_, data_, ByteSize());
  }
  return t;
}

double Tensor::GetAsDouble(int64_t i) const {
  double result = 0;
  DispatchNumeric(type_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      result = static_cast<float>(data<T>()[i]);
    } else {
      result = static_cast<double>(data<T>()[i]);
    }
  });
  DispatchLowPrecision(type_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsLowPrecisionFloat<T>) {
      result = static_cast<float>(data<T>()[i]);
    } else {
      result = static_cast<int32_t>(data<T>()[i]);
    }
  });
  return result;
}

int64_t Tensor::GetAsInt64(int64_t i) const {
  if (type_ == DataType::kInt64) return data<int64_t>()[i];
  if (type_ == DataType::kInt32) return data<int32_t>()[i];
  // Saturates: the value may come from a request, and converting a NaN or a double outside int64's range
  // is undefined behaviour.
  const double value = GetAsDouble(i);
  if (std::isnan(value)) return 0;
  if (value >= 0x1p63) return std::numeric_limits<int64_t>::max();
  if (value < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

std::string Tensor::DebugString() const {
  return absl::StrCat(DataTypeName(type_), ShapeToString(shape_));
}

}  // namespace onnxserve
