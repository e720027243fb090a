// Optionals (ONNX 15+): Optional wraps a value (or, without input, makes an empty optional of the `type`
// attribute); OptionalGetElement unwraps one; OptionalHasElement says whether there is one.
//
//   OptionalGetElement-15, OptionalHasElement-15  take an optional.
//   OptionalGetElement-18  also takes a tensor or a sequence, and returns it.
//   OptionalHasElement-18  also takes a tensor or a sequence (true) or no input at all (false).
// Earlier versions are given the same leniency: a model valid for them behaves the same.
#include "absl/strings/str_cat.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

class Optional final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    if (!info.HasInput(0) && !info.HasAttr("type")) {
      return absl::InvalidArgumentError("an Optional without input needs the \"type\" attribute");
    }
    return absl::OkStatus();
  }
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kOptional; }

  absl::Status Compute(KernelContext& ctx) const override {
    const Value* input = ctx.InputValue(0);
    if (input != nullptr && input->is_optional()) {
      return absl::InvalidArgumentError("the input is already an optional; optionals do not nest");
    }
    return ctx.SetOutputValue(0, input == nullptr ? Value::EmptyOptional() : Value::Optional(*input));
  }
};

class OptionalGetElement final : public OpKernel {
 public:
  bool TakesValues() const override { return true; }

  absl::Status Compute(KernelContext& ctx) const override {
    const Value* input = ctx.InputValue(0);
    if (input == nullptr) return absl::InvalidArgumentError("required input 0 is missing");
    if (!input->is_optional()) return ctx.SetOutputValue(0, *input);
    // The spec leaves an empty optional undefined; here it is an error that says so.
    if (!input->has_element()) return absl::InvalidArgumentError("the optional input is empty");
    return ctx.SetOutputValue(0, input->element());
  }
};

class OptionalHasElement final : public OpKernel {
 public:
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kTensor; }

  absl::Status Compute(KernelContext& ctx) const override {
    const Value* input = ctx.InputValue(0);
    const bool has = input != nullptr && (input->is_optional() ? input->has_element() : input->defined());
    ctx.SetOutput(0, Tensor::Scalar<bool>(has));
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(kOnnx, "Optional", 15, kLatest, kAnyType, Optional);
REGISTER_KERNEL(kOnnx, "OptionalGetElement", 15, 17, kAnyType, OptionalGetElement);
REGISTER_KERNEL(kOnnx, "OptionalGetElement", 18, kLatest, kAnyType, OptionalGetElement);
REGISTER_KERNEL(kOnnx, "OptionalHasElement", 15, 17, kAnyType, OptionalHasElement);
REGISTER_KERNEL(kOnnx, "OptionalHasElement", 18, kLatest, kAnyType, OptionalHasElement);

}  // namespace
}  // namespace onnxserve
