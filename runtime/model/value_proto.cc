#include "runtime/model/value_proto.h"

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/model/tensor_proto.h"

namespace onnxserve {
namespace {

// Where a SequenceProto or OptionalProto says what its elements are.
enum ElemType : int32_t {
  kUndefinedElem = onnx::SequenceProto::UNDEFINED,
  kTensorElem = onnx::SequenceProto::TENSOR,
  kSequenceElem = onnx::SequenceProto::SEQUENCE,
  kMapElem = onnx::SequenceProto::MAP,
  kOptionalElem = onnx::SequenceProto::OPTIONAL,
};

absl::StatusOr<Value> TensorValue(const onnx::TensorProto& proto) {
  ASSIGN_OR_RETURN(Tensor tensor, TensorFromProto(proto));
  return Value(std::move(tensor));
}

// Decodes each element of `list` (a repeated proto field) with ValueFromProto or TensorValue.
template <typename List, typename Decode>
absl::Status AppendAll(const List& list, Decode decode, std::vector<Value>& out) {
  for (const auto& item : list) {
    ASSIGN_OR_RETURN(Value value, decode(item));
    out.push_back(std::move(value));
  }
  return absl::OkStatus();
}

template <typename Proto>
absl::StatusOr<Value> Decode(const Proto& proto) {
  return ValueFromProto(proto);
}

int32_t ElemTypeOf(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kTensor: return kTensorElem;
    case Value::Kind::kSequence: return kSequenceElem;
    case Value::Kind::kMap: return kMapElem;
    case Value::Kind::kOptional: return kOptionalElem;
    default: return kUndefinedElem;
  }
}

absl::Status ToProto(const Value& value, const std::string& name, onnx::SequenceProto& proto);
absl::Status ToProto(const Value& value, const std::string& name, onnx::MapProto& proto);
absl::Status ToProto(const Value& value, const std::string& name, onnx::OptionalProto& proto);

absl::Status ToProto(const Value& value, const std::string& name, onnx::SequenceProto& proto) {
  proto.set_name(name);
  const auto& elements = value.elements();
  // An empty sequence is one of tensors: the only kind sequences of the spec's operators hold.
  proto.set_elem_type(elements.empty() ? kTensorElem : ElemTypeOf(elements[0]));
  for (const Value& element : elements) {
    if (ElemTypeOf(element) != proto.elem_type()) {
      return absl::InvalidArgumentError(absl::StrCat("sequence mixes ", ValueKindName(elements[0].kind()), " and ",
                                                     ValueKindName(element.kind()), " elements"));
    }
    switch (element.kind()) {
      case Value::Kind::kTensor: *proto.add_tensor_values() = TensorToProto(*element.tensor(), ""); break;
      case Value::Kind::kSequence: RETURN_IF_ERROR(ToProto(element, "", *proto.add_sequence_values())); break;
      case Value::Kind::kMap: RETURN_IF_ERROR(ToProto(element, "", *proto.add_map_values())); break;
      case Value::Kind::kOptional: RETURN_IF_ERROR(ToProto(element, "", *proto.add_optional_values())); break;
      default: return absl::InvalidArgumentError("sequence holds an undefined value");
    }
  }
  return absl::OkStatus();
}

absl::Status ToProto(const Value& value, const std::string& name, onnx::MapProto& proto) {
  proto.set_name(name);
  const Tensor& keys = value.keys();
  proto.set_key_type(static_cast<int32_t>(keys.dtype()));  // DataType numbers are ONNX's
  for (int64_t i = 0; i < keys.NumElements(); ++i) {
    if (keys.dtype() == DataType::kString) {
      proto.add_string_keys(keys.data<std::string>()[i]);
    } else {
      proto.add_keys(keys.GetAsInt64(i));
    }
  }
  return ToProto(Value::Sequence(DataType::kUndefined, value.elements()), "", *proto.mutable_values());
}

absl::Status ToProto(const Value& value, const std::string& name, onnx::OptionalProto& proto) {
  proto.set_name(name);
  if (!value.has_element()) {
    proto.set_elem_type(kUndefinedElem);
    return absl::OkStatus();
  }
  const Value& element = value.element();
  proto.set_elem_type(ElemTypeOf(element));
  switch (element.kind()) {
    case Value::Kind::kTensor: *proto.mutable_tensor_value() = TensorToProto(*element.tensor(), ""); break;
    case Value::Kind::kSequence: return ToProto(element, "", *proto.mutable_sequence_value());
    case Value::Kind::kMap: return ToProto(element, "", *proto.mutable_map_value());
    default: return absl::InvalidArgumentError(absl::StrCat("an optional cannot hold ", element.DebugString()));
  }
  return absl::OkStatus();
}

template <typename Proto>
absl::StatusOr<std::string> Serialized(const Value& value, const std::string& name) {
  Proto proto;
  RETURN_IF_ERROR(ToProto(value, name, proto));
  return proto.SerializeAsString();
}

// Map keys as a tensor of the key type: integers come as int64 in the proto whatever their type.
absl::StatusOr<Tensor> MapKeys(const onnx::MapProto& proto) {
  ASSIGN_OR_RETURN(const DataType key_type, DataTypeFromOnnx(proto.key_type()));
  if (key_type == DataType::kString) {
    return Tensor::FromVector<std::string>({proto.string_keys_size()},
                                           {proto.string_keys().begin(), proto.string_keys().end()});
  }
  const bool integral = key_type == DataType::kInt8 || key_type == DataType::kInt16 || key_type == DataType::kInt32 ||
                        key_type == DataType::kInt64 || key_type == DataType::kUint8 ||
                        key_type == DataType::kUint16 || key_type == DataType::kUint32 ||
                        key_type == DataType::kUint64;
  if (!integral) {
    return absl::InvalidArgumentError(absl::StrCat("map keys must be integers or strings, got ", DataTypeName(key_type)));
  }
  ASSIGN_OR_RETURN(Tensor keys, Tensor::Create(key_type, {proto.keys_size()}));
  DispatchNumeric(key_type, [&](auto tag) {
    using T = decltype(tag);
    for (int i = 0; i < proto.keys_size(); ++i) keys.data<T>()[i] = static_cast<T>(proto.keys(i));
  });
  return keys;
}

}  // namespace

absl::StatusOr<Value> ValueFromProto(const onnx::SequenceProto& proto) {
  std::vector<Value> elements;
  switch (proto.elem_type()) {
    case kUndefinedElem: break;
    case kTensorElem: RETURN_IF_ERROR(AppendAll(proto.tensor_values(), TensorValue, elements)); break;
    case kSequenceElem: RETURN_IF_ERROR(AppendAll(proto.sequence_values(), Decode<onnx::SequenceProto>, elements)); break;
    case kMapElem: RETURN_IF_ERROR(AppendAll(proto.map_values(), Decode<onnx::MapProto>, elements)); break;
    case kOptionalElem: RETURN_IF_ERROR(AppendAll(proto.optional_values(), Decode<onnx::OptionalProto>, elements)); break;
    default:
      return absl::UnimplementedError(absl::StrCat("sequence \"", proto.name(), "\": element type ", proto.elem_type(),
                                                   " (sparse tensors) is not supported"));
  }
  DataType elem_type = DataType::kUndefined;
  if (!elements.empty() && elements[0].is_tensor()) elem_type = elements[0].tensor()->dtype();
  for (size_t i = 0; i < elements.size() && elem_type != DataType::kUndefined; ++i) {
    if (elements[i].tensor()->dtype() != elem_type) {
      return absl::InvalidArgumentError(absl::StrCat("sequence \"", proto.name(), "\": element ", i, " is ",
                                                     elements[i].DebugString(), ", element 0 ",
                                                     elements[0].DebugString()));
    }
  }
  return Value::Sequence(elem_type, std::move(elements));
}

absl::StatusOr<Value> ValueFromProto(const onnx::MapProto& proto) {
  ASSIGN_OR_RETURN(Tensor keys, MapKeys(proto));
  ASSIGN_OR_RETURN(Value values, ValueFromProto(proto.values()));
  if (static_cast<int64_t>(values.elements().size()) != keys.NumElements()) {
    return absl::InvalidArgumentError(absl::StrCat("map \"", proto.name(), "\" has ", keys.NumElements(), " keys and ",
                                                   values.elements().size(), " values"));
  }
  return Value::Map(std::move(keys), values.elements());
}

absl::StatusOr<Value> ValueFromProto(const onnx::OptionalProto& proto) {
  Value element;
  switch (proto.elem_type()) {
    case kUndefinedElem: break;
    case kTensorElem:
      if (proto.has_tensor_value()) {
        ASSIGN_OR_RETURN(element, TensorValue(proto.tensor_value()));
      }
      break;
    case kSequenceElem:
      if (proto.has_sequence_value()) {
        ASSIGN_OR_RETURN(element, ValueFromProto(proto.sequence_value()));
      }
      break;
    case kMapElem:
      if (proto.has_map_value()) {
        ASSIGN_OR_RETURN(element, ValueFromProto(proto.map_value()));
      }
      break;
    default:
      return absl::UnimplementedError(absl::StrCat("optional \"", proto.name(), "\": element type ", proto.elem_type(),
                                                   " is not supported"));
  }
  return Value::Optional(std::move(element));
}

absl::StatusOr<Value> ParseValue(std::string_view bytes, Value::Kind declared) {
  auto parse = [&](auto proto, const char* what) -> absl::StatusOr<decltype(proto)> {
    if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return absl::InvalidArgumentError(absl::StrCat("not a serialized onnx.", what));
    }
    return proto;
  };
  switch (declared) {
    case Value::Kind::kSequence: {
      ASSIGN_OR_RETURN(auto proto, parse(onnx::SequenceProto(), "SequenceProto"));
      return ValueFromProto(proto);
    }
    case Value::Kind::kMap: {
      ASSIGN_OR_RETURN(auto proto, parse(onnx::MapProto(), "MapProto"));
      return ValueFromProto(proto);
    }
    case Value::Kind::kOptional: {
      ASSIGN_OR_RETURN(auto proto, parse(onnx::OptionalProto(), "OptionalProto"));
      return ValueFromProto(proto);
    }
    default: {
      ASSIGN_OR_RETURN(auto proto, parse(onnx::TensorProto(), "TensorProto"));
      return TensorValue(proto);
    }
  }
}

absl::StatusOr<std::string> SerializeValue(const Value& value, Value::Kind declared, const std::string& name) {
  if (declared == Value::Kind::kOptional && !value.is_optional()) {
    return Serialized<onnx::OptionalProto>(Value::Optional(value), name);
  }
  switch (value.kind()) {
    case Value::Kind::kTensor: return TensorToProto(*value.tensor(), name).SerializeAsString();
    case Value::Kind::kSequence: return Serialized<onnx::SequenceProto>(value, name);
    case Value::Kind::kMap: return Serialized<onnx::MapProto>(value, name);
    case Value::Kind::kOptional: return Serialized<onnx::OptionalProto>(value, name);
    default: return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" holds no value"));
  }
}

}  // namespace onnxserve
