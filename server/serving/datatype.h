// Element types on the wire: KServe v2 datatype strings ("FP32", "BYTES", ...) and Triton config enums
// (TYPE_FP32, TYPE_STRING, ...) to and from onnxserve's DataType. One table in datatype.cc defines all three.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "grpc_service.pb.h"
#include "model_config.pb.h"
#include "runtime/core/data_type.h"
#include "runtime/core/tensor.h"

namespace onnxserve::server {

// "FP32" -> kFloat; INVALID_ARGUMENT naming the string when it is not a KServe datatype.
absl::StatusOr<DataType> DataTypeFromKServe(std::string_view name);
// kFloat -> "FP32"; nullptr when the type has no KServe name.
const char* KServeDataType(DataType type);

// TYPE_FP32 -> kFloat; INVALID_ARGUMENT for TYPE_INVALID.
absl::StatusOr<DataType> DataTypeFromConfig(inference::DataType type);
// kFloat -> TYPE_FP32; TYPE_INVALID when the type has no config name.
inference::DataType ConfigDataType(DataType type);

// Tensor payloads. Raw form: the row-major elements little-endian, BYTES elements each preceded by a
// 4-byte little-endian length, BOOL elements bytes 0 or 1. `name` only labels errors, which are
// INVALID_ARGUMENT and say what the shape implies ("input \"x\": raw content is 12 bytes, expected 16 for
// FP32 [2,2]").
// With an `owner`, numbers are not copied: the tensor wraps `raw` and holds `owner`, which must keep `raw`
// alive and unchanged for as long as anything holds it (an output that shares an input's storage included).
// BYTES elements, and numbers not aligned for their type, are copied whatever the owner.
absl::StatusOr<Tensor> TensorFromRaw(const std::string& name, DataType type, const Shape& shape,
                                     std::string_view raw, std::shared_ptr<const void> owner = nullptr);
// Typed form: the InferTensorContents field matching `type` (FP16 and BF16 have none: raw only).
absl::StatusOr<Tensor> TensorFromContents(const std::string& name, DataType type, const Shape& shape,
                                          const inference::InferTensorContents& contents);
// Appends `tensor` in raw form; RESOURCE_EXHAUSTED, with nothing appended, for a BYTES element longer than
// its 4-byte length prefix can say (a model's output can be: StringConcat doubles a string per node).
absl::Status AppendRaw(const Tensor& tensor, std::string& out);

}  // namespace onnxserve::server
