// Dropout: the identity at inference; in training y = x * mask / (1 - ratio) with a random keep-mask.
//
// How each version decides the mode and types:
//   1, 6    ratio attribute; training unless is_test != 0; mask has the input's type (1 = kept).
//   7       ratio attribute; no is_test: always inference; mask has the input's type.
//   10      as 7 but the mask is bool.
//   12+     ratio and training_mode are optional inputs (0.5 and false by default), seed attribute.
// The mask draws uniform doubles from numpy's legacy stream (runtime/ops/random/numpy_random.h), so a
// seeded Dropout reproduces the ONNX reference implementation bit for bit. Without a seed every run draws
// a fresh one.
#include <cstdint>
#include <optional>

#include "runtime/ops/common.h"
#include "runtime/ops/random/numpy_random.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

struct DropoutMode {
  bool training = false;
  double ratio = 0.5;
};

class Dropout final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    opset_ = info.opset();
    if (opset_ < 12) {
      ASSIGN_OR_RETURN(float ratio, info.Attr<float>("ratio", 0.5f));
      ratio_attr_ = ratio;
      RETURN_IF_ERROR(CheckRatio(ratio_attr_));
    }
    if (opset_ < 7) {
      ASSIGN_OR_RETURN(int64_t is_test, info.Attr<int64_t>("is_test", 0));
      training_attr_ = is_test == 0;
    }
    if (opset_ >= 12 && info.HasAttr("seed")) {
      ASSIGN_OR_RETURN(int64_t seed, info.Attr<int64_t>("seed"));
      seed_ = static_cast<uint32_t>(seed);
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(DropoutMode mode, ModeOf(ctx));
    const bool bool_mask = opset_ >= 10;
    bool ok = false;
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<ComputeType<T>>) {
        ok = true;
        if (!mode.training || mode.ratio == 0) {
          PassThrough<T>(ctx, x, bool_mask);
        } else {
          DropRandomly<T>(ctx, x, mode.ratio, bool_mask);
        }
      }
    });
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("input \"data\" must be a floating-point tensor, got ", x.DebugString()));
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status CheckRatio(double ratio) {
    if (ratio < 0 || ratio >= 1) {
      return absl::InvalidArgumentError(absl::StrCat("ratio must be in [0, 1), got ", ratio));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<DropoutMode> ModeOf(const KernelContext& ctx) const {
    DropoutMode mode;
    if (opset_ < 12) {
      mode.ratio = ratio_attr_;
      mode.training = training_attr_;
      return mode;
    }
    if (const Tensor* ratio = ctx.Input(1); ratio != nullptr) {
      if (ratio->NumElements() != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("input \"ratio\" must be a scalar, got ", ratio->DebugString()));
      }
      mode.ratio = ratio->GetAsDouble(0);
    }
    if (const Tensor* training = ctx.Input(2); training != nullptr) {
      if (training->dtype() != DataType::kBool || training->NumElements() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input \"training_mode\" must be a bool scalar, got ", training->DebugString()));
      }
      mode.training = *training->data<bool>();
    }
    if (mode.training) RETURN_IF_ERROR(CheckRatio(mode.ratio));
    return mode;
  }

  // Inference (or ratio 0): y is x itself and every element is kept.
  template <typename T>
  static void PassThrough(KernelContext& ctx, const Tensor& x, bool bool_mask) {
    ctx.SetOutput(0, x);
    if (!ctx.OutputWanted(1)) return;
    if (bool_mask) {
      for (bool& m : ctx.Output(1, DataType::kBool, x.shape()).template mutable_values<bool>()) m = true;
    } else {
      for (T& m : ctx.Output(1, x.dtype(), x.shape()).template mutable_values<T>()) m = FromCompute<T>(1);
    }
  }

  template <typename T>
  void DropRandomly(KernelContext& ctx, const Tensor& x, double ratio, bool bool_mask) const {
    using C = ComputeType<T>;
    NumpyRandom gen(seed_);
    const C scale = static_cast<C>(1.0 / (1.0 - ratio));
    const T* in = x.data<T>();
    T* out = ctx.Output(0, x.dtype(), x.shape()).template data<T>();
    const bool want_mask = ctx.OutputWanted(1);
    bool* bool_out = want_mask && bool_mask ? ctx.Output(1, DataType::kBool, x.shape()).template data<bool>()
                                            : nullptr;
    T* typed_out = want_mask && !bool_mask ? ctx.Output(1, x.dtype(), x.shape()).template data<T>() : nullptr;
    // Sequential on purpose: the mask is one stream of draws so a seed reproduces it.
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const bool keep = gen.Uniform() >= ratio;
      // Multiplying (rather than selecting 0) keeps NaN and the sign of zero as the spec's formula does.
      out[i] = FromCompute<T>(ToCompute(in[i]) * static_cast<C>(keep) * scale);
      if (bool_out != nullptr) bool_out[i] = keep;
      if (typed_out != nullptr) typed_out[i] = FromCompute<T>(static_cast<C>(keep));
    }
  }

  int opset_ = 0;
  double ratio_attr_ = 0.5;
  bool training_attr_ = false;
  std::optional<uint32_t> seed_;
};

REGISTER_KERNEL(kOnnx, "Dropout", 1, 5, kFloatTypes, Dropout);
REGISTER_KERNEL(kOnnx, "Dropout", 6, 6, kFloatTypes, Dropout);
REGISTER_KERNEL(kOnnx, "Dropout", 7, 9, kFloatTypes, Dropout);
REGISTER_KERNEL(kOnnx, "Dropout", 10, 11, kFloatTypes, Dropout);
REGISTER_KERNEL(kOnnx, "Dropout", 12, 12, kFloatTypes, Dropout);
REGISTER_KERNEL(kOnnx, "Dropout", 13, 21, kFloatTypes, Dropout);
REGISTER_KERNEL(kOnnx, "Dropout", 22, kLatest, kFloatTypes, Dropout);

}  // namespace
}  // namespace onnxserve
