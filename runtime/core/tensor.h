// Tensor: an element type, a shape and contiguous row-major storage, 64-byte aligned unless it wraps (Wrap).
// Copies share storage (a Tensor is a cheap handle); kernels never write into their inputs, so sharing is
// how Reshape, Identity and initializers avoid copies. Clone() makes a deep copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/core/data_type.h"

namespace onnxserve {

using Shape = std::vector<int64_t>;

// The product of the dims, unchecked: for shapes of tensors that exist. A shape from data goes through
// CheckedElementCount (runtime/core/checked_size.h) instead.
int64_t NumElements(absl::Span<const int64_t> shape);
std::string ShapeToString(absl::Span<const int64_t> shape);  // "[1,3,224,224]"

class Tensor {
 public:
  Tensor() = default;
  // Allocates storage: numbers are left uninitialized, strings are empty. A constructor cannot return a
  // status, so a shape past the size limits (runtime/core/checked_size.h) throws std::length_error and a
  // negative dim std::invalid_argument; the executor turns both into a status naming the node. Code that
  // builds a shape from data calls Create instead.
  Tensor(DataType type, Shape shape);
  // As the constructor, with the shape checked first: an error instead of an exception or an allocation.
  static absl::StatusOr<Tensor> Create(DataType type, Shape shape);
  // Wraps storage owned elsewhere, aligned to the element size; `owner` keeps it alive. Shape checked as above.
  static Tensor Wrap(DataType type, Shape shape, std::shared_ptr<void> owner, void* data);
  // A rank-0 tensor holding one value.
  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(kTypeOf<T>, {});
    *t.data<T>() = std::move(value);
    return t;
  }
  // A tensor of the given shape filled from `values` (which must hold NumElements(shape) values).
  template <typename T>
  static Tensor FromVector(Shape shape, const std::vector<T>& values) {
    Tensor t(kTypeOf<T>, std::move(shape));
    T* out = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return t;
  }

  bool defined() const { return type_ != DataType::kUndefined; }
  DataType dtype() const { return type_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t NumElements() const { return num_elements_; }
  // Bytes of element storage (0 for string tensors, whose elements are std::string objects).
  size_t ByteSize() const { return static_cast<size_t>(num_elements_) * ElementSize(type_); }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T> T* data() { return static_cast<T*>(data_); }
  template <typename T> const T* data() const { return static_cast<const T*>(data_); }
  template <typename T> absl::Span<const T> values() const {
    return absl::Span<const T>(data<T>(), static_cast<size_t>(num_elements_));
  }
  template <typename T> absl::Span<T> mutable_values() {
    return absl::Span<T>(data<T>(), static_cast<size_t>(num_elements_));
  }

  // Same storage, another shape with as many elements (std::invalid_argument when it has not: reading
  // through a larger view would read past the storage).
  Tensor Reshaped(Shape shape) const;
  Tensor Clone() const;
  // Whether this handle is the only one of its storage and the storage is its own allocation (not wrapped):
  // no other value, view, model or request sees what is written into it.
  bool OwnsStorageAlone() const { return owner_ != nullptr && owner_.use_count() == 1 && data_ == owner_.get(); }
  // Element i as double (numbers, bool and the low-precision types); handy for shapes, indices and tests.
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;
  // "float[1,3,224,224]"
  std::string DebugString() const;

 private:
  DataType type_ = DataType::kUndefined;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

// Calls fn(T{}) with T the C++ type of `type`, for the numeric types and bool. Returns false when `type` is
// not one of them.
template <typename Fn>
bool DispatchNumeric(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat: fn(float{}); return true;
    case DataType::kDouble: fn(double{}); return true;
    case DataType::kFloat16: fn(Float16{}); return true;
    case DataType::kBFloat16: fn(BFloat16{}); return true;
    case DataType::kInt8: fn(int8_t{}); return true;
    case DataType::kInt16: fn(int16_t{}); return true;
    case DataType::kInt32: fn(int32_t{}); return true;
    case DataType::kInt64: fn(int64_t{}); return true;
    case DataType::kUint8: fn(uint8_t{}); return true;
    case DataType::kUint16: fn(uint16_t{}); return true;
    case DataType::kUint32: fn(uint32_t{}); return true;
    case DataType::kUint64: fn(uint64_t{}); return true;
    case DataType::kBool: fn(bool{}); return true;
    default: return false;
  }
}

// Like DispatchNumeric, plus std::string.
template <typename Fn>
bool DispatchAny(DataType type, Fn&& fn) {
  if (type == DataType::kString) {
    fn(std::string{});
    return true;
  }
  return DispatchNumeric(type, std::forward<Fn>(fn));
}

}  // namespace onnxserve
