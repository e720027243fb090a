// Values in files, as the ONNX backend test data stores them in input_K.pb / output_K.pb: a serialized
// TensorProto, SequenceProto, MapProto or OptionalProto (onnx-data.proto). A file does not say which, so
// the reader is told the kind the graph declares for the input or output.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "onnx/onnx-data_pb.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/value.h"

namespace onnxserve {

absl::StatusOr<Value> ValueFromProto(const onnx::SequenceProto& proto);
absl::StatusOr<Value> ValueFromProto(const onnx::MapProto& proto);
absl::StatusOr<Value> ValueFromProto(const onnx::OptionalProto& proto);

// Parses `bytes` as the proto of the `declared` kind (kNone, an undeclared type, reads a TensorProto).
absl::StatusOr<Value> ParseValue(std::string_view bytes, Value::Kind declared);
// Serializes `value` as the proto of its kind, named `name`; where `declared` is kOptional and the value
// is not one, as a present OptionalProto (optional inputs and outputs take their element).
absl::StatusOr<std::string> SerializeValue(const Value& value, Value::Kind declared, const std::string& name);

}  // namespace onnxserve
