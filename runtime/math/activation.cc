#include "runtime/math/activation.h"

namespace onnxserve {

bool AppliedAfterStore(const Activation& a) {
  return a.kind != ActivationKind::kNone && a.kind != ActivationKind::kRelu;
}

void ApplyActivation(const vec::VectorKernels& k, const Activation& a, float* y, int64_t n) {
  switch (a.kind) {
    case ActivationKind::kNone:
      return;
    case ActivationKind::kRelu:
      return k.relu(y, y, n);
    case ActivationKind::kClip:
      return k.clip(y, y, n, a.alpha, a.beta);
    case ActivationKind::kLeakyRelu:
      return k.leaky_relu(y, y, n, a.alpha);
    case ActivationKind::kHardSigmoid:
      return k.hard_sigmoid(y, y, n, a.alpha, a.beta);
    case ActivationKind::kHardSwish:
      return k.hard_swish(y, y, n);
    case ActivationKind::kSigmoid:
      return k.sigmoid(y, y, n);
    case ActivationKind::kTanh:
      return k.tanh(y, y, n);
    case ActivationKind::kGelu:
      return k.gelu_erf(y, y, n);
    case ActivationKind::kGeluTanh:
      return k.gelu_tanh(y, y, n);
  }
}

void ApplyActivationToRows(const vec::VectorKernels& k, const Activation& a, float* y, int64_t rows,
                           int64_t columns, int64_t stride) {
  if (columns == stride) return ApplyActivation(k, a, y, rows * columns);
  for (int64_t r = 0; r < rows; ++r) ApplyActivation(k, a, y + r * stride, columns);
}

}  // namespace onnxserve
