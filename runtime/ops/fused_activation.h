// The activation of the fused nodes the graph passes write (FusedConv, FusedGemm, domain ai.onnxserve):
// attribute `activation` names the ONNX operator absorbed ("Relu", "Clip", "LeakyRelu", "HardSigmoid",
// "HardSwish", "Sigmoid", "Tanh", "Gelu"), `activation_params` its float parameters as that operator
// defines them (Clip: min, max; LeakyRelu: alpha; HardSigmoid: alpha, beta; Gelu: 1 for
// approximate="tanh", else none). This one table serves the pass that writes them and the kernels.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/math/activation.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

// The activation `name` with `params`, or an error naming what was expected.
absl::StatusOr<Activation> ActivationOf(const std::string& name, const std::vector<float>& params);

// The activation a fused node's attributes ask for (none when absent).
absl::StatusOr<Activation> FusedActivation(const KernelInfo& info);

// `activation` over `rows` rows of `columns` floats, `stride` apart, split over `pool`: the block an
// OpenBLAS GEMM just wrote, while it is in cache. The same vector kernels as the standalone operators.
void ActivateRows(const Activation& activation, float* y, int64_t rows, int64_t columns, int64_t stride,
                  ThreadPool& pool);

}  // namespace onnxserve
