#include "tests/support/activation_reference.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"

namespace onnxserve::testing {

double ReferenceActivation(const Activation& a, double x) {
  switch (a.kind) {
    case ActivationKind::kNone:
      return x;
    case ActivationKind::kRelu:
      return x < 0 ? 0.0 : x;
    case ActivationKind::kClip:
      return std::min(std::max(x, double{a.alpha}), double{a.beta});
    case ActivationKind::kLeakyRelu:
      return x < 0 ? a.alpha * x : x;
    case ActivationKind::kHardSigmoid:
      return std::clamp(a.alpha * x + a.beta, 0.0, 1.0);
    case ActivationKind::kHardSwish:
      return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    case ActivationKind::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case ActivationKind::kTanh:
      return std::tanh(x);
    case ActivationKind::kGelu:
      return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2));
    case ActivationKind::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

std::vector<Activation> EveryActivation() {
  return {
      {ActivationKind::kRelu},
      {ActivationKind::kClip, -0.5f, 0.7f},
      {ActivationKind::kClip, 0.0f, 6.0f},  // Relu6
      {ActivationKind::kLeakyRelu, 0.1f},
      {ActivationKind::kHardSigmoid, 0.3f, 0.4f},
      {ActivationKind::kHardSwish},
      {ActivationKind::kSigmoid},
      {ActivationKind::kTanh},
      {ActivationKind::kGelu},
      {ActivationKind::kGeluTanh},
  };
}

std::string DescribeActivation(const Activation& a) {
  static constexpr const char* kNames[] = {"None",      "Relu",    "Clip", "LeakyRelu", "HardSigmoid",
                                           "HardSwish", "Sigmoid", "Tanh", "Gelu",      "GeluTanh"};
  return absl::StrCat(kNames[static_cast<int>(a.kind)], "(", a.alpha, ", ", a.beta, ")");
}

}  // namespace onnxserve::testing
