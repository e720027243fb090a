// Reading and writing input_0.pb, output_0.pb, ... as the ONNX test suite lays them out: a serialized
// onnx.TensorProto, or a SequenceProto, MapProto or OptionalProto where the graph's input or output is of
// that kind (runtime/model/value_proto.h).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "runtime/core/tensor.h"
#include "runtime/core/value.h"

namespace onnxserve::cli {

absl::StatusOr<Value> ReadValueFile(const std::string& path, Value::Kind declared);
absl::StatusOr<Tensor> ReadTensorFile(const std::string& path);
absl::Status WriteValueFile(const std::string& path, const Value& value, Value::Kind declared, const std::string& name);

}  // namespace onnxserve::cli
