#include "runtime/ops/fused_activation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/status_macros.h"

namespace onnxserve {
namespace {

struct ActivationSpec {
  const char* name;
  ActivationKind kind;
  size_t params;  // how many activation_params it takes (Gelu: 0 or 1)
};

constexpr ActivationSpec kActivations[] = {
    {"Relu", ActivationKind::kRelu, 0},        {"Clip", ActivationKind::kClip, 2},
    {"LeakyRelu", ActivationKind::kLeakyRelu, 1}, {"HardSigmoid", ActivationKind::kHardSigmoid, 2},
    {"HardSwish", ActivationKind::kHardSwish, 0}, {"Sigmoid", ActivationKind::kSigmoid, 0},
    {"Tanh", ActivationKind::kTanh, 0},        {"Gelu", ActivationKind::kGelu, 1},
};

// Rows per task: some 16 K floats, enough work to be worth a hand-off.
constexpr int64_t kActivationGrain = int64_t{1} << 14;

}  // namespace

absl::StatusOr<Activation> ActivationOf(const std::string& name, const std::vector<float>& params) {
  if (name.empty()) return Activation{};
  for (const ActivationSpec& spec : kActivations) {
    if (spec.name != name) continue;
    const bool gelu = spec.kind == ActivationKind::kGelu;
    if (gelu ? params.size() > 1 : params.size() != spec.params) {
      return absl::InvalidArgumentError(absl::StrCat("activation \"", name, "\" takes ", spec.params,
                                                     gelu ? " or fewer" : "", " activation_params, got ",
                                                     params.size()));
    }
    if (gelu) return Activation{params.empty() || params[0] == 0 ? ActivationKind::kGelu : ActivationKind::kGeluTanh};
    return Activation{spec.kind, params.size() > 0 ? params[0] : 0.0f, params.size() > 1 ? params[1] : 0.0f};
  }
  std::vector<std::string> names;
  for (const ActivationSpec& spec : kActivations) names.push_back(spec.name);
  return absl::InvalidArgumentError(
      absl::StrCat("activation \"", name, "\": expected \"\" or one of ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<Activation> FusedActivation(const KernelInfo& info) {
  ASSIGN_OR_RETURN(std::string name, info.Attr<std::string>("activation", ""));
  ASSIGN_OR_RETURN(std::vector<float> params, info.Attr<std::vector<float>>("activation_params", {}));
  return ActivationOf(name, params);
}

void ActivateRows(const Activation& activation, float* y, int64_t rows, int64_t columns, int64_t stride,
                  ThreadPool& pool) {
  if (activation.kind == ActivationKind::kNone) return;
  const vec::VectorKernels& kernels = vec::Kernels();
  pool.ParallelFor(rows, std::max<int64_t>(1, kActivationGrain / std::max<int64_t>(columns, 1)),
                   [&](int64_t begin, int64_t end) {
                     ApplyActivationToRows(kernels, activation, y + begin * stride, end - begin, columns, stride);
                   });
}

}  // namespace onnxserve
