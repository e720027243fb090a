#include "runtime/core/value.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "runtime/core/memory_budget.h"

namespace onnxserve {
namespace {

const std::vector<Value>& NoElements() {
  static const std::vector<Value> kNone;
  return kNone;
}

// A sequence's, map's or optional's payload, with its values' slots charged to the current run
// (runtime/core/memory_budget.h) for as long as it lives. A value costs its slot, shape and handle
// (kHeldBytesPerValue) whatever its tensor holds: a split of an empty [2^24, 0] into 2^24 pieces held 4.9
// GB that no budget saw. The tensors' storage is charged apart, by the allocator. Throws
// MemoryBudgetExceeded past the run's budget.
template <typename P>
std::shared_ptr<const P> ChargedPayload(P payload) {
  auto owned = std::make_unique<const P>(std::move(payload));
  const MemoryCharge charge =
      MemoryCharge::ToCurrentRun(owned->elements.size() * (sizeof(Value) + kHeldBytesPerValue));
  return std::shared_ptr<const P>(owned.release(), [charge](const P* p) {
    delete p;
    charge.Release();
  });
}

}  // namespace

Value::Value(Tensor tensor) : kind_(tensor.defined() ? Kind::kTensor : Kind::kNone), tensor_(std::move(tensor)) {}

Value Value::Sequence(DataType elem_type, std::vector<Value> elements) {
  Value v;
  v.kind_ = Kind::kSequence;
  v.payload_ = ChargedPayload(Payload{elem_type, Tensor(), std::move(elements)});
  return v;
}

Value Value::Map(Tensor keys, std::vector<Value> values) {
  Value v;
  v.kind_ = Kind::kMap;
  v.payload_ = ChargedPayload(Payload{DataType::kUndefined, std::move(keys), std::move(values)});
  return v;
}

Value Value::Optional(Value element) {
  Value v;
  v.kind_ = Kind::kOptional;
  std::vector<Value> elements;
  if (element.defined()) elements.push_back(std::move(element));
  v.payload_ = ChargedPayload(Payload{DataType::kUndefined, Tensor(), std::move(elements)});
  return v;
}

Value Value::EmptyOptional() { return Optional(Value()); }

const std::vector<Value>& Value::elements() const {
  return (is_sequence() || is_map()) ? payload_->elements : NoElements();
}

DataType Value::elem_type() const { return is_sequence() ? payload_->elem_type : DataType::kUndefined; }

const Tensor& Value::keys() const {
  static const Tensor kNoKeys;
  return is_map() ? payload_->keys : kNoKeys;
}

bool Value::has_element() const { return is_optional() && !payload_->elements.empty(); }

const Value& Value::element() const {
  static const Value kAbsent;
  return has_element() ? payload_->elements[0] : kAbsent;
}

std::string Value::DebugString() const {
  switch (kind_) {
    case Kind::kNone: return "none";
    case Kind::kTensor: return tensor_.DebugString();
    case Kind::kSequence:
      return absl::StrCat("seq(", DataTypeName(elem_type()), ")[", payload_->elements.size(), "]");
    case Kind::kMap:
      return absl::StrCat("map(", DataTypeName(keys().dtype()), ")[", payload_->elements.size(), "]");
    case Kind::kOptional:
      return absl::StrCat("optional(", has_element() ? element().DebugString() : "empty", ")");
  }
  return "?";
}

const char* ValueKindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kNone: return "none";
    case Value::Kind::kTensor: return "tensor";
    case Value::Kind::kSequence: return "sequence";
    case Value::Kind::kMap: return "map";
    case Value::Kind::kOptional: return "optional";
  }
  return "?";
}

}  // namespace onnxserve
