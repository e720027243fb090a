// Element types on the wire: KServe v2 datatype strings ("FP32", "BYTES", ...) and Triton config enums
// (TYPE_FP32, TYPE_STRING, ...) to and from onnxserve's DataType. One table in datatype.cc defines all three.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "model_config.pb.h"
#include "runtime/core/data_type.h"

namespace onnxserve::server {

// "FP32" -> kFloat; INVALID_ARGUMENT naming the string when it is not a KServe datatype.
absl::StatusOr<DataType> DataTypeFromKServe(std::string_view name);
// kFloat -> "FP32"; nullptr when the type has no KServe name.
const char* KServeDataType(DataType type);

// TYPE_FP32 -> kFloat; INVALID_ARGUMENT for TYPE_INVALID.
absl::StatusOr<DataType> DataTypeFromConfig(inference::DataType type);
// kFloat -> TYPE_FP32; TYPE_INVALID when the type has no config name.
inference::DataType ConfigDataType(DataType type);

}  // namespace onnxserve::server
