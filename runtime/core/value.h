// Value: what a slot of the executor holds, as ONNX's type system says: a tensor, a sequence of values, a
// map from int64 or string keys to values, or an optional value (present or absent). Like Tensor, a Value
// is a cheap handle: copies share what they hold, and nothing is written after it is built, so kernels pass
// inputs through (Identity, SequenceAt) without copying.
//
// Kernels that only know tensors never see a Value: KernelContext::Input gives them the tensor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/data_type.h"
#include "runtime/core/tensor.h"

namespace onnxserve {

// The most values one sequence (or map) may hold. Each costs some 290 bytes even when its tensor is empty
// (its slot, shape, storage handle and smallest buffer), so a split of a long axis of an empty tensor
// ([2^31, 0] into pieces of 1) must stop here, not at the memory: 2^24 such values held 4.9 GB, 2^20 hold
// about 300 MB.
inline constexpr int64_t kMaxSequenceLength = int64_t{1} << 20;
// What a run is charged for each value a sequence, map or optional holds, beyond its tensor's storage (which
// the allocator charges): its slot, its shape and its storage handle.
inline constexpr size_t kHeldBytesPerValue = 256;

class Value {
 public:
  // kNone is no value at all: an omitted input, an output a kernel did not set.
  enum class Kind { kNone, kTensor, kSequence, kMap, kOptional };

  Value() = default;
  // A tensor is a value (implicit, so that tensor-producing code needs no ceremony).
  Value(Tensor tensor);  // NOLINT(google-explicit-constructor)
  // A sequence of `elements`. `elem_type` is the element type of its tensors; it is what an empty sequence
  // knows of them (SequenceEmpty's dtype), and kUndefined for sequences of non-tensors.
  static Value Sequence(DataType elem_type, std::vector<Value> elements);
  // A map: `keys` is a 1-D int64 or string tensor, `values` holds one value per key.
  static Value Map(Tensor keys, std::vector<Value> values);
  static Value Optional(Value element);
  static Value EmptyOptional();

  Kind kind() const { return kind_; }
  bool defined() const { return kind_ != Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_map() const { return kind_ == Kind::kMap; }
  bool is_optional() const { return kind_ == Kind::kOptional; }

  // The tensor, or nullptr when the value is not one.
  const Tensor* tensor() const { return is_tensor() ? &tensor_ : nullptr; }
  Tensor* mutable_tensor() { return is_tensor() ? &tensor_ : nullptr; }

  // Sequences and maps: the elements (map values in key order). Empty for other kinds.
  const std::vector<Value>& elements() const;
  // Sequences: the element type of its tensors (kUndefined when unknown or not tensors).
  DataType elem_type() const;
  // Maps: the keys.
  const Tensor& keys() const;
  // Optionals: whether it holds an element, and the element (a kNone value when absent).
  bool has_element() const;
  const Value& element() const;

  // "float[2,3]", "seq(float)[3]", "map(int64)[2]", "optional(seq(float)[3])", "optional(empty)", "none".
  std::string DebugString() const;

 private:
  struct Payload {
    DataType elem_type = DataType::kUndefined;
    Tensor keys;
    std::vector<Value> elements;  // a present optional holds its element here
  };

  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::shared_ptr<const Payload> payload_;
};

// "tensor", "sequence", "map", "optional", "none".
const char* ValueKindName(Value::Kind kind);

}  // namespace onnxserve
