// Identity: passes its input, of any kind, through without a copy (kernels never write into their inputs).
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

class Identity final : public OpKernel {
 public:
  bool TakesValues() const override { return true; }

  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.InputValue(0) == nullptr) return absl::InvalidArgumentError("required input 0 is missing");
    return ctx.SetOutputValue(0, *ctx.InputValue(0));
  }
};

// Identity-1..13 take tensors; -14 adds sequences, -16 optionals, -19..-25 widen the type list.
REGISTER_KERNEL(kOnnx, "Identity", 1, 12, kAllTypes, Identity);
REGISTER_KERNEL(kOnnx, "Identity", 13, 13, kAllTypes, Identity);
REGISTER_KERNEL(kOnnx, "Identity", 14, 15, kAllTypes, Identity);
REGISTER_KERNEL(kOnnx, "Identity", 16, 18, kAllTypes, Identity);
REGISTER_KERNEL(kOnnx, "Identity", 19, 20, kAllTypes, Identity);
REGISTER_KERNEL(kOnnx, "Identity", 21, 22, kAllTypes, Identity);
REGISTER_KERNEL(kOnnx, "Identity", 23, 23, kAllTypes, Identity);
REGISTER_KERNEL(kOnnx, "Identity", 24, 24, kAllTypes, Identity);
REGISTER_KERNEL(kOnnx, "Identity", 25, kLatest, kAllTypes, Identity);

}  // namespace
}  // namespace onnxserve
