// DeformConv (19, 22): deformable convolution (DCN v1, and v2 with `mask`), as torchvision's deform_conv2d.
// Each kernel tap samples X at its regular grid position plus a learned fractional offset, bilinearly, with
// samples outside X reading zero, scaled by the mask; the samples form an im2col matrix that one GEMM per
// (image, group) multiplies by W. Offsets and masks come in `offset_group` groups of input channels.
// 2-D only, as in ONNX Runtime: other ranks are an UNIMPLEMENTED error naming the rank.
// float16/bfloat16 compute in float.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/checked_size.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/ops/window.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

enum Input { kX = 0, kW, kOffset, kBias, kMask };

struct Geometry {
  int64_t batch = 0, channels = 0, height = 0, width = 0, out_channels = 0, kh = 0, kw = 0, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, dil_h = 1, dil_w = 1, groups = 1, offset_groups = 1;
  int64_t taps() const { return kh * kw; }
  int64_t pixels() const { return out_h * out_w; }
};

// X[y, x] of one channel plane by bilinear interpolation; corners outside the plane read zero. Written so
// that a NaN position (from a NaN offset) reads zero too, before its floor would become an integer.
template <typename C>
C Bilinear(const C* plane, int64_t height, int64_t width, C y, C x) {
  if (!(y > -1 && y < height && x > -1 && x < width)) return C{0};
  const int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x));
  const C fy = y - static_cast<C>(y0), fx = x - static_cast<C>(x0);
  auto at = [&](int64_t r, int64_t c) {
    return r >= 0 && r < height && c >= 0 && c < width ? plane[r * width + c] : C{0};
  };
  return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)) +
         fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1));
}

class DeformConv final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(group_, info.Attr<int64_t>("group", 1));
    ASSIGN_OR_RETURN(offset_group_, info.Attr<int64_t>("offset_group", 1));
    ASSIGN_OR_RETURN(strides_, info.Attr<std::vector<int64_t>>("strides", {1, 1}));
    ASSIGN_OR_RETURN(dilations_, info.Attr<std::vector<int64_t>>("dilations", {1, 1}));
    ASSIGN_OR_RETURN(pads_, info.Attr<std::vector<int64_t>>("pads", {0, 0, 0, 0}));
    ASSIGN_OR_RETURN(kernel_shape_, info.Attr<std::vector<int64_t>>("kernel_shape", {}));
    if (group_ <= 0 || offset_group_ <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("group (", group_, ") and offset_group (", offset_group_, ") must be positive"));
    }
    if (strides_.size() != 2 || dilations_.size() != 2 || pads_.size() != 4 ||
        (!kernel_shape_.empty() && kernel_shape_.size() != 2)) {
      return absl::UnimplementedError("DeformConv runs on 2-D images only: strides, dilations and kernel_shape "
                                      "need 2 values and pads 4");
    }
    for (int64_t v : strides_) {
      if (v <= 0) return absl::InvalidArgumentError(absl::StrCat("strides must be positive, got ", v));
    }
    for (int64_t v : dilations_) {
      if (v <= 0) return absl::InvalidArgumentError(absl::StrCat("dilations must be positive, got ", v));
    }
    for (int64_t v : pads_) {
      if (v < 0) return absl::InvalidArgumentError(absl::StrCat("pads must not be negative, got ", v));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 3));
    const Tensor& x = *ctx.Input(kX);
    ASSIGN_OR_RETURN(const Geometry g, Resolve(ctx));
    // An image's sampled columns are C times the offsets' size, both from the request: bounded like a
    // tensor before any is taken.
    const DataType compute = x.dtype() == DataType::kDouble ? DataType::kDouble : DataType::kFloat;
    RETURN_IF_ERROR(CheckedByteSize(compute, {g.channels, g.taps(), g.pixels()}).status());
    Tensor& y = ctx.Output(0, x.dtype(), {g.batch, g.out_channels, g.out_h, g.out_w});
    return DispatchFloating(x, "X", [&](auto tag) {
      using T = decltype(tag);
      Run<T>(ctx, g, y);
    });
  }

 private:
  // Output positions along one axis; pads, dilations and strides come from the model, so checked.
  static absl::StatusOr<int64_t> OutputSize(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t kernel,
                                            int64_t dilation, int64_t stride, const Tensor& w, const Tensor& x) {
    ASSIGN_OR_RETURN(const int64_t extent, DilatedExtent(kernel, dilation));
    ASSIGN_OR_RETURN(const int64_t padded, PaddedSize(in, pad_begin, pad_end));
    if (padded < extent) {
      return absl::InvalidArgumentError(absl::StrCat("the kernel ", w.DebugString(), " does not fit X ",
                                                     x.DebugString(), " with these pads and dilations"));
    }
    return WindowCount(padded, extent, stride);
  }

  absl::StatusOr<Geometry> Resolve(const KernelContext& ctx) const {
    const Tensor& x = *ctx.Input(kX);
    const Tensor& w = *ctx.Input(kW);
    if (x.rank() != 4) {
      return absl::UnimplementedError(absl::StrCat("DeformConv runs on 2-D images only ([N, C, H, W]), got X ",
                                                   x.DebugString()));
    }
    Geometry g{.batch = x.dim(0), .channels = x.dim(1), .height = x.dim(2), .width = x.dim(3)};
    if (w.dtype() != x.dtype() || w.rank() != 4 || x.dim(1) % group_ != 0 || w.dim(0) % group_ != 0 ||
        w.dim(1) != x.dim(1) / group_ || x.dim(1) % offset_group_ != 0) {
      return absl::InvalidArgumentError(absl::StrCat("W ", w.DebugString(), " must be [oC, C / group, kH, kW] for X ",
                                                     x.DebugString(), " with group ", group_,
                                                     ", and C must divide by offset_group ", offset_group_));
    }
    g.out_channels = w.dim(0);
    g.kh = w.dim(2);
    g.kw = w.dim(3);
    if (!kernel_shape_.empty() && (kernel_shape_[0] != g.kh || kernel_shape_[1] != g.kw)) {
      return absl::InvalidArgumentError(absl::StrCat("kernel_shape [", kernel_shape_[0], ", ", kernel_shape_[1],
                                                     "] does not match W ", w.DebugString()));
    }
    g.stride_h = strides_[0], g.stride_w = strides_[1], g.dil_h = dilations_[0], g.dil_w = dilations_[1];
    g.pad_top = pads_[0], g.pad_left = pads_[1], g.groups = group_, g.offset_groups = offset_group_;
    ASSIGN_OR_RETURN(g.out_h, OutputSize(g.height, pads_[0], pads_[2], g.kh, g.dil_h, g.stride_h, w, x));
    ASSIGN_OR_RETURN(g.out_w, OutputSize(g.width, pads_[1], pads_[3], g.kw, g.dil_w, g.stride_w, w, x));
    const Shape offset_shape = {g.batch, offset_group_ * g.taps() * 2, g.out_h, g.out_w};
    const Tensor& offset = *ctx.Input(kOffset);
    if (offset.dtype() != x.dtype() || offset.shape() != offset_shape) {
      return absl::InvalidArgumentError(absl::StrCat("offset must be ", ShapeToString(offset_shape), ", got ",
                                                     offset.DebugString()));
    }
    const Tensor* bias = ctx.Input(kBias);
    if (bias != nullptr && (bias->dtype() != x.dtype() || bias->shape() != Shape{g.out_channels})) {
      return absl::InvalidArgumentError(absl::StrCat("B must be [", g.out_channels, "], got ", bias->DebugString()));
    }
    const Shape mask_shape = {g.batch, offset_group_ * g.taps(), g.out_h, g.out_w};
    const Tensor* mask = ctx.Input(kMask);
    if (mask != nullptr && (mask->dtype() != x.dtype() || mask->shape() != mask_shape)) {
      return absl::InvalidArgumentError(absl::StrCat("mask must be ", ShapeToString(mask_shape), ", got ",
                                                     mask->DebugString()));
    }
    return g;
  }

  // The sampled im2col matrix of image n: row (c, tap), column (output pixel).
  template <typename T, typename C>
  static void SampleColumns(const KernelContext& ctx, const Geometry& g, int64_t n, C* cols) {
    const T* x = ctx.Input(kX)->data<T>() + n * g.channels * g.height * g.width;
    const T* offset = ctx.Input(kOffset)->data<T>() + n * g.offset_groups * g.taps() * 2 * g.pixels();
    const Tensor* mask_t = ctx.Input(kMask);
    const T* mask = mask_t == nullptr ? nullptr : mask_t->data<T>() + n * g.offset_groups * g.taps() * g.pixels();
    const int64_t channels_per_offset_group = g.channels / g.offset_groups;
    std::vector<C> plane(g.height * g.width);
    for (int64_t c = 0; c < g.channels; ++c) {
      const T* src = x + c * g.height * g.width;
      for (size_t i = 0; i < plane.size(); ++i) plane[i] = ToCompute(src[i]);
      const int64_t og = c / channels_per_offset_group;
      for (int64_t tap = 0; tap < g.taps(); ++tap) {
        const int64_t i = tap / g.kw, j = tap % g.kw;
        const T* dy = offset + (og * g.taps() + tap) * 2 * g.pixels();
        const T* dx = dy + g.pixels();
        const T* m = mask == nullptr ? nullptr : mask + (og * g.taps() + tap) * g.pixels();
        C* row = cols + (c * g.taps() + tap) * g.pixels();
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const int64_t p = oh * g.out_w + ow;
            const C sy = static_cast<C>(oh * g.stride_h - g.pad_top + i * g.dil_h) + ToCompute(dy[p]);
            const C sx = static_cast<C>(ow * g.stride_w - g.pad_left + j * g.dil_w) + ToCompute(dx[p]);
            const C v = Bilinear<C>(plane.data(), g.height, g.width, sy, sx);
            row[p] = m == nullptr ? v : v * ToCompute(m[p]);
          }
        }
      }
    }
  }

  template <typename T>
  void Run(KernelContext& ctx, const Geometry& g, Tensor& y) const {
    using C = ComputeType<T>;
    const Tensor& w_t = *ctx.Input(kW);
    std::vector<C> w(w_t.NumElements());
    for (size_t i = 0; i < w.size(); ++i) w[i] = ToCompute(w_t.data<T>()[i]);
    const Tensor* bias = ctx.Input(kBias);
    const int64_t oc_per_group = g.out_channels / g.groups;
    const int64_t depth = g.channels / g.groups * g.taps();  // GEMM depth of one group
    ctx.pool().ParallelFor(g.batch, 1, [&](int64_t begin, int64_t end) {
      // Tensors, not vectors: one per thread, charged to the run's budget.
      Tensor cols_tensor(kTypeOf<C>, {g.channels * g.taps(), g.pixels()});
      Tensor out_tensor(kTypeOf<C>, {g.out_channels, g.pixels()});
      C* cols = cols_tensor.data<C>();
      C* out = out_tensor.data<C>();
      for (int64_t n = begin; n < end; ++n) {
        SampleColumns<T, C>(ctx, g, n, cols);
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          Gemm<C>(false, false, oc_per_group, g.pixels(), depth, C{1}, w.data() + grp * oc_per_group * depth, depth,
                  cols + grp * depth * g.pixels(), g.pixels(), C{0}, out + grp * oc_per_group * g.pixels(), g.pixels(),
                  nullptr);
        }
        T* dst = y.data<T>() + n * g.out_channels * g.pixels();
        for (int64_t oc = 0; oc < g.out_channels; ++oc) {
          const C b = bias == nullptr ? C{0} : ToCompute(bias->data<T>()[oc]);
          for (int64_t p = 0; p < g.pixels(); ++p) {
            dst[oc * g.pixels() + p] = FromCompute<T>(out[oc * g.pixels() + p] + b);
          }
        }
      }
    });
  }

  int64_t group_ = 1, offset_group_ = 1;
  std::vector<int64_t> strides_, dilations_, pads_, kernel_shape_;
};

}  // namespace

// DeformConv-22 adds bfloat16.
REGISTER_KERNEL(kOnnx, "DeformConv", 19, 21, kFloatTypes, DeformConv);
REGISTER_KERNEL(kOnnx, "DeformConv", 22, kLatest, kFloatTypes, DeformConv);

}  // namespace onnxserve
