// The channels-last ops (domain ai.onnxserve, written by runtime/passes/channels_last.cc); their maps are
// NHWC [N, H, W, C]:
//   ToNhwc(X) -> Y: NCHW [N, C, H, W] to NHWC;
//   FromNhwc(X) -> Y: back to NCHW;
//   NhwcConv(X, W, B, Z, W', B') -> Y: FusedConv (its attributes, `activation` included) on X and Z in
//   NHWC, writing Y in NHWC, on oneDNN (runtime/math/nhwc_conv.h). A shape oneDNN does not take runs on
//   FusedConv's own kernel between layout changes, so a model the pass rewrote computes what it did.
//   Given W' (written by runtime/passes/nhwc_prologue_fusion.cc), the convolution is depthwise and reads
//   not X but its prologue, prologue_activation(pointwise conv(X, W') + B') (NhwcPrologue);
//   NhwcGlobalAveragePool(X) -> Y: GlobalAveragePool in NHWC, Y [N, 1, 1, C];
//   NhwcMaxPool(X) -> Y: a 2-D MaxPool (its attributes, without Indices) in NHWC.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/math/isa.h"
#include "runtime/math/nhwc_conv.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/ops/fused_activation.h"
#include "runtime/ops/nn/pool_geometry.h"
#include "runtime/ops/window.h"
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

absl::Status CheckBias(const Tensor* b, int64_t maps, const char* name) {
  if (b == nullptr || (b->dtype() == DataType::kFloat && b->rank() == 1 && b->dim(0) == maps)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(name, " ", b->DebugString(), ": expected float [", maps, "]"));
}

// The input indices of a prologue's weights and bias.
constexpr int kPrologueW = 4, kPrologueB = 5;

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
    ASSIGN_OR_RETURN(prologue_, PrologueOf(info));
    conv_ = NhwcConv::Create(weights_, info.HasInput(3), activation_, prologue_);
    if (prologue_) {
      prologue_conv_ = NhwcConv::Create({.maps = Channels(), .channels = prologue_->channels, .kernel_h = 1,
                                         .kernel_w = 1},
                                        false, prologue_->activation);
    }
    // The fallback sees W as not constant, so it packs no second copy of it at load; it runs rarely.
    const KernelInfo fallback_info(info.node(), {}, {});
    ASSIGN_OR_RETURN(fallback_, KernelRegistry::Global().Find(kInternal, "FusedConv", 1)->create(fallback_info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& input = *ctx.Input(0);
    const Tensor& w = *ctx.Input(1);
    const Tensor* b = ctx.Input(2);
    const Tensor* z = ctx.Input(3);
    RETURN_IF_ERROR(CheckFloatMaps(input, "X", "[N,H,W,C]"));
    const int64_t input_channels = prologue_ ? prologue_->channels : Channels();
    if (input.dim(3) != input_channels) {
      return absl::InvalidArgumentError(
          absl::StrCat("X ", input.DebugString(), ": expected ", input_channels, " channels"));
    }
    RETURN_IF_ERROR(CheckBias(b, weights_.maps, "B"));
    if (prologue_) RETURN_IF_ERROR(CheckBias(ctx.Input(kPrologueB), Channels(), "the prologue's B"));
    ConvGeometry geo;
    RETURN_IF_ERROR(attrs_.Resolve(absl::MakeConstSpan(w.shape()).subspan(2), &geo));
    geo.image = {input.dim(1), input.dim(2)};
    RETURN_IF_ERROR(attrs_.PlaceOutput(geo));
    const Shape y_shape = {input.dim(0), geo.grid[0], geo.grid[1], weights_.maps};
    if (z != nullptr) RETURN_IF_ERROR(CheckFloatMaps(*z, "Z", "[N,H,W,C]"));
    // A Z that broadcasts against Y (the fused Add's other operand need not have Y's shape) is FusedConv's
    // to handle.
    const bool z_broadcasts = z != nullptr && z->shape() != y_shape;
    const ConvShape2D shape = geo.Shape2D(input.dim(0));
    const float* bias = b ? b->data<float>() : nullptr;
    if (prologue_ && conv_ != nullptr && !z_broadcasts) {
      ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, y_shape));
      const Tensor* b_pre = ctx.Input(kPrologueB);
      ASSIGN_OR_RETURN(const bool ran, conv_->TryRunWithPrologue(
                                           shape, input.data<float>(), ctx.Input(kPrologueW)->data<float>(),
                                           b_pre ? b_pre->data<float>() : nullptr, w.data<float>(), bias,
                                           z ? z->data<float>() : nullptr, y->data<float>(), ctx.pool()));
      if (ran) return absl::OkStatus();
    }
    std::optional<Tensor> expanded;
    if (prologue_) {
      ASSIGN_OR_RETURN(expanded, RunPrologue(ctx, input));
    }
    const Tensor& x = expanded ? *expanded : input;
    if (z_broadcasts) return RunFallback(ctx, x);
    if (conv_ != nullptr) {
      // Y may go over Z: a band reads its rows of Z before it writes them, and TryRun leaves Y untouched
      // where it declines (then the fallback's Y is a new tensor).
      Tensor* y = nullptr;
      if (z != nullptr) {
        y = &ctx.OutputOver(0, 3, DataType::kFloat, y_shape);  // of Z's shape, which a tensor has
      } else {
        ASSIGN_OR_RETURN(y, ctx.CheckedOutput(0, DataType::kFloat, y_shape));
      }
      ASSIGN_OR_RETURN(const bool ran, conv_->TryRun(shape, x.data<float>(), w.data<float>(), bias,
                                                     z ? z->data<float>() : nullptr, y->data<float>(), ctx.pool()));
      if (ran) return absl::OkStatus();
    }
    return RunFallback(ctx, x);
  }

 private:
  int64_t Channels() const { return weights_.channels * attrs_.group; }

  // The prologue a fusion gave the node: W' a constant float [channels, C, 1, 1] for the convolution's
  // channels.
  absl::StatusOr<std::optional<NhwcPrologue>> PrologueOf(const KernelInfo& info) const {
    if (!info.HasInput(kPrologueW)) return std::nullopt;
    const Tensor* w = info.ConstantInput(kPrologueW);
    if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() != 4 || w->dim(0) != Channels() ||
        w->dim(1) == 0 || w->dim(2) != 1 || w->dim(3) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("the prologue's W: expected a constant float [", Channels(), ",C,1,1]"));
    }
    ASSIGN_OR_RETURN(std::string name, info.Attr<std::string>("prologue_activation", ""));
    ASSIGN_OR_RETURN(std::vector<float> params, info.Attr<std::vector<float>>("prologue_activation_params", {}));
    ASSIGN_OR_RETURN(Activation activation, ActivationOf(name, params));
    return NhwcPrologue{.channels = w->dim(1), .activation = activation};
  }

  // The prologue's output of the whole of X, where the convolution does not compute it band by band: on
  // oneDNN, else as the product of X's pixels [N*H*W, C] and W'^T.
  absl::StatusOr<Tensor> RunPrologue(KernelContext& ctx, const Tensor& x) const {
    const int64_t batch = x.dim(0), height = x.dim(1), width = x.dim(2);
    ASSIGN_OR_RETURN(Tensor expanded, Tensor::Create(DataType::kFloat, {batch, height, width, Channels()}));
    const float* w = ctx.Input(kPrologueW)->data<float>();
    const Tensor* b = ctx.Input(kPrologueB);
    float* out = expanded.data<float>();
    if (prologue_conv_ != nullptr) {
      const ConvShape2D shape{.batch = batch, .in_h = height, .in_w = width, .out_h = height, .out_w = width};
      ASSIGN_OR_RETURN(const bool ran, prologue_conv_->TryRun(shape, x.data<float>(), w,
                                                              b ? b->data<float>() : nullptr, nullptr, out,
                                                              ctx.pool()));
      if (ran) return expanded;
    }
    const int64_t pixels = batch * height * width, channels = Channels();
    Gemm<float>(false, true, pixels, channels, prologue_->channels, 1.0f, x.data<float>(), prologue_->channels, w,
                prologue_->channels, 0.0f, out, channels, &ctx.pool());
    if (b != nullptr) {
      const float* bias = b->data<float>();
      for (int64_t p = 0; p < pixels; ++p) {
        for (int64_t c = 0; c < channels; ++c) out[p * channels + c] += bias[c];
      }
    }
    ActivateRows(prologue_->activation, out, pixels, channels, channels, ctx.pool());
    return expanded;
  }

  // FusedConv's kernel on X (the convolution's input, NHWC) and Z in NCHW, its Y changed back to NHWC.
  absl::Status RunFallback(KernelContext& ctx, const Tensor& x_nhwc) const {
    const Tensor x = ToNchw(x_nhwc, ctx.pool());
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
  std::optional<NhwcPrologue> prologue_;
  std::unique_ptr<NhwcConv> conv_;           // null without oneDNN: every call falls back
  std::unique_ptr<NhwcConv> prologue_conv_;  // the prologue alone, where it is computed whole
  std::unique_ptr<OpKernel> fallback_;       // FusedConv of the same node
};

// Each image's pixels are summed channel by channel in pixel order, a run of channels at a time in a local
// array the compiler keeps in vector registers (a pixel's channels lie together). In float a block of
// pixels at a time, the blocks' sums in double, as GlobalAveragePool sums a plane: a float sum of a whole
// large map stops growing by each pixel (2^22 pixels of 0.7 averaged 0.729).
//
// Each image is summed in two halves of its pixels, the top rows and the bottom ones, which the threads
// share out: the convolution before the pool split its rows the same way, so each thread sums the rows in
// its own cache. Summed whole on one thread, half the map came from the other core: MobileNet's
// squeeze-and-excite pools took 79 us on one thread and 138 on two. The halves are the same on any number
// of threads, and so are the means.
class NhwcGlobalAveragePoolKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    RETURN_IF_ERROR(CheckFloatMaps(x, "X", "[N,H,W,C]"));
    const int64_t images = x.dim(0), channels = x.dim(3), pixels = x.dim(1) * x.dim(2);
    Tensor& y = ctx.Output(0, DataType::kFloat, {images, 1, 1, channels});
    // The halves' sums, as many as Y's floats twice over: within the size limits, and charged to the run.
    ASSIGN_OR_RETURN(Tensor halves, Tensor::Create(DataType::kDouble, {images, kHalves, channels}));
    const int64_t half_pixels = CeilDiv(CeilDiv(pixels, kHalves), kBlockPixels) * kBlockPixels;
    const float* in = x.data<float>();
    double* sums = halves.data<double>();
    // A small map is summed on one thread: waking the other costs more than the sums.
    const int64_t min_parts = x.NumElements() < kMinSplitFloats ? images * kHalves : 1;
    ctx.pool().ParallelFor(images * kHalves, min_parts, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const int64_t n = part / kHalves, first = std::min(pixels, part % kHalves * half_pixels);
        const int64_t count = std::min(pixels - first, half_pixels);
        SumPixels(in + (n * pixels + first) * channels, count, channels, sums + part * channels);
      }
    });
    float* out = y.data<float>();
    for (int64_t n = 0; n < images; ++n) {
      const double* top = sums + n * kHalves * channels;
      // No pixels: 0 / 0, NaN, as GlobalAveragePool's mean of an empty plane.
      for (int64_t c = 0; c < channels; ++c) {
        out[n * channels + c] = static_cast<float>((top[c] + top[channels + c]) / static_cast<double>(pixels));
      }
    }
    return absl::OkStatus();
  }

 private:
  static constexpr int64_t kHalves = 2;
  static constexpr int64_t kRun = 64;
  static constexpr int64_t kBlockPixels = 64;  // floats per partial sum, as many as SumOf's lanes add
  static constexpr int64_t kMinSplitFloats = int64_t{1} << 15;

  // sums[c] = the sum over `count` pixels from `pixel` of channel c, a run of channels at a time.
  static void SumPixels(const float* pixels_begin, int64_t count, int64_t channels, double* sums) {
    for (int64_t first = 0; first < channels; first += kRun) {
      const int64_t run = std::min(kRun, channels - first);
      StopIfRunEnded(WorkOf({count, run}));
      double sum[kRun] = {};
      const float* pixel = pixels_begin + first;
      for (int64_t block = 0; block < count; block += kBlockPixels) {
        float block_sum[kRun] = {};
        const int64_t block_end = std::min(count, block + kBlockPixels);
        for (int64_t p = block; p < block_end; ++p, pixel += channels) {
          for (int64_t c = 0; c < run; ++c) block_sum[c] += pixel[c];
        }
        for (int64_t c = 0; c < run; ++c) sum[c] += block_sum[c];
      }
      for (int64_t c = 0; c < run; ++c) sums[first + c] = sum[c];
    }
  }
};

// One row of NhwcMaxPool's outputs, image n's row oh: each output pixel the running maximum of its window's
// pixels, all its channels at once (they lie together in NHWC, so the loop over them is a vector one). As
// MaxPool's kernels, NaN loses to any number, and a window of -inf and NaN only is -inf. A row of wide
// windows over many channels is a long block of work: the run's limits are checked within it, every
// kWorkPerCheck taps (a call per pixel cost ResNet's stem pool 3%).
constexpr int64_t kWorkPerCheck = int64_t{1} << 20;
[[gnu::always_inline]] inline void MaxPoolRow(const PoolGeometry& g, const float* image, int64_t width,
                                              int64_t channels, int64_t oh, float* out) {
  const DimWindows& rows = g.windows[1];
  const DimWindows& cols = g.windows[2];
  int64_t unchecked = 0;
  for (int64_t ow = 0; ow < g.out[2]; ++ow, out += channels) {
    std::fill(out, out + channels, -std::numeric_limits<float>::infinity());
    for (int64_t kh = rows.lo[oh]; kh < rows.hi[oh]; ++kh) {
      const float* row = image + (rows.start[oh] + kh * g.dilation[1]) * width * channels;
      for (int64_t kw = cols.lo[ow]; kw < cols.hi[ow]; ++kw) {
        const float* __restrict pixel = row + (cols.start[ow] + kw * g.dilation[2]) * channels;
        float* __restrict best = out;
        for (int64_t c = 0; c < channels; ++c) best[c] = pixel[c] > best[c] ? pixel[c] : best[c];
      }
    }
    // Taps within the image times channels: at most X's elements, no overflow. One more tap for the fill.
    unchecked += ((rows.hi[oh] - rows.lo[oh]) * (cols.hi[ow] - cols.lo[ow]) + 1) * channels;
    if (unchecked >= kWorkPerCheck) {
      StopIfRunEnded(unchecked);
      unchecked = 0;
    }
  }
  StopIfRunEnded(unchecked);
}

void MaxPoolRowPortable(const PoolGeometry& g, const float* image, int64_t width, int64_t channels, int64_t oh,
                        float* out) {
  MaxPoolRow(g, image, width, channels, oh, out);
}

// The op runs where the channels-last pass put it, on CPUs with AVX2 at least (a model that names it
// elsewhere gets the portable row).
__attribute__((target("avx2"))) void MaxPoolRowAvx2(const PoolGeometry& g, const float* image, int64_t width,
                                                    int64_t channels, int64_t oh, float* out) {
  MaxPoolRow(g, image, width, channels, oh, out);
}

// A 2-D MaxPool in NHWC, its windows MaxPool's own (pool_geometry.h) planned on the NCHW shape; rows of
// outputs shared out over the pool.
class NhwcMaxPoolKernel final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(attrs_, ReadPoolAttrs(info, /*has_ceil=*/true, /*has_dilations=*/true));
    if (attrs_.kernel.size() != 2) return absl::InvalidArgumentError("kernel_shape: expected 2 dims");
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    RETURN_IF_ERROR(CheckFloatMaps(x, "X", "[N,H,W,C]"));
    const int64_t batch = x.dim(0), height = x.dim(1), width = x.dim(2), channels = x.dim(3);
    ASSIGN_OR_RETURN(const PoolGeometry g, PlanPool(attrs_, {batch, channels, height, width}));
    const int64_t out_h = g.out[1], out_w = g.out[2];
    ASSIGN_OR_RETURN(Tensor * y, ctx.CheckedOutput(0, DataType::kFloat, {batch, out_h, out_w, channels}));
    if (y->NumElements() == 0) return absl::OkStatus();  // PlanPool built no windows for it
    const auto row = ActiveIsa() == Isa::kBaseline ? MaxPoolRowPortable : MaxPoolRowAvx2;
    const float* in = x.data<float>();
    float* out = y->data<float>();
    ctx.pool().ParallelFor(batch * out_h, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t n = r / out_h, oh = r % out_h;
        row(g, in + n * height * width * channels, width, channels, oh, out + r * out_w * channels);
      }
    });
    return absl::OkStatus();
  }

 private:
  PoolAttrs attrs_;
};

REGISTER_KERNEL(kInternal, "ToNhwc", 1, kLatest, kFloatOnly, ToNhwcKernel);
REGISTER_KERNEL(kInternal, "FromNhwc", 1, kLatest, kFloatOnly, FromNhwcKernel);
REGISTER_KERNEL(kInternal, "NhwcConv", 1, kLatest, kFloatOnly, NhwcConvKernel);
REGISTER_KERNEL(kInternal, "NhwcGlobalAveragePool", 1, kLatest, kFloatOnly, NhwcGlobalAveragePoolKernel);
REGISTER_KERNEL(kInternal, "NhwcMaxPool", 1, kLatest, kFloatOnly, NhwcMaxPoolKernel);

}  // namespace
}  // namespace onnxserve
