// Smaller normalizations and activations added with the newer opsets: RMSNormalization (23), LpNormalization
// (1, 22), Shrink (9), Swish (24) and SwiGLU (28). (CumProd lives with CumSum in cumsum_topk.cc.)
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/ops/common.h"
#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

// RMSNormalization-23: Y = X / sqrt(mean(X^2 over dims axis..) + epsilon) * scale, scale broadcast onto the
// normalized dims. The mean square accumulates in double, at least as precise as any stash_type.
class RmsNormalization final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", -1));
    ASSIGN_OR_RETURN(const float epsilon, info.Attr<float>("epsilon", 1e-5f));
    epsilon_ = epsilon;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& scale = *ctx.Input(1);
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, x.rank()));
    const Shape row_shape(x.shape().begin() + axis, x.shape().end());
    ASSIGN_OR_RETURN(Tensor row_scale, ExpandScale(scale, row_shape, ctx.pool()));
    const int64_t len = NumElements(row_shape);
    const int64_t rows = len == 0 ? 0 : x.NumElements() / len;
    Tensor& y = ctx.Output(0, scale.dtype(), x.shape());
    absl::Status inner = absl::OkStatus();
    RETURN_IF_ERROR(DispatchFloating(x, "input \"X\"", [&](auto x_tag) {
      using T = decltype(x_tag);
      inner = DispatchFloating(scale, "input \"scale\"", [&](auto v_tag) {
        using V = decltype(v_tag);
        Run(x.data<T>(), row_scale.data<V>(), rows, len, y.data<V>(), ctx.pool());
      });
    }));
    return inner;
  }

 private:
  // The scale laid out like one normalized row, so the inner loop reads it contiguously.
  static absl::StatusOr<Tensor> ExpandScale(const Tensor& scale, const Shape& row_shape, ThreadPool& pool) {
    absl::StatusOr<Shape> shape = BroadcastShapes(scale.shape(), row_shape);
    if (!shape.ok() || *shape != row_shape) {
      return absl::InvalidArgumentError(absl::StrCat("input \"scale\" ", scale.DebugString(),
                                                     " does not broadcast to the normalized dims ",
                                                     ShapeToString(row_shape)));
    }
    if (scale.shape() == row_shape) return scale;
    Tensor row(scale.dtype(), row_shape);
    CopyStrided(scale, 0, BroadcastStrides(scale.shape(), row_shape), row, pool);
    return row;
  }

  template <typename T, typename V>
  void Run(const T* x, const V* scale, int64_t rows, int64_t len, V* y, ThreadPool& pool) const {
    ForEachRow(pool, rows, len, [&](int64_t r) {
      const T* in = x + r * len;
      V* out = y + r * len;
      double sq = 0;
      for (int64_t i = 0; i < len; ++i) {
        const double v = static_cast<double>(ToCompute(in[i]));
        sq += v * v;
      }
      const double inv_rms = 1.0 / std::sqrt(sq / static_cast<double>(len) + epsilon_);
      for (int64_t i = 0; i < len; ++i) {
        const double normalized = static_cast<double>(ToCompute(in[i])) * inv_rms;
        out[i] = FromCompute<V>(static_cast<ComputeType<V>>(normalized * static_cast<double>(ToCompute(scale[i]))));
      }
    });
  }

  int64_t axis_ = -1;
  double epsilon_ = 1e-5;
};

// LpNormalization: x / ||x||_p along one axis, p in {1, 2}; a zero norm gives zeros (stated in -22, and
// the only finite choice for -1 as well).
class LpNormalization final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", -1));
    ASSIGN_OR_RETURN(p_, info.Attr<int64_t>("p", 2));
    if (p_ != 1 && p_ != 2) return absl::InvalidArgumentError(absl::StrCat("attribute p: ", p_, ", expected 1 or 2"));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_, x.rank()));
    int64_t n = x.rank() == 0 ? 1 : x.dim(axis), inner = 1;
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
    Tensor& y = ctx.Output(0, x.dtype(), x.shape());
    if (x.NumElements() == 0) return absl::OkStatus();
    return DispatchFloating(x, "input", [&](auto tag) {
      using T = decltype(tag);
      Run(x.data<T>(), x.NumElements() / (n * inner), n, inner, y.data<T>(), ctx.pool());
    });
  }

 private:
  // Lines along the axis are strided by `inner`; each (outer, j) line is normalized on its own.
  template <typename T>
  void Run(const T* x, int64_t outer, int64_t n, int64_t inner, T* y, ThreadPool& pool) const {
    ForEachRow(pool, outer * inner, n, [&](int64_t line) {
      const int64_t start = (line / inner) * n * inner + line % inner;
      double norm = 0;
      for (int64_t i = 0, at = start; i < n; ++i, at += inner) {
        const double v = static_cast<double>(ToCompute(x[at]));
        norm += p_ == 1 ? std::abs(v) : v * v;
      }
      if (p_ == 2) norm = std::sqrt(norm);
      const double inv = norm == 0 ? 0 : 1 / norm;
      for (int64_t i = 0, at = start; i < n; ++i, at += inner) {
        y[at] = FromCompute<T>(static_cast<ComputeType<T>>(static_cast<double>(ToCompute(x[at])) * inv));
      }
    });
  }

  int64_t axis_ = -1;
  int64_t p_ = 2;
};

// Shrink-9: x < -lambd ? x + bias : x > lambd ? x - bias : 0. Integers compare and shift in double, as
// numpy does when it mixes them with the float attributes, then convert back.
class ShrinkOp : public NumberOp {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(lambd_, info.Attr<float>("lambd", 0.5f));
    ASSIGN_OR_RETURN(bias_, info.Attr<float>("bias", 0.0f));
    return absl::OkStatus();
  }
  template <typename C> C operator()(C x) const {
    using F = std::conditional_t<std::is_floating_point_v<C>, C, double>;
    const F v = static_cast<F>(x), lambd = static_cast<F>(lambd_), bias = static_cast<F>(bias_);
    if (v < -lambd) return static_cast<C>(v + bias);
    if (v > lambd) return static_cast<C>(v - bias);
    return C{0};
  }

 private:
  float lambd_ = 0.5f;
  float bias_ = 0;
};

// Swish-24: x * sigmoid(alpha * x), written as x / (1 + exp(-alpha * x)): exp overflowing to inf gives the
// right limit (-0) for large negative inputs.
class SwishOp : public FloatOp {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(alpha_, info.Attr<float>("alpha", 1.0f));
    return absl::OkStatus();
  }
  template <typename C> C operator()(C x) const { return x / (C{1} + std::exp(-static_cast<C>(alpha_) * x)); }

 private:
  float alpha_ = 1.0f;
};

// SwiGLU-28: Swish_alpha(A) * B, the gated MLP of Llama-style models. A and B have one shape: the spec
// allows no broadcasting, so a mismatch is an error rather than a silently broadcast product.
class SwiGluOp : public SwishOp {
 public:
  template <typename C> C operator()(C a, C b) const { return SwishOp::operator()(a) * b; }
  template <typename T> absl::Status CheckInputs(const Tensor& a, const Tensor& b) const {
    if (a.shape() == b.shape()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("A ", a.DebugString(), " and B ", b.DebugString(),
                                                   " must have the same shape (SwiGLU does not broadcast)"));
  }
};

constexpr DataType kShrinkTypes[] = {DataType::kUint8,   DataType::kUint16, DataType::kUint32, DataType::kUint64,
                                     DataType::kInt8,    DataType::kInt16,  DataType::kInt32,  DataType::kInt64,
                                     DataType::kFloat16, DataType::kFloat,  DataType::kDouble};

REGISTER_KERNEL(kOnnx, "RMSNormalization", 23, kLatest, kFloatTypes, RmsNormalization);
// LpNormalization-22 only adds bfloat16.
REGISTER_KERNEL(kOnnx, "LpNormalization", 1, 21, kFloatTypes, LpNormalization);
REGISTER_KERNEL(kOnnx, "LpNormalization", 22, kLatest, kFloatTypes, LpNormalization);
REGISTER_KERNEL(kOnnx, "Shrink", 9, kLatest, kShrinkTypes, UnaryKernel<ShrinkOp>);
REGISTER_KERNEL(kOnnx, "Swish", 24, kLatest, kFloatTypes, UnaryKernel<SwishOp>);
REGISTER_KERNEL(kOnnx, "SwiGLU", 28, kLatest, kFloatTypes, BinaryKernel<SwiGluOp>);

}  // namespace
}  // namespace onnxserve
