// Made-up input tensors: what warmup (config model_warmup) and the load generator send when no real data
// is given.
#pragma once

#include <random>

#include "absl/status/statusor.h"
#include "runtime/core/tensor.h"

namespace onnxserve::server {

// Zeros; empty strings. The shape is checked against the tensor size limits first.
absl::StatusOr<Tensor> ZeroTensor(DataType type, Shape shape);
// Uniform in [0, 1) for floating types, 0 or 1 for integers and bools: valid for most models' inputs.
// Types without arithmetic (float16, bfloat16) are zeros, strings empty.
absl::StatusOr<Tensor> RandomTensor(DataType type, Shape shape, std::mt19937& rng);

}  // namespace onnxserve::server
