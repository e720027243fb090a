// The activation a fused GEMM or convolution applies to its output as it stores it (GemmEpilogue,
// GroupedConvEpilogue): the ones ONNX models put right after Conv, Gemm and MatMul. The packed GEMM's
// micro-kernels apply Relu, Clip, LeakyRelu, HardSigmoid and HardSwish in their registers, with the vector
// kernels' very operations; the transcendental ones run on each finished tile of C while it is in L1, and
// the depthwise kernel's (but Relu) on each run of finished output rows, through the same vector kernels
// (runtime/math/vector_kernels.h) the standalone operators use. Either way a fused node gives bit for bit
// what the unfused graph gives on the same instruction set.
//
// Like packed_gemm_kernels.h, this header holds no inline functions: the per-ISA kernel files include it.
#pragma once

#include <cstdint>

#include "runtime/math/vector_kernels.h"

namespace onnxserve {

enum class ActivationKind : int {
  kNone,
  kRelu,
  kClip,         // clamp(x, alpha, beta) as Clip computes it (Relu6: 0, 6)
  kLeakyRelu,    // x < 0 ? alpha x : x
  kHardSigmoid,  // clamp(alpha x + beta, 0, 1)
  kHardSwish,    // x * clamp(x / 6 + 1/2, 0, 1)
  kSigmoid,
  kTanh,
  kGelu,      // x/2 * (1 + erf(x / sqrt(2)))
  kGeluTanh,  // Gelu with approximate="tanh"
};

struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float alpha = 0.0f;  // Clip's min, LeakyRelu's and HardSigmoid's alpha
  float beta = 0.0f;   // Clip's max, HardSigmoid's beta
};

// Whether `a` is more than the in-register Relu every kernel has: every kind but none and Relu.
bool AppliedAfterStore(const Activation& a);

// y[i] = f(y[i]) for i in [0, n), in place, with `kernels`' loop for a's kind.
void ApplyActivation(const vec::VectorKernels& kernels, const Activation& a, float* y, int64_t n);

// The same over `rows` rows of `columns` floats, `stride` apart: a tile of C.
void ApplyActivationToRows(const vec::VectorKernels& kernels, const Activation& a, float* y, int64_t rows,
                           int64_t columns, int64_t stride);

}  // namespace onnxserve
