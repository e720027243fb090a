// Ops over several broadcast inputs: Sum Mean Max Min (any number of inputs), Where (three) and Clip (an
// input and its optional bounds, attributes before Clip-11 and inputs from it).
#include <algorithm>
#include <limits>
#include <optional>
#include <type_traits>

#include "runtime/core/run_limits.h"
#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

struct SumOp : FloatOp {
  static constexpr vec::BinaryOp kVectorOp = vec::BinaryOp::kAdd;
  template <typename C> C operator()(C a, C b) const { return a + b; }
};

// Max/Min propagate NaN from either side, as numpy's maximum/minimum do.
struct MaxOp : NumberOp {
  template <typename C> C operator()(C a, C b) const { return (a < b || IsNan(b)) ? b : a; }
};
struct MinOp : NumberOp {
  template <typename C> C operator()(C a, C b) const { return (b < a || IsNan(b)) ? b : a; }
};

// Folds Op over all inputs broadcast together; Mean is a sum divided by the input count. Sum/Mean/Max/Min
// -1 and -6 required equal shapes (a special case of broadcasting), -8 broadcasts.
template <typename Op, bool kMean = false>
class Variadic final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    const int n = ctx.num_inputs();
    if (n == 0) return absl::InvalidArgumentError("expected at least one input");
    RETURN_IF_ERROR(RequireInputs(ctx, n));
    const Tensor& first = *ctx.Input(0);
    Shape out_shape = first.shape();
    for (int i = 1; i < n; ++i) {
      if (ctx.Input(i)->dtype() != first.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " is ", DataTypeName(ctx.Input(i)->dtype()),
                                                       ", expected ", DataTypeName(first.dtype())));
      }
      ASSIGN_OR_RETURN(out_shape, BroadcastShapes(out_shape, ctx.Input(i)->shape()));
    }
    if (n == 1) {  // Every one of these ops is the identity on a single input.
      ctx.SetOutput(0, first);
      return absl::OkStatus();
    }
    absl::Status status = UnsupportedTypeError(first.dtype());
    DispatchNumeric(first.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (Op::template kAccepts<T>) {
        Tensor& out = ctx.Output(0, first.dtype(), out_shape);
        BroadcastBinary<T, T, T>(ctx.pool(), first, *ctx.Input(1), out, op_);
        // Accumulate in place: `out` already has the output shape, so it steps with the output. A node may
        // list any number of inputs (one name repeated), so the folds count towards StopIfRunEnded.
        for (int i = 2; i < n; ++i) {
          StopIfRunEnded(out.NumElements());
          BroadcastBinary<T, T, T>(ctx.pool(), out, *ctx.Input(i), out, op_);
        }
        if constexpr (kMean) {
          const ComputeType<T> scale = ComputeType<T>{1} / static_cast<ComputeType<T>>(n);
          MapUnary(ctx.pool(), out.data<T>(), out.data<T>(), out.NumElements(),
                   [scale](ComputeType<T> v) { return v * scale; });
        }
        status = absl::OkStatus();
      }
    });
    return status;
  }

 private:
  Op op_;
};

// Where(condition, X, Y): X where condition else Y, all three broadcast together.
class Where final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& cond = *ctx.Input(0);
    const Tensor& x = *ctx.Input(1);
    const Tensor& y = *ctx.Input(2);
    if (cond.dtype() != DataType::kBool) {
      return absl::InvalidArgumentError(
          absl::StrCat("condition must be bool, got ", DataTypeName(cond.dtype())));
    }
    if (x.dtype() != y.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("X and Y must have one element type, got ",
                                                     DataTypeName(x.dtype()), " and ", DataTypeName(y.dtype())));
    }
    ASSIGN_OR_RETURN(const Shape xy_shape, BroadcastShapes(x.shape(), y.shape()));
    ASSIGN_OR_RETURN(const Shape out_shape, BroadcastShapes(cond.shape(), xy_shape));
    ASSIGN_OR_RETURN(const int64_t out_elements, CheckedElementCount(out_shape));
    RETURN_IF_ERROR(CheckBroadcastStrings({&x, &y}, out_elements));
    const BroadcastPlan<3> plan = PlanBroadcast<3>(out_shape, {&cond.shape(), &x.shape(), &y.shape()});
    const bool supported = DispatchAny(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      Tensor& out = ctx.Output(0, x.dtype(), out_shape);
      const bool* pc = cond.data<bool>();
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      T* po = out.data<T>();
      const int64_t sc = plan.steps[0], sx = plan.steps[1], sy = plan.steps[2];
      ParallelRuns(ctx.pool(), plan, [&](int64_t o, const std::array<int64_t, 3>& in, int64_t length) {
        const bool* c = pc + in[0];
        const T* a = px + in[1];
        const T* b = py + in[2];
        for (int64_t k = 0; k < length; ++k) po[o + k] = c[k * sc] ? a[k * sx] : b[k * sy];
      });
    });
    return supported ? absl::OkStatus() : UnsupportedTypeError(x.dtype());
  }
};

// The largest finite value of T, in T's compute type.
template <typename T>
ComputeType<T> LargestFinite() {
  if constexpr (std::is_same_v<T, Float16>) {
    return static_cast<float>(Float16::FromBits(0x7BFF));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return static_cast<float>(BFloat16::FromBits(0x7F7F));
  } else {
    return std::numeric_limits<T>::max();
  }
}

// The most negative finite value of T, in T's compute type.
template <typename T>
ComputeType<T> LowestFinite() {
  if constexpr (std::is_floating_point_v<ComputeType<T>>) {
    return -LargestFinite<T>();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

// Clip: y = min(max(x, min), max), so min > max yields max everywhere (as the spec says). Before Clip-11 the
// bounds are float attributes; from 11 they are optional scalar inputs of X's type. Omitted bounds are what
// the spec says they default to, T's lowest() and max(), so an infinite input comes out finite.
class Clip final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    bounds_from_inputs_ = info.opset() >= 11;
    if (bounds_from_inputs_) return absl::OkStatus();
    if (info.opset() >= 6) {  // Clip-6 documents defaults of -/+3.402823e+38; Clip-1 has none.
      min_attr_ = std::numeric_limits<float>::lowest();
      max_attr_ = std::numeric_limits<float>::max();
    }
    if (info.HasAttr("min")) {
      ASSIGN_OR_RETURN(min_attr_, info.Attr<float>("min"));
    }
    if (info.HasAttr("max")) {
      ASSIGN_OR_RETURN(max_attr_, info.Attr<float>("max"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    absl::Status status = UnsupportedTypeError(x.dtype());
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (kIsNumber<T>) {
        using C = ComputeType<T>;
        C lo = LowestFinite<T>();
        C hi = LargestFinite<T>();
        status = ReadBound<T>(ctx, 1, min_attr_, &lo);
        if (status.ok()) status = ReadBound<T>(ctx, 2, max_attr_, &hi);
        if (!status.ok()) return;
        Tensor& y = ctx.Output(0, x.dtype(), x.shape());
        if constexpr (std::is_same_v<T, float>) {
          ParallelMapFloats(ctx.pool(), x.data<float>(), y.data<float>(), x.NumElements(),
                            [lo, hi](const vec::VectorKernels& k, const float* in, float* out, int64_t n) {
                              k.clip(in, out, n, lo, hi);
                            });
        } else {
          MapUnary(ctx.pool(), x.data<T>(), y.data<T>(), x.NumElements(),
                   [lo, hi](C v) { return std::min(std::max(v, lo), hi); });
        }
      }
    });
    return status;
  }

 private:
  // Sets *bound from input `index` (Clip-11+) or the attribute (before), when given.
  template <typename T>
  absl::Status ReadBound(const KernelContext& ctx, int index, std::optional<float> attr,
                         ComputeType<T>* bound) const {
    if (!bounds_from_inputs_) {
      if (attr.has_value()) *bound = static_cast<ComputeType<T>>(*attr);
      return absl::OkStatus();
    }
    const Tensor* t = ctx.Input(index);
    if (t == nullptr) return absl::OkStatus();
    if (t->dtype() != kTypeOf<T> || t->NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(index == 1 ? "min" : "max", " must be a ",
                                                     DataTypeName(kTypeOf<T>), " scalar, got ", t->DebugString()));
    }
    *bound = ToCompute(t->data<T>()[0]);
    return absl::OkStatus();
  }

  bool bounds_from_inputs_ = true;
  std::optional<float> min_attr_;
  std::optional<float> max_attr_;
};

// -1 had consumed_inputs, -6 dropped it, -8 broadcasting, -12 (Max/Min) integer types, -13 bfloat16.
REGISTER_KERNEL(kOnnx, "Sum", 1, 5, kFloatTypes, Variadic<SumOp>);
REGISTER_KERNEL(kOnnx, "Sum", 6, 7, kFloatTypes, Variadic<SumOp>);
REGISTER_KERNEL(kOnnx, "Sum", 8, 12, kFloatTypes, Variadic<SumOp>);
REGISTER_KERNEL(kOnnx, "Sum", 13, kLatest, kFloatTypes, Variadic<SumOp>);
REGISTER_KERNEL(kOnnx, "Mean", 1, 5, kFloatTypes, Variadic<SumOp, true>);
REGISTER_KERNEL(kOnnx, "Mean", 6, 7, kFloatTypes, Variadic<SumOp, true>);
REGISTER_KERNEL(kOnnx, "Mean", 8, 12, kFloatTypes, Variadic<SumOp, true>);
REGISTER_KERNEL(kOnnx, "Mean", 13, kLatest, kFloatTypes, Variadic<SumOp, true>);
REGISTER_KERNEL(kOnnx, "Max", 1, 5, kNumericTypes, Variadic<MaxOp>);
REGISTER_KERNEL(kOnnx, "Max", 6, 7, kNumericTypes, Variadic<MaxOp>);
REGISTER_KERNEL(kOnnx, "Max", 8, 11, kNumericTypes, Variadic<MaxOp>);
REGISTER_KERNEL(kOnnx, "Max", 12, 12, kNumericTypes, Variadic<MaxOp>);
REGISTER_KERNEL(kOnnx, "Max", 13, kLatest, kNumericTypes, Variadic<MaxOp>);
REGISTER_KERNEL(kOnnx, "Min", 1, 5, kNumericTypes, Variadic<MinOp>);
REGISTER_KERNEL(kOnnx, "Min", 6, 7, kNumericTypes, Variadic<MinOp>);
REGISTER_KERNEL(kOnnx, "Min", 8, 11, kNumericTypes, Variadic<MinOp>);
REGISTER_KERNEL(kOnnx, "Min", 12, 12, kNumericTypes, Variadic<MinOp>);
REGISTER_KERNEL(kOnnx, "Min", 13, kLatest, kNumericTypes, Variadic<MinOp>);
// Where-9, -16 bfloat16. The condition is input 0, so the executor's type check cannot apply.
REGISTER_KERNEL(kOnnx, "Where", 9, 15, kAnyType, Where);
REGISTER_KERNEL(kOnnx, "Where", 16, kLatest, kAnyType, Where);
// Clip-1 attributes min/max (+consumed_inputs), -6 defaults, -11 bound inputs, -12 integers, -13 bfloat16.
REGISTER_KERNEL(kOnnx, "Clip", 1, 5, kFloatTypes, Clip);
REGISTER_KERNEL(kOnnx, "Clip", 6, 10, kFloatTypes, Clip);
REGISTER_KERNEL(kOnnx, "Clip", 11, 11, kFloatTypes, Clip);
REGISTER_KERNEL(kOnnx, "Clip", 12, 12, kNumericTypes, Clip);
REGISTER_KERNEL(kOnnx, "Clip", 13, kLatest, kNumericTypes, Clip);

}  // namespace
}  // namespace onnxserve
