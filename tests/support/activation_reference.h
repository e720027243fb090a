// The fused activations (runtime/math/activation.h) from their ONNX definitions, in double: the reference
// that the epilogue tests of the packed GEMM and the grouped convolution check against.
#pragma once

#include <string>
#include <vector>

#include "runtime/math/activation.h"

namespace onnxserve::testing {

double ReferenceActivation(const Activation& a, double x);

// One activation of each kind, with parameters other than the operators' defaults.
std::vector<Activation> EveryActivation();

// "HardSigmoid(0.3, 0.4)" for test traces.
std::string DescribeActivation(const Activation& a);

}  // namespace onnxserve::testing
