// The channels-last ops (domain ai.onnxserve, written by runtime/passes/channels_last.cc); their maps are
// NHWC [N, H, W, C]:
//   ToNhwc(X) -> Y: NCHW [N, C, H, W] to NHWC;
//   FromNhwc(X) -> Y: back to NCHW;
//   NhwcConv(X, W, B, Z) -> Y: FusedConv (its attributes, `activation` included) on X and Z in NHWC,
//   writing Y in NHWC, on oneDNN (runtime/math/nhwc_conv.h). A shape oneDNN does not take runs on
//   FusedConv's own kernel between layout changes, so a model the pass rewrote computes what it did;
//   NhwcGlobalAveragePool(X) -> Y: GlobalAveragePool in NHWC, Y [N, 1, 1, C].
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/math/nhwc_conv.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/ops/fused_activation.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

constexpr DataType kFloatOnly[] = {DataType::kFloat};

absl::Status CheckFloatMaps(const Tensor& x, const char* name, const char* dims) {
  if (x.dtype() == DataType::kFloat && x.rank() == 4) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, " ", x.DebugString(), ": expected float ", dims));
}

Tensor ToNchw(const Tensor& x, ThreadPool& pool) {
  Tensor y(DataType::kFloat, {x.dim(0), x.dim(3), x.dim(1), x.dim(2)});
  NhwcToNchw(x.dim(0), x.dim(3), x.dim(1) * x.dim(2), x.data<float>(), y.data<float>(), pool);
  return y;
}

class ToNhwcKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    RETURN_IF_ERROR(CheckFloatMaps(x, "X", "[N,C,H,W]"));
    Tensor& y = ctx.Output(0, DataType::kFloat, {x.dim(0), x.dim(2), x.dim(3), x.dim(1)});
    NchwToNhwc(x.dim(0), x.dim(1), x.dim(2) * x.dim(3), x.data<float>(), y.data<float>(), ctx.pool());
    return absl::OkStatus();
  }
};

class FromNhwcKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    RETURN_IF_ERROR(CheckFloatMaps(x, "X", "[N,H,W,C]"));
    ctx.SetOutput(0, ToNchw(x, ctx.pool()));
    return absl::OkStatus();
  }
};

class NhwcConvKernel final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    RETURN_IF_ERROR(attrs_.Parse(info));
    ASSIGN_OR_RETURN(activation_, FusedActivation(info));
    const Tensor* w = info.ConstantInput(1);
    if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() != 4 || w->NumElements() == 0) {
      return absl::InvalidArgumentError("W: expected a constant float [M,C/group,kH,kW]");
    }
    const bool depthwise = attrs_.group > 1 && w->dim(1) == 1 && w->dim(0) == attrs_.group;
    if (attrs_.group != 1 && !depthwise) {
      return absl::InvalidArgumentError(absl::StrCat("group ", attrs_.group, " of W ", w->DebugString(),
                                                     ": expected 1, or one channel and map per group"));
    }
    weights_ = {.maps = w->dim(0), .channels = w->dim(1), .kernel_h = w->dim(2), .kernel_w = w->dim(3),
                .depthwise = depthwise};
    conv_ = NhwcConv::Create(weights_, info.HasInput(3), activation_);
    // The fallback sees W as not constant, so it packs no second copy of it at load; it runs rarely.
    const KernelInfo fallback_info(info.node(), {}, {});
    ASSIGN_OR_RETURN(fallback_, KernelRegistry::Global().Find(kInternal, "FusedConv", 1)->create(fallback_info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& w = *ctx.Input(1);
    const Tensor* b = ctx.Input(2);
    const Tensor* z = ctx.Input(3);
    const int64_t channels = weights_.channels * attrs_.group, maps = weights_.maps;
    RETURN_IF_ERROR(CheckFloatMaps(x, "X", "[N,H,W,C]"));
    if (x.dim(3) != channels) {
      return absl::InvalidArgumentError(absl::StrCat("X ", x.DebugString(), ": expected ", channels, " channels"));
    }
    if (b != nullptr && (b->dtype() != DataType::kFloat || b->rank() != 1 || b->dim(0) != maps)) {
      return absl::InvalidArgumentError(absl::StrCat("B ", b->DebugString(), ": expected float [", maps, "]"));
    }
    ConvGeometry geo;
    RETURN_IF_ERROR(attrs_.Resolve(absl::MakeConstSpan(w.shape()).subspan(2), &geo));
    geo.image = {x.dim(1), x.dim(2)};
    RETURN_IF_ERROR(attrs_.PlaceOutput(geo));
    const Shape y_shape = {x.dim(0), geo.grid[0], geo.grid[1], maps};
    if (z != nullptr) RETURN_IF_ERROR(CheckFloatMaps(*z, "Z", "[N,H,W,C]"));
    // A Z that broadcasts against Y (the fused Add's other operand need not have Y's shape) is FusedConv's
    // to handle.
    if (z != nullptr && z->shape() != y_shape) return RunFallback(ctx);
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, y_shape));
    if (conv_ != nullptr) {
      ASSIGN_OR_RETURN(const bool ran, conv_->TryRun(geo.Shape2D(x.dim(0)), x.data<float>(), w.data<float>(),
                                                     b ? b->data<float>() : nullptr, z ? z->data<float>() : nullptr,
                                                     y->data<float>(), ctx.pool()));
      if (ran) return absl::OkStatus();
    }
    return RunFallback(ctx);
  }

 private:
  // FusedConv's kernel on X and Z in NCHW, its Y changed back to NHWC.
  absl::Status RunFallback(KernelContext& ctx) const {
    const Tensor x = ToNchw(*ctx.Input(0), ctx.pool());
    std::optional<Tensor> z;
    if (ctx.Input(3) != nullptr) z = ToNchw(*ctx.Input(3), ctx.pool());
    const std::vector<const Tensor*> inputs = {&x, ctx.Input(1), ctx.Input(2), z ? &*z : nullptr};
    std::vector<Tensor> outputs(1);
    KernelContext fallback_ctx(inputs, &outputs, {true}, &ctx.pool(), {}, &ctx.limits());
    RETURN_IF_ERROR(fallback_->Compute(fallback_ctx));
    const Tensor& result = outputs[0];
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, {result.dim(0), result.dim(2), result.dim(3),
                                                                         result.dim(1)}));
    NchwToNhwc(result.dim(0), result.dim(1), result.dim(2) * result.dim(3), result.data<float>(), y->data<float>(),
               ctx.pool());
    return absl::OkStatus();
  }

  ConvAttributes attrs_;
  Activation activation_;
  NhwcConvWeights weights_;
  std::unique_ptr<NhwcConv> conv_;      // null without oneDNN: every call falls back
  std::unique_ptr<OpKernel> fallback_;  // FusedConv of the same node
};

// Each image's pixels are summed channel by channel in pixel order, a run of channels at a time in a local
// array the compiler keeps in vector registers (a pixel's channels lie together); runs split over the pool.
// In float a block of pixels at a time, the blocks' sums in double, as GlobalAveragePool sums a plane: a
// float sum of a whole large map stops growing by each pixel (2^22 pixels of 0.7 averaged 0.729).
class NhwcGlobalAveragePoolKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    RETURN_IF_ERROR(CheckFloatMaps(x, "X", "[N,H,W,C]"));
    const int64_t channels = x.dim(3), pixels = x.dim(1) * x.dim(2);
    Tensor& y = ctx.Output(0, DataType::kFloat, {x.dim(0), 1, 1, channels});
    const int64_t runs = (channels + kRun - 1) / kRun;
    const float* in = x.data<float>();
    float* out = y.data<float>();
    // A map of fewer floats is summed on one thread: waking the other costs more than the sums (MobileNet's
    // squeeze-excite pools took 69 us on one thread and 100 on two).
    const int64_t min_runs = x.NumElements() < kMinSplitFloats ? x.dim(0) * runs : 1;
    ctx.pool().ParallelFor(x.dim(0) * runs, min_runs, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t n = i / runs, first = (i % runs) * kRun, count = std::min(kRun, channels - first);
        StopIfRunEnded(WorkOf({pixels, count}));
        double sum[kRun] = {};
        const float* pixel = in + n * pixels * channels + first;
        for (int64_t block = 0; block < pixels; block += kBlockPixels) {
          float block_sum[kRun] = {};
          const int64_t block_end = std::min(pixels, block + kBlockPixels);
          for (int64_t p = block; p < block_end; ++p, pixel += channels) {
            for (int64_t c = 0; c < count; ++c) block_sum[c] += pixel[c];
          }
          for (int64_t c = 0; c < count; ++c) sum[c] += block_sum[c];
        }
        // No pixels: 0 / 0, NaN, as GlobalAveragePool's mean of an empty plane.
        for (int64_t c = 0; c < count; ++c) {
          out[n * channels + first + c] = static_cast<float>(sum[c] / static_cast<double>(pixels));
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  static constexpr int64_t kRun = 64;
  static constexpr int64_t kBlockPixels = 64;  // floats per partial sum, as many as SumOf's lanes add
  static constexpr int64_t kMinSplitFloats = int64_t{1} << 17;
};

REGISTER_KERNEL(kInternal, "ToNhwc", 1, kLatest, kFloatOnly, ToNhwcKernel);
REGISTER_KERNEL(kInternal, "FromNhwc", 1, kLatest, kFloatOnly, FromNhwcKernel);
REGISTER_KERNEL(kInternal, "NhwcConv", 1, kLatest, kFloatOnly, NhwcConvKernel);
REGISTER_KERNEL(kInternal, "NhwcGlobalAveragePool", 1, kLatest, kFloatOnly, NhwcGlobalAveragePoolKernel);

}  // namespace
}  // namespace onnxserve
