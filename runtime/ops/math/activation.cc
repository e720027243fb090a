// Activations: Tanh Sigmoid Relu LeakyRelu PRelu Elu Selu Celu ThresholdedRelu HardSigmoid HardSwish
// Softplus Softsign Mish Gelu. Each is a functor on ComputeType values run by UnaryKernel (PRelu, which
// broadcasts a slope tensor, by its own kernel); attributes are read once at load. Version bumps of these
// ops only dropped consumed_inputs or widened type lists, so one functor serves every range.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// log(1 + e^x) split so exp never overflows (the textbook formula gives inf for large x).
template <typename C>
C StableSoftplus(C x) {
  return std::max(x, C{0}) + std::log1p(std::exp(-std::abs(x)));
}

struct TanhOp : FloatOp {
  template <typename C> C operator()(C x) const { return std::tanh(x); }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const { k.tanh(x, y, n); }
};

// Branch-free and still exact at the extremes: for x << 0, exp(-x) overflows to inf and 1 / inf is 0.
struct SigmoidOp : FloatOp {
  template <typename C> C operator()(C x) const { return C{1} / (C{1} + std::exp(-x)); }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const { k.sigmoid(x, y, n); }
};

// Relu-14 accepts signed integers. NaN passes through as in numpy's maximum.
struct ReluOp : SignedOp {
  template <typename C> C operator()(C x) const { return x < C{0} ? C{0} : x; }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const { k.relu(x, y, n); }
};

struct SoftplusOp : FloatOp {
  template <typename C> C operator()(C x) const { return StableSoftplus(x); }
};

struct SoftsignOp : FloatOp {
  template <typename C> C operator()(C x) const { return x / (C{1} + std::abs(x)); }
};

struct MishOp : FloatOp {
  template <typename C> C operator()(C x) const { return x * std::tanh(StableSoftplus(x)); }
};

// HardSwish is HardSigmoid with alpha 1/6 and beta 0.5, times x.
struct HardSwishOp : FloatOp {
  template <typename C> C operator()(C x) const {
    return x * std::clamp(x / C{6} + C{0.5}, C{0}, C{1});
  }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const { k.hard_swish(x, y, n); }
};

// An activation with a float attribute `alpha` (and an optional second one), read once at load.
class AlphaOp : public FloatOp {
 public:
  explicit AlphaOp(float alpha_default) : alpha_(alpha_default) {}
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(alpha_, info.Attr<float>("alpha", alpha_));
    return absl::OkStatus();
  }

 protected:
  float alpha_;
};

struct LeakyReluOp : AlphaOp {
  LeakyReluOp() : AlphaOp(0.01f) {}
  template <typename C> C operator()(C x) const { return x < C{0} ? static_cast<C>(alpha_) * x : x; }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const {
    k.leaky_relu(x, y, n, alpha_);
  }
};

struct EluOp : AlphaOp {
  EluOp() : AlphaOp(1.0f) {}
  template <typename C> C operator()(C x) const { return x < C{0} ? static_cast<C>(alpha_) * std::expm1(x) : x; }
};

struct CeluOp : AlphaOp {
  CeluOp() : AlphaOp(1.0f) {}
  template <typename C> C operator()(C x) const {
    const C alpha = static_cast<C>(alpha_);
    return x < C{0} ? alpha * std::expm1(x / alpha) : x;
  }
};

struct ThresholdedReluOp : AlphaOp {
  ThresholdedReluOp() : AlphaOp(1.0f) {}
  template <typename C> C operator()(C x) const { return x > static_cast<C>(alpha_) ? x : C{0}; }
};

class SeluOp : public FloatOp {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(alpha_, info.Attr<float>("alpha", 1.67326319217681884765625f));
    ASSIGN_OR_RETURN(gamma_, info.Attr<float>("gamma", 1.05070102214813232421875f));
    return absl::OkStatus();
  }
  template <typename C> C operator()(C x) const {
    const C gamma = static_cast<C>(gamma_);
    return x > C{0} ? gamma * x : gamma * static_cast<C>(alpha_) * std::expm1(x);
  }

 private:
  float alpha_ = 0;
  float gamma_ = 0;
};

class HardSigmoidOp : public FloatOp {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(alpha_, info.Attr<float>("alpha", 0.2f));
    ASSIGN_OR_RETURN(beta_, info.Attr<float>("beta", 0.5f));
    return absl::OkStatus();
  }
  template <typename C> C operator()(C x) const {
    return std::clamp(static_cast<C>(alpha_) * x + static_cast<C>(beta_), C{0}, C{1});
  }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const {
    k.hard_sigmoid(x, y, n, alpha_, beta_);
  }

 private:
  float alpha_ = 0;
  float beta_ = 0;
};

// Gelu: approximate="none" is exact (erf); "tanh" the tanh approximation.
class GeluOp : public FloatOp {
 public:
  absl::Status Init(const KernelInfo& info) {
    absl::StatusOr<std::string> approximate = info.Attr<std::string>("approximate", "none");
    if (!approximate.ok()) return approximate.status();
    tanh_ = *approximate == "tanh";
    if (!tanh_ && *approximate != "none") {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute approximate must be \"none\" or \"tanh\", got \"", *approximate, "\""));
    }
    return absl::OkStatus();
  }
  template <typename C> C operator()(C x) const {
    if (tanh_) {
      const C k = static_cast<C>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2 / pi)
      return C{0.5} * x * (C{1} + std::tanh(k * (x + C{0.044715} * x * x * x)));
    }
    return C{0.5} * x * (C{1} + std::erf(x * static_cast<C>(std::numbers::sqrt2 / 2)));
  }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const {
    (tanh_ ? k.gelu_tanh : k.gelu_erf)(x, y, n);
  }

 private:
  bool tanh_ = false;
};

// PRelu: y = x < 0 ? slope * x : x, with the slope broadcast onto X (never the other way).
struct PReluOp : NumberOp {
  template <typename C> C operator()(C x, C slope) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {
      return x < C{0} ? static_cast<C>(slope * x) : x;
    }
  }
};

class PRelu final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    channel_slope_ = info.opset() < 7;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor slope = ChannelAligned(x, *ctx.Input(1));
    if (x.dtype() != slope.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("slope must be ", DataTypeName(x.dtype()), ", got ",
                                                     DataTypeName(slope.dtype())));
    }
    ASSIGN_OR_RETURN(const Shape out_shape, BroadcastShapes(x.shape(), slope.shape()));
    if (out_shape != x.shape()) {
      return absl::InvalidArgumentError(absl::StrCat("slope ", ShapeToString(slope.shape()),
                                                     " does not broadcast onto X ", ShapeToString(x.shape())));
    }
    absl::Status status = UnsupportedTypeError(x.dtype());
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (PReluOp::kAccepts<T>) {
        Tensor& y = ctx.Output(0, x.dtype(), x.shape());
        BroadcastBinary<T, T, T>(ctx.pool(), x, slope, y, PReluOp{});
        status = absl::OkStatus();
      }
    });
    return status;
  }

 private:
  // Before opset 7 (no numpy broadcasting yet), a 1-D slope of C values is per channel (axis 1), as
  // Caffe2 and PyTorch exported it.
  Tensor ChannelAligned(const Tensor& x, const Tensor& slope) const {
    if (!channel_slope_ || slope.rank() != 1 || x.rank() < 3 || slope.dim(0) != x.dim(1)) return slope;
    Shape shape(static_cast<size_t>(x.rank() - 1), 1);
    shape[0] = slope.dim(0);
    return slope.Reshaped(shape);
  }

  bool channel_slope_ = false;
};

// -1 had consumed_inputs; -6 dropped it; -13/-14/-16/-22 widened types (Relu-14: signed integers).
REGISTER_KERNEL(kOnnx, "Tanh", 1, 5, kFloatTypes, UnaryKernel<TanhOp>);
REGISTER_KERNEL(kOnnx, "Tanh", 6, 12, kFloatTypes, UnaryKernel<TanhOp>);
REGISTER_KERNEL(kOnnx, "Tanh", 13, kLatest, kFloatTypes, UnaryKernel<TanhOp>);
REGISTER_KERNEL(kOnnx, "Sigmoid", 1, 5, kFloatTypes, UnaryKernel<SigmoidOp>);
REGISTER_KERNEL(kOnnx, "Sigmoid", 6, 12, kFloatTypes, UnaryKernel<SigmoidOp>);
REGISTER_KERNEL(kOnnx, "Sigmoid", 13, kLatest, kFloatTypes, UnaryKernel<SigmoidOp>);
REGISTER_KERNEL(kOnnx, "Relu", 1, 5, kFloatTypes, UnaryKernel<ReluOp>);
REGISTER_KERNEL(kOnnx, "Relu", 6, 12, kFloatTypes, UnaryKernel<ReluOp>);
REGISTER_KERNEL(kOnnx, "Relu", 13, 13, kFloatTypes, UnaryKernel<ReluOp>);
REGISTER_KERNEL(kOnnx, "Relu", 14, kLatest, kSignedTypes, UnaryKernel<ReluOp>);
REGISTER_KERNEL(kOnnx, "LeakyRelu", 1, 5, kFloatTypes, UnaryKernel<LeakyReluOp>);
REGISTER_KERNEL(kOnnx, "LeakyRelu", 6, 15, kFloatTypes, UnaryKernel<LeakyReluOp>);
REGISTER_KERNEL(kOnnx, "LeakyRelu", 16, kLatest, kFloatTypes, UnaryKernel<LeakyReluOp>);
REGISTER_KERNEL(kOnnx, "Elu", 1, 5, kFloatTypes, UnaryKernel<EluOp>);
REGISTER_KERNEL(kOnnx, "Elu", 6, 21, kFloatTypes, UnaryKernel<EluOp>);
REGISTER_KERNEL(kOnnx, "Elu", 22, kLatest, kFloatTypes, UnaryKernel<EluOp>);
REGISTER_KERNEL(kOnnx, "Selu", 1, 5, kFloatTypes, UnaryKernel<SeluOp>);
REGISTER_KERNEL(kOnnx, "Selu", 6, 21, kFloatTypes, UnaryKernel<SeluOp>);
REGISTER_KERNEL(kOnnx, "Selu", 22, kLatest, kFloatTypes, UnaryKernel<SeluOp>);
REGISTER_KERNEL(kOnnx, "HardSigmoid", 1, 5, kFloatTypes, UnaryKernel<HardSigmoidOp>);
REGISTER_KERNEL(kOnnx, "HardSigmoid", 6, 21, kFloatTypes, UnaryKernel<HardSigmoidOp>);
REGISTER_KERNEL(kOnnx, "HardSigmoid", 22, kLatest, kFloatTypes, UnaryKernel<HardSigmoidOp>);
REGISTER_KERNEL(kOnnx, "Softplus", 1, 21, kFloatTypes, UnaryKernel<SoftplusOp>);
REGISTER_KERNEL(kOnnx, "Softplus", 22, kLatest, kFloatTypes, UnaryKernel<SoftplusOp>);
REGISTER_KERNEL(kOnnx, "Softsign", 1, 21, kFloatTypes, UnaryKernel<SoftsignOp>);
REGISTER_KERNEL(kOnnx, "Softsign", 22, kLatest, kFloatTypes, UnaryKernel<SoftsignOp>);
REGISTER_KERNEL(kOnnx, "Celu", 12, 27, kFloatTypes, UnaryKernel<CeluOp>);
REGISTER_KERNEL(kOnnx, "Celu", 28, kLatest, kFloatTypes, UnaryKernel<CeluOp>);
REGISTER_KERNEL(kOnnx, "ThresholdedRelu", 10, 21, kFloatTypes, UnaryKernel<ThresholdedReluOp>);
REGISTER_KERNEL(kOnnx, "ThresholdedRelu", 22, kLatest, kFloatTypes, UnaryKernel<ThresholdedReluOp>);
REGISTER_KERNEL(kOnnx, "HardSwish", 14, 21, kFloatTypes, UnaryKernel<HardSwishOp>);
REGISTER_KERNEL(kOnnx, "HardSwish", 22, kLatest, kFloatTypes, UnaryKernel<HardSwishOp>);
REGISTER_KERNEL(kOnnx, "Mish", 18, 21, kFloatTypes, UnaryKernel<MishOp>);
REGISTER_KERNEL(kOnnx, "Mish", 22, kLatest, kFloatTypes, UnaryKernel<MishOp>);
REGISTER_KERNEL(kOnnx, "Gelu", 20, kLatest, kFloatTypes, UnaryKernel<GeluOp>);
// PRelu-7 introduced unidirectional broadcasting of the slope, -9 integer types, -16 bfloat16.
REGISTER_KERNEL(kOnnx, "PRelu", 1, 5, kNumericTypes, PRelu);
REGISTER_KERNEL(kOnnx, "PRelu", 6, 6, kNumericTypes, PRelu);
REGISTER_KERNEL(kOnnx, "PRelu", 7, 8, kNumericTypes, PRelu);
REGISTER_KERNEL(kOnnx, "PRelu", 9, 15, kNumericTypes, PRelu);
REGISTER_KERNEL(kOnnx, "PRelu", 16, kLatest, kNumericTypes, PRelu);

}  // namespace
}  // namespace onnxserve
