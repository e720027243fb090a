// Reading and writing serialized onnx.TensorProto files (input_0.pb, output_0.pb, ... as the ONNX test
// suite lays them out).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/tensor.h"

namespace onnxserve::cli {

absl::StatusOr<onnx::TensorProto> ReadTensorProtoFile(const std::string& path);
absl::StatusOr<Tensor> ReadTensorFile(const std::string& path);
absl::Status WriteTensorFile(const std::string& path, const Tensor& tensor, const std::string& name);

}  // namespace onnxserve::cli
