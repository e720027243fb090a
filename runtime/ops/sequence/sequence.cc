// Sequences of tensors (ONNX 11+): SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert,
// SequenceErase, SequenceLength. Each has one version; positions count from the back when negative and
// out-of-range positions are errors naming the range. A sequence holds tensors of one element type, so a
// tensor of another type cannot join it. Sequences are values: a new one shares the tensors of the old.
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/ops/common.h"
#include "runtime/ops/sequence/sequence.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

class SequenceConstruct final : public OpKernel {
 public:
  Value::Kind OutputKind(int) const override { return Value::Kind::kSequence; }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, ctx.num_inputs()));
    if (ctx.num_inputs() == 0) return absl::InvalidArgumentError("SequenceConstruct needs at least one input");
    const DataType elem_type = ctx.Input(0)->dtype();
    std::vector<Value> elements;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      RETURN_IF_ERROR(CheckJoins(elem_type, *ctx.Input(i), absl::StrCat("input ", i).c_str()));
      elements.push_back(*ctx.Input(i));
    }
    return ctx.SetOutputValue(0, Value::Sequence(elem_type, std::move(elements)));
  }
};

class SequenceEmpty final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t dtype, info.Attr<int64_t>("dtype", onnx::TensorProto::FLOAT));
    ASSIGN_OR_RETURN(elem_type_, DataTypeFromOnnx(static_cast<int32_t>(dtype)));
    return absl::OkStatus();
  }
  Value::Kind OutputKind(int) const override { return Value::Kind::kSequence; }

  absl::Status Compute(KernelContext& ctx) const override {
    return ctx.SetOutputValue(0, Value::Sequence(elem_type_, {}));
  }

 private:
  DataType elem_type_ = DataType::kFloat;
};

class SequenceAt final : public OpKernel {
 public:
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kTensor; }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Value* sequence, SequenceInput(ctx, 0));
    ASSIGN_OR_RETURN(const std::optional<int64_t> position, PositionInput(ctx, 1));
    if (!position) return absl::InvalidArgumentError("required input 1 (position) is missing");
    const auto& elements = sequence->elements();
    ASSIGN_OR_RETURN(const int64_t at, ResolveIndex(*position, static_cast<int64_t>(elements.size()), true));
    return ctx.SetOutputValue(0, elements[at]);
  }
};

// Inserts at `position` in [-n, n] (n: the back), or at the back without one.
class SequenceInsert final : public OpKernel {
 public:
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kSequence; }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Value* sequence, SequenceInput(ctx, 0));
    ASSIGN_OR_RETURN(const Tensor* tensor, ctx.TensorInput(1));
    if (tensor == nullptr) return absl::InvalidArgumentError("required input 1 (tensor) is missing");
    const DataType elem_type = SequenceElementType(*sequence);
    RETURN_IF_ERROR(CheckJoins(elem_type, *tensor, "tensor"));
    ASSIGN_OR_RETURN(const std::optional<int64_t> position, PositionInput(ctx, 2));
    std::vector<Value> elements = sequence->elements();
    const int64_t n = static_cast<int64_t>(elements.size());
    int64_t at = position.value_or(n);
    if (at < -n || at > n) {
      return absl::InvalidArgumentError(absl::StrCat("position ", at, " is out of range [", -n, ", ", n, "]"));
    }
    if (at < 0) at += n;
    RETURN_IF_ERROR(CheckSequenceLength(n + 1));
    elements.insert(elements.begin() + at, *tensor);
    const DataType out_type = elem_type == DataType::kUndefined ? tensor->dtype() : elem_type;
    return ctx.SetOutputValue(0, Value::Sequence(out_type, std::move(elements)));
  }
};

// Erases the tensor at `position` in [-n, n - 1], or the last one without one.
class SequenceErase final : public OpKernel {
 public:
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kSequence; }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Value* sequence, SequenceInput(ctx, 0));
    ASSIGN_OR_RETURN(const std::optional<int64_t> position, PositionInput(ctx, 1));
    std::vector<Value> elements = sequence->elements();
    const int64_t n = static_cast<int64_t>(elements.size());
    if (n == 0) return absl::InvalidArgumentError("cannot erase from an empty sequence");
    ASSIGN_OR_RETURN(const int64_t at, ResolveIndex(position.value_or(n - 1), n, true));
    elements.erase(elements.begin() + at);
    return ctx.SetOutputValue(0, Value::Sequence(SequenceElementType(*sequence), std::move(elements)));
  }
};

class SequenceLength final : public OpKernel {
 public:
  bool TakesValues() const override { return true; }
  Value::Kind OutputKind(int) const override { return Value::Kind::kTensor; }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const Value* sequence, SequenceInput(ctx, 0));
    ctx.SetOutput(0, Tensor::Scalar<int64_t>(static_cast<int64_t>(sequence->elements().size())));
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(kOnnx, "SequenceConstruct", 11, kLatest, kAllTypes, SequenceConstruct);
REGISTER_KERNEL(kOnnx, "SequenceEmpty", 11, kLatest, kAnyType, SequenceEmpty);
REGISTER_KERNEL(kOnnx, "SequenceAt", 11, kLatest, kAnyType, SequenceAt);
REGISTER_KERNEL(kOnnx, "SequenceInsert", 11, kLatest, kAnyType, SequenceInsert);
REGISTER_KERNEL(kOnnx, "SequenceErase", 11, kLatest, kAnyType, SequenceErase);
REGISTER_KERNEL(kOnnx, "SequenceLength", 11, kLatest, kAnyType, SequenceLength);

}  // namespace
}  // namespace onnxserve
