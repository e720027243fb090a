// Conversion between onnx.TensorProto and Tensor: typed fields, raw_data (little-endian) and external data.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/tensor.h"

namespace onnxserve {

// `model_dir` is the folder external data locations are relative to; empty when the tensor may not use
// external data (for example a tensor read on its own from a .pb file).
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& model_dir = "");

onnx::TensorProto TensorToProto(const Tensor& tensor, const std::string& name);

}  // namespace onnxserve
