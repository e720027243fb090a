// What a value of the graph holds, as ONNX's type system says: a tensor, a sparse tensor, a sequence of
// values, a map from string or integer keys to values, or an optional value. Types come from what the model
// declares (graph inputs and outputs, value_info); a value nothing declares is kUnknown.
#pragma once

#include <memory>
#include <string>

#include "runtime/core/data_type.h"
#include "runtime/core/tensor.h"
#include "runtime/core/value.h"

namespace onnxserve::ir {

struct Type {
  enum class Kind { kUnknown, kTensor, kSparseTensor, kSequence, kMap, kOptional };

  Kind kind = Kind::kUnknown;
  // Tensors: the element type (kUndefined when not declared). Maps: the key type.
  DataType elem = DataType::kUndefined;
  // Tensors: the dims when declared (-1 where dynamic).
  bool has_shape = false;
  Shape dims;
  // Sequences and optionals: their element's type; maps: the value type.
  std::shared_ptr<const Type> inner;

  static Type Tensor(DataType elem) { return Type{Kind::kTensor, elem, false, {}, nullptr}; }
  static Type Of(Kind kind, Type inner) {
    return Type{kind, DataType::kUndefined, false, {}, std::make_shared<const Type>(std::move(inner))};
  }

  bool is_tensor() const { return kind == Kind::kTensor; }
  // The kind of runtime value the type promises; kNone when it says nothing (undeclared, sparse tensors).
  onnxserve::Value::Kind value_kind() const;
  // "float[1,3]", "seq(float[?])", "map(string,float[?])", "optional(int64[?])", "?".
  std::string DebugString() const;
};

}  // namespace onnxserve::ir
