// Linear quantization: QuantizeLinear, DequantizeLinear (per-tensor, per-axis, blocked),
// DynamicQuantizeLinear, and the integer products MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.
// Quantized types: int8, uint8, int16, uint16, the 4- and 2-bit integers, float8 and float4 (and int32 for
// DequantizeLinear); any other is UNIMPLEMENTED, naming the type.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/ops/blas.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

constexpr DataType kQuantizeInputTypes[] = {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16,
                                            DataType::kInt32};
constexpr DataType kDequantizeInputTypes[] = {
    DataType::kInt8,         DataType::kUint8,          DataType::kInt16,       DataType::kUint16,
    DataType::kInt32,        DataType::kFloat8E4M3FN,   DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
    DataType::kFloat8E5M2FNUZ, DataType::kFloat4E2M1,   DataType::kInt4,        DataType::kUint4,
    DataType::kInt2,         DataType::kUint2};
constexpr DataType kInt8Types[] = {DataType::kInt8, DataType::kUint8};
constexpr DataType kFloatOnly[] = {DataType::kFloat};

bool IsQuantizedType(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8 || t == DataType::kInt16 || t == DataType::kUint16 ||
         (IsLowPrecision(t) && t != DataType::kFloat8E8M0);
}
bool IsScaleType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// Calls fn(Q{}) for a quantized storage type (plus int32 when `with_int32`).
template <typename Fn>
void DispatchQuantized(DataType type, bool with_int32, Fn&& fn) {
  DispatchLowPrecision(type, [&](auto tag) {
    if constexpr (!std::is_same_v<decltype(tag), Float8E8M0>) fn(tag);
  });
  DispatchNumeric(type, [&](auto tag) {
    using Q = decltype(tag);
    if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int16_t> ||
                  std::is_same_v<Q, uint16_t>) {
      fn(tag);
    } else if constexpr (std::is_same_v<Q, int32_t>) {
      if (with_int32) fn(tag);
    }
  });
}

// Calls fn(T{}) for float, Float16, BFloat16 (and int32 when `with_int32`).
template <typename Fn>
void DispatchScaleType(DataType type, bool with_int32, Fn&& fn) {
  DispatchNumeric(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      fn(tag);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      if (with_int32) fn(tag);
    }
  });
}

// NaN (a NaN input, or 0 / 0 with a zero scale) has no integer value: it becomes 0, where a float-to-integer
// conversion of it would be undefined behaviour.
template <typename Q>
Q Saturate(float v) {
  if (std::isnan(v)) return Q{0};
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  return static_cast<Q>(std::clamp(v, lo, hi));
}

// y = saturate(round(x / scale) + zero_point) for integers; float8/float4 convert x / scale + zero_point
// (rounding to nearest even), saturating to the largest finite value when `saturate`.
template <typename Q>
Q QuantizeValue(float scaled, float zero_point, bool saturate) {
  if constexpr (kIsLowPrecisionFloat<Q>) {
    return Q(scaled + zero_point, saturate);
  } else if constexpr (kIsSubByteInt<Q>) {
    const float v = std::nearbyint(scaled) + zero_point;
    return Q(std::isnan(v) ? int64_t{0} : static_cast<int64_t>(std::clamp<float>(v, Q::kMin, Q::kMax)));
  } else {
    return Saturate<Q>(std::nearbyint(scaled) + zero_point);
  }
}

// A quantized value as double: exact for every integer type, the value of a float8/float4.
template <typename Q>
double QuantizedAsDouble(Q v) {
  if constexpr (kIsLowPrecisionFloat<Q>) {
    return static_cast<float>(v);
  } else if constexpr (kIsSubByteInt<Q>) {
    return static_cast<int32_t>(v);
  } else {
    return static_cast<double>(v);
  }
}

// Quantized tensors without a supported storage type (float8, 4-bit, 2-bit) are reported by name.
absl::Status CheckQuantizedType(DataType t, const char* what) {
  if (IsQuantizedType(t)) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      what, " type ", DataTypeName(t),
      " is not supported: expected an 8-, 16-, 4- or 2-bit integer type, a float8 type or float4e2m1"));
}

// ---- Granularity: where each element finds its scale and zero point -------------------------------------

// x is viewed as [outer, axis_dim, inner]; element (o, k, i) uses scale
// o * s_outer + (k / block) * s_axis + i * s_inner. Per-tensor: all strides 0. Per-axis: s_axis = 1.
// Blocked: the scale has x's shape with ceil(axis_dim / block) along the axis.
struct QuantLayout {
  int64_t outer = 1, axis_dim = 1, inner = 1, block = 1;
  int64_t s_outer = 0, s_axis = 0, s_inner = 0;
};

absl::StatusOr<QuantLayout> PlanLayout(const Shape& x, const Shape& scale, int64_t axis_attr,
                                       int64_t block_size) {
  QuantLayout l;
  l.axis_dim = NumElements(x);
  if (scale.size() == 0 || (scale.size() == 1 && scale[0] == 1 && block_size == 0)) return l;
  if (x.empty()) {
    // A scalar has no axis to quantize along (NormalizeAxis would take 0 for it).
    return absl::InvalidArgumentError(absl::StrCat("scale ", ShapeToString(scale),
                                                   " for a scalar x: expected a scalar or [1]"));
  }
  ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(axis_attr, static_cast<int64_t>(x.size())));
  l.axis_dim = x[axis];
  for (int64_t d = 0; d < axis; ++d) l.outer *= x[d];
  for (size_t d = axis + 1; d < x.size(); ++d) l.inner *= x[d];
  if (scale.size() == 1 && block_size == 0) {
    if (scale[0] != l.axis_dim) {
      return absl::InvalidArgumentError(absl::StrCat("per-axis scale ", ShapeToString(scale), ": expected [",
                                                     l.axis_dim, "] (x ", ShapeToString(x), ", axis ", axis, ")"));
    }
    l.s_axis = 1;
    return l;
  }
  Shape expected = x;
  // Rounded up without adding block_size - 1, which overflows for a block_size near INT64_MAX.
  if (block_size > 0) expected[axis] = x[axis] / block_size + (x[axis] % block_size != 0 ? 1 : 0);
  if (block_size <= 0 || scale != expected) {
    return absl::InvalidArgumentError(absl::StrCat("scale ", ShapeToString(scale), " for x ", ShapeToString(x),
                                                   ", axis ", axis, ", block_size ", block_size,
                                                   ": expected a scalar, [", l.axis_dim, "] or ",
                                                   block_size > 0 ? ShapeToString(expected) : "a block_size > 0"));
  }
  l.block = block_size;
  l.s_inner = 1;
  l.s_axis = l.inner;
  l.s_outer = expected[axis] * l.inner;
  return l;
}

// Calls fn(x_index, scale_index) for every element, rows of the [outer, axis_dim] view split over `pool`.
template <typename Fn>
void ForEachQuantized(const QuantLayout& l, ThreadPool& pool, Fn&& fn) {
  pool.ParallelFor(l.outer * l.axis_dim, std::max<int64_t>(1, 16384 / std::max<int64_t>(l.inner, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t row = begin; row < end; ++row) {
                       const int64_t o = row / l.axis_dim, k = row % l.axis_dim;
                       const int64_t s = o * l.s_outer + (k / l.block) * l.s_axis;
                       for (int64_t i = 0; i < l.inner; ++i) fn(row * l.inner + i, s + i * l.s_inner);
                     }
                   });
}

std::vector<float> FloatValues(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.NumElements()));
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = static_cast<float>(t.GetAsDouble(i));
  return v;
}

// Zero points as double (exact for every quantized type; zeros when omitted), one per scale.
std::vector<double> ZeroPoints(const Tensor* zp, int64_t count) {
  std::vector<double> v(static_cast<size_t>(zp != nullptr ? zp->NumElements() : count), 0.0);
  for (int64_t i = 0; zp != nullptr && i < zp->NumElements(); ++i) v[i] = zp->GetAsDouble(i);
  return v;
}

// The zero point pairs with the scale element by element, so it has the scale's shape; one value given as a
// scalar and the other as [1] pair the same. Equal counts are not enough: a blocked scale of [2, 3] and a zero
// point of [3, 2] paired their elements in another order without a word.
absl::Status CheckZeroPointShape(const Tensor* zp, const Tensor& scale) {
  const bool one_each = zp != nullptr && zp->NumElements() == 1 && scale.NumElements() == 1;
  if (zp == nullptr || zp->shape() == scale.shape() || one_each) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("zero point ", ShapeToString(zp->shape()),
                                                 ": expected the scale's shape ", ShapeToString(scale.shape())));
}

// ---- QuantizeLinear --------------------------------------------------------------------------------------

class QuantizeLinear final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 1));
    ASSIGN_OR_RETURN(block_size_, info.Attr<int64_t>("block_size", 0));
    ASSIGN_OR_RETURN(const int64_t saturate, info.Attr<int64_t>("saturate", 1));
    saturate_ = saturate != 0;
    ASSIGN_OR_RETURN(const int64_t output_dtype, info.Attr<int64_t>("output_dtype", 0));
    output_dtype_ = static_cast<DataType>(output_dtype);
    if (output_dtype != 0) RETURN_IF_ERROR(CheckQuantizedType(output_dtype_, "output_dtype"));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& scale = *ctx.Input(1);
    const Tensor* zp = ctx.Input(2);
    DataType y_type = zp != nullptr ? zp->dtype() : DataType::kUint8;
    if (zp == nullptr && output_dtype_ != DataType::kUndefined) y_type = output_dtype_;
    RETURN_IF_ERROR(CheckQuantizedType(y_type, "y_zero_point"));
    if (output_dtype_ != DataType::kUndefined && y_type != output_dtype_) {
      return absl::InvalidArgumentError(absl::StrCat("y_zero_point is ", DataTypeName(y_type),
                                                     " but output_dtype is ", DataTypeName(output_dtype_)));
    }
    RETURN_IF_ERROR(CheckZeroPointShape(zp, scale));
    ASSIGN_OR_RETURN(const QuantLayout layout, PlanLayout(x.shape(), scale.shape(), axis_, block_size_));
    const std::vector<float> scales = FloatValues(scale);
    const std::vector<double> zero_points = ZeroPoints(zp, scale.NumElements());
    Tensor& y = ctx.Output(0, y_type, x.shape());
    bool handled = false;
    DispatchScaleType(x.dtype(), /*with_int32=*/true, [&](auto x_tag) {
      using X = decltype(x_tag);
      DispatchQuantized(y_type, /*with_int32=*/false, [&](auto q_tag) {
        using Q = decltype(q_tag);
        const X* in = x.data<X>();
        Q* out = y.data<Q>();
        // Division in float; nearbyint rounds half to even (the default rounding mode).
        ForEachQuantized(layout, ctx.pool(), [&](int64_t i, int64_t s) {
          out[i] = QuantizeValue<Q>(static_cast<float>(in[i]) / scales[s], static_cast<float>(zero_points[s]),
                                    saturate_);
        });
        handled = true;
      });
    });
    if (!handled) {
      return absl::InvalidArgumentError(absl::StrCat("x is ", DataTypeName(x.dtype()),
                                                     ": expected float, float16, bfloat16 or int32"));
    }
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = 1;
  int64_t block_size_ = 0;
  bool saturate_ = true;
  DataType output_dtype_ = DataType::kUndefined;
};

// QuantizeLinear-10 is per-tensor; -13 adds axis; -19 float16/bfloat16 and float8 with saturate; -21
// block_size, output_dtype and int16/uint16 and 4-bit; -23 float4 and precision; -24 float8e8m0 scales;
// -25 2-bit types.
REGISTER_KERNEL(kOnnx, "QuantizeLinear", 10, 12, kQuantizeInputTypes, QuantizeLinear);
REGISTER_KERNEL(kOnnx, "QuantizeLinear", 13, 18, kQuantizeInputTypes, QuantizeLinear);
REGISTER_KERNEL(kOnnx, "QuantizeLinear", 19, 20, kQuantizeInputTypes, QuantizeLinear);
REGISTER_KERNEL(kOnnx, "QuantizeLinear", 21, 22, kQuantizeInputTypes, QuantizeLinear);
REGISTER_KERNEL(kOnnx, "QuantizeLinear", 23, 23, kQuantizeInputTypes, QuantizeLinear);
REGISTER_KERNEL(kOnnx, "QuantizeLinear", 24, 24, kQuantizeInputTypes, QuantizeLinear);
REGISTER_KERNEL(kOnnx, "QuantizeLinear", 25, kLatest, kQuantizeInputTypes, QuantizeLinear);

// ---- DequantizeLinear ------------------------------------------------------------------------------------

class DequantizeLinear final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(axis_, info.Attr<int64_t>("axis", 1));
    ASSIGN_OR_RETURN(block_size_, info.Attr<int64_t>("block_size", 0));
    ASSIGN_OR_RETURN(const int64_t output_dtype, info.Attr<int64_t>("output_dtype", 0));
    output_dtype_ = static_cast<DataType>(output_dtype);
    if (output_dtype != 0 && !IsScaleType(output_dtype_)) {
      return absl::UnimplementedError(absl::StrCat("output_dtype ", DataTypeName(output_dtype_),
                                                   " is not supported: expected float, float16 or bfloat16"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& scale = *ctx.Input(1);
    const Tensor* zp = ctx.Input(2);
    if (x.dtype() != DataType::kInt32) RETURN_IF_ERROR(CheckQuantizedType(x.dtype(), "x"));
    if (zp != nullptr && zp->dtype() != x.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("x_zero_point is ", DataTypeName(zp->dtype()),
                                                     ": expected x's type ", DataTypeName(x.dtype())));
    }
    const DataType y_type = output_dtype_ != DataType::kUndefined ? output_dtype_ : scale.dtype();
    if (!IsScaleType(y_type)) {
      return absl::UnimplementedError(absl::StrCat("x_scale type ", DataTypeName(scale.dtype()),
                                                   " is not supported: expected float, float16 or bfloat16"));
    }
    RETURN_IF_ERROR(CheckZeroPointShape(zp, scale));
    ASSIGN_OR_RETURN(const QuantLayout layout, PlanLayout(x.shape(), scale.shape(), axis_, block_size_));
    const std::vector<float> scales = FloatValues(scale);
    const std::vector<double> zero_points = ZeroPoints(zp, scale.NumElements());
    Tensor& y = ctx.Output(0, y_type, x.shape());
    DispatchQuantized(x.dtype(), /*with_int32=*/true, [&](auto q_tag) {
      using Q = decltype(q_tag);
      DispatchScaleType(y_type, /*with_int32=*/false, [&](auto y_tag) {
        using Y = decltype(y_tag);
        const Q* in = x.data<Q>();
        Y* out = y.data<Y>();
        // The difference is exact in double; only the product rounds.
        ForEachQuantized(layout, ctx.pool(), [&](int64_t i, int64_t s) {
          out[i] = static_cast<Y>(static_cast<float>(QuantizedAsDouble(in[i]) - zero_points[s]) * scales[s]);
        });
      });
    });
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = 1;
  int64_t block_size_ = 0;
  DataType output_dtype_ = DataType::kUndefined;
};

// Same version history as QuantizeLinear (-21 adds block_size, -23 output_dtype).
REGISTER_KERNEL(kOnnx, "DequantizeLinear", 10, 12, kDequantizeInputTypes, DequantizeLinear);
REGISTER_KERNEL(kOnnx, "DequantizeLinear", 13, 18, kDequantizeInputTypes, DequantizeLinear);
REGISTER_KERNEL(kOnnx, "DequantizeLinear", 19, 20, kDequantizeInputTypes, DequantizeLinear);
REGISTER_KERNEL(kOnnx, "DequantizeLinear", 21, 22, kDequantizeInputTypes, DequantizeLinear);
REGISTER_KERNEL(kOnnx, "DequantizeLinear", 23, 23, kDequantizeInputTypes, DequantizeLinear);
REGISTER_KERNEL(kOnnx, "DequantizeLinear", 24, 24, kDequantizeInputTypes, DequantizeLinear);
REGISTER_KERNEL(kOnnx, "DequantizeLinear", 25, kLatest, kDequantizeInputTypes, DequantizeLinear);

// ---- DynamicQuantizeLinear -------------------------------------------------------------------------------

// uint8 quantization whose range [min(0, min x), max(0, max x)] maps onto [0, 255].
class DynamicQuantizeLinear final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    const Tensor& x = *ctx.Input(0);
    if (x.dtype() != DataType::kFloat) {
      return absl::InvalidArgumentError(absl::StrCat("x is ", DataTypeName(x.dtype()), ": expected float"));
    }
    const float* in = x.data<float>();
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      lo = std::min(lo, in[i]);
      hi = std::max(hi, in[i]);
    }
    const float scale = (hi - lo) / 255.0f;
    // An all-zero input has no range: every value quantizes to the zero point 0.
    const float zero_point = scale == 0 ? 0.0f : std::nearbyint(std::clamp(-lo / scale, 0.0f, 255.0f));
    const float divisor = scale == 0 ? 1.0f : scale;
    uint8_t* out = ctx.Output(0, DataType::kUint8, x.shape()).data<uint8_t>();
    ctx.pool().ParallelFor(x.NumElements(), 16384, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = Saturate<uint8_t>(std::nearbyint(in[i] / divisor) + zero_point);
    });
    ctx.Output(1, DataType::kFloat, {}).data<float>()[0] = scale;
    ctx.Output(2, DataType::kUint8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zero_point);
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(kOnnx, "DynamicQuantizeLinear", 11, kLatest, kFloatOnly, DynamicQuantizeLinear);

// ---- Integer matrix products -----------------------------------------------------------------------------

// An int32 copy of a (u)int8 tensor minus its zero point: a scalar, or `count` of them, element i using
// zero point i / divisor % count (per row of A: divisor K, count M; per column of B: divisor 1, count N).
// The zero point has the tensor's type, as the spec requires: a float one of 1e30 (or NaN) has no int32 value.
absl::StatusOr<std::vector<int32_t>> WidenMinusZeroPoint(const Tensor& t, const Tensor* zp, int64_t count,
                                                         int64_t divisor, const char* name) {
  if (zp != nullptr && zp->dtype() != t.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(name, " zero point is ", DataTypeName(zp->dtype()),
                                                   ": expected its tensor's type ", DataTypeName(t.dtype())));
  }
  if (zp != nullptr && zp->NumElements() != 1 && zp->NumElements() != count) {
    return absl::InvalidArgumentError(absl::StrCat(name, " zero point ", ShapeToString(zp->shape()),
                                                   ": expected a scalar or ", count, " values"));
  }
  const std::vector<double> zps = ZeroPoints(zp, 1);
  std::vector<int32_t> out(static_cast<size_t>(t.NumElements()));
  DispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
      const T* in = t.data<T>();
      for (int64_t i = 0; i < t.NumElements(); ++i) {
        const double zero = zps.size() == 1 ? zps[0] : zps[i / divisor % count];
        out[i] = static_cast<int32_t>(in[i]) - static_cast<int32_t>(zero);
      }
    }
  });
  return out;
}

// The integer products take int8/uint8; QLinearMatMul-21's float8 operands are not implemented.
absl::Status CheckInt8(const Tensor& t, const char* name) {
  if (t.dtype() == DataType::kInt8 || t.dtype() == DataType::kUint8) return absl::OkStatus();
  const std::string message = absl::StrCat(name, " is ", DataTypeName(t.dtype()), ": expected int8 or uint8");
  return IsLowPrecision(t.dtype()) ? absl::UnimplementedError(message) : absl::InvalidArgumentError(message);
}

// Y = (A - a_zero_point) x (B - b_zero_point) in int32, batch by batch.
absl::StatusOr<Tensor> IntegerProduct(const MatMulPlan& p, const Tensor& a, const Tensor* a_zp, const Tensor& b,
                                      const Tensor* b_zp, ThreadPool& pool) {
  RETURN_IF_ERROR(CheckInt8(a, "A"));
  RETURN_IF_ERROR(CheckInt8(b, "B"));
  ASSIGN_OR_RETURN(const std::vector<int32_t> wa, WidenMinusZeroPoint(a, a_zp, p.m, p.k, "A"));
  ASSIGN_OR_RETURN(const std::vector<int32_t> wb, WidenMinusZeroPoint(b, b_zp, p.n, 1, "B"));
  Tensor y(DataType::kInt32, p.output);
  if (y.NumElements() == 0) return y;  // however many batches its shape says (RunMatMul's case)
  const int64_t a_size = p.m * p.k, b_size = p.k * p.n, y_size = p.m * p.n;
  const std::vector<std::pair<int64_t, int64_t>> matrices = MatrixPairs(p);
  for (size_t i = 0; i < matrices.size(); ++i) {
    Gemm<int32_t>(false, false, p.m, p.n, p.k, 1, wa.data() + matrices[i].first * a_size, p.k,
                  wb.data() + matrices[i].second * b_size, p.n, 0, y.data<int32_t>() + i * y_size, p.n, &pool);
  }
  return y;
}

class MatMulInteger final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    ASSIGN_OR_RETURN(const MatMulPlan p, PlanMatMul(ctx.Input(0)->shape(), ctx.Input(1)->shape()));
    ASSIGN_OR_RETURN(Tensor y, IntegerProduct(p, *ctx.Input(0), ctx.Input(2), *ctx.Input(1), ctx.Input(3), ctx.pool()));
    ctx.SetOutput(0, std::move(y));
    return absl::OkStatus();
  }
};

REGISTER_KERNEL(kOnnx, "MatMulInteger", 10, kLatest, kInt8Types, MatMulInteger);

// Quantized matmul: y = saturate(round((A - a_zp)(B - b_zp) * a_scale * b_scale / y_scale) + y_zp). a_scale
// may be per row of A, b_scale per column of B.
class QLinearMatMul final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 8));
    const Tensor& a = *ctx.Input(0);
    const Tensor& b = *ctx.Input(3);
    const Tensor& y_zp = *ctx.Input(7);
    ASSIGN_OR_RETURN(const MatMulPlan p, PlanMatMul(a.shape(), b.shape()));
    ASSIGN_OR_RETURN(const Tensor acc, IntegerProduct(p, a, ctx.Input(2), b, ctx.Input(5), ctx.pool()));
    const std::vector<float> a_scale = FloatValues(*ctx.Input(1));
    const std::vector<float> b_scale = FloatValues(*ctx.Input(4));
    if (ctx.Input(6)->NumElements() != 1 || y_zp.NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("y_scale ", ctx.Input(6)->DebugString(), " and y_zero_point ",
                                                     y_zp.DebugString(), ": expected scalars"));
    }
    const float y_scale = static_cast<float>(ctx.Input(6)->GetAsDouble(0));
    const float y_zero = static_cast<float>(y_zp.GetAsDouble(0));
    if ((a_scale.size() != 1 && static_cast<int64_t>(a_scale.size()) != p.m) ||
        (b_scale.size() != 1 && static_cast<int64_t>(b_scale.size()) != p.n)) {
      return absl::InvalidArgumentError(absl::StrCat("a_scale has ", a_scale.size(), " and b_scale ",
                                                     b_scale.size(), " values: expected 1 or ", p.m, " and 1 or ", p.n));
    }
    RETURN_IF_ERROR(CheckInt8(y_zp, "y_zero_point"));
    Tensor& y = ctx.Output(0, y_zp.dtype(), p.output);
    const int32_t* in = acc.data<int32_t>();
    DispatchQuantized(y_zp.dtype(), false, [&](auto tag) {
      using Q = decltype(tag);
      Q* out = y.data<Q>();
      for (int64_t i = 0; i < acc.NumElements(); ++i) {
        const int64_t row = i / p.n % p.m, col = i % p.n;
        const float multiplier =
            a_scale[a_scale.size() == 1 ? 0 : row] * b_scale[b_scale.size() == 1 ? 0 : col] / y_scale;
        out[i] = QuantizeValue<Q>(static_cast<float>(in[i]) * multiplier, y_zero, /*saturate=*/true);
      }
    });
    return absl::OkStatus();
  }
};

// QLinearMatMul-21 adds float16/bfloat16 scales and float8 types.
REGISTER_KERNEL(kOnnx, "QLinearMatMul", 10, 20, kInt8Types, QLinearMatMul);
REGISTER_KERNEL(kOnnx, "QLinearMatMul", 21, kLatest, kInt8Types, QLinearMatMul);

// ---- ConvInteger and QLinearConv ------------------------------------------------------------------------

// (x - x_zero_point) convolved with (w - w_zero_point), by the float Conv kernel (built from the node's own
// attributes, which Conv shares) on double copies: sums of int8 products are exact in double, so rounding
// them back to integers loses nothing. x's zero point is per tensor; w's per tensor or per output map.
class IntegerConvolution {
 public:
  absl::Status Init(const KernelInfo& info) {
    const KernelDef* conv = KernelRegistry::Global().Find(kOnnx, "Conv", 10);
    if (conv == nullptr) return absl::InternalError("the Conv-1 kernel the integer convolutions run is not registered");
    ASSIGN_OR_RETURN(conv_, conv->create(info));
    return absl::OkStatus();
  }

  // The exact integer sums as a double tensor [N, M, ...].
  absl::StatusOr<Tensor> Accumulate(const Tensor& x, const Tensor* x_zp, const Tensor& w, const Tensor* w_zp,
                                    ThreadPool& pool) const {
    RETURN_IF_ERROR(CheckInt8(x, "x"));
    RETURN_IF_ERROR(CheckInt8(w, "w"));
    if (w.rank() < 1) return absl::InvalidArgumentError("w must have rank >= 1");
    ASSIGN_OR_RETURN(const Tensor xd, WidenToDouble(x, x_zp, 1, x.NumElements(), "x"));
    ASSIGN_OR_RETURN(const Tensor wd,
                     WidenToDouble(w, w_zp, w.dim(0), w.NumElements() / std::max<int64_t>(w.dim(0), 1), "w"));
    std::vector<Tensor> outputs(1);
    KernelContext conv_ctx({&xd, &wd}, &outputs, {true}, &pool, {});
    RETURN_IF_ERROR(conv_->Compute(conv_ctx));
    return std::move(outputs[0]);
  }

 private:
  static absl::StatusOr<Tensor> WidenToDouble(const Tensor& t, const Tensor* zp, int64_t count, int64_t divisor,
                                              const char* name) {
    ASSIGN_OR_RETURN(const std::vector<int32_t> wide, WidenMinusZeroPoint(t, zp, count, divisor, name));
    Tensor d(DataType::kDouble, t.shape());
    std::copy(wide.begin(), wide.end(), d.data<double>());
    return d;
  }

  std::unique_ptr<OpKernel> conv_;
};

class ConvInteger final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) { return conv_.Init(info); }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    ASSIGN_OR_RETURN(const Tensor yd,
                     conv_.Accumulate(*ctx.Input(0), ctx.Input(2), *ctx.Input(1), ctx.Input(3), ctx.pool()));
    Tensor& y = ctx.Output(0, DataType::kInt32, yd.shape());
    const double* in = yd.data<double>();
    int32_t* out = y.data<int32_t>();
    for (int64_t i = 0; i < yd.NumElements(); ++i) out[i] = static_cast<int32_t>(std::llround(in[i]));
    return absl::OkStatus();
  }

 private:
  IntegerConvolution conv_;
};

// A float scale input holding `count` values (1: per tensor), named in the error otherwise.
absl::StatusOr<std::vector<float>> ScaleValues(const Tensor& t, const char* name, int64_t count) {
  if (t.dtype() != DataType::kFloat) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is ", t.DebugString(), ": expected float"));
  }
  if (t.NumElements() != 1 && t.NumElements() != count) {
    return absl::InvalidArgumentError(absl::StrCat(name, " ", ShapeToString(t.shape()), ": expected a scalar",
                                                   count != 1 ? absl::StrCat(" or ", count, " values") : ""));
  }
  return FloatValues(t);
}

// y = saturate(round_half_even((x - x_zp) * (w - w_zp) + B) * x_scale * w_scale / y_scale) + y_zp), w_scale
// per tensor or per output map. B is int32 at scale x_scale * w_scale, zero point 0.
class QLinearConv final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) { return conv_.Init(info); }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 8));
    const Tensor& w = *ctx.Input(3);
    const Tensor& y_zp = *ctx.Input(7);
    const Tensor* bias = ctx.Input(8);
    RETURN_IF_ERROR(CheckInt8(y_zp, "y_zero_point"));
    const int64_t maps = w.rank() >= 1 ? w.dim(0) : 1;
    ASSIGN_OR_RETURN(const std::vector<float> x_scale, ScaleValues(*ctx.Input(1), "x_scale", 1));
    ASSIGN_OR_RETURN(const std::vector<float> w_scale, ScaleValues(*ctx.Input(4), "w_scale", maps));
    ASSIGN_OR_RETURN(const std::vector<float> y_scale, ScaleValues(*ctx.Input(6), "y_scale", 1));
    if (y_zp.NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("y_zero_point ", ShapeToString(y_zp.shape()), ": expected a scalar"));
    }
    if (bias != nullptr && (bias->dtype() != DataType::kInt32 || bias->rank() != 1 || bias->dim(0) != maps)) {
      return absl::InvalidArgumentError(absl::StrCat("B ", bias->DebugString(), ": expected int32 [", maps, "]"));
    }
    ASSIGN_OR_RETURN(const Tensor acc, conv_.Accumulate(*ctx.Input(0), ctx.Input(2), w, ctx.Input(5), ctx.pool()));
    // The multiplier rounds in float, as the spec's float32 scales do; the product with the exact sum in double.
    std::vector<double> multipliers(static_cast<size_t>(maps));
    for (int64_t m = 0; m < maps; ++m) {
      multipliers[m] = x_scale[0] * w_scale[w_scale.size() == 1 ? 0 : m] / y_scale[0];
    }
    Requantize(acc, bias, multipliers, y_zp, ctx.Output(0, y_zp.dtype(), acc.shape()));
    return absl::OkStatus();
  }

 private:
  static void Requantize(const Tensor& acc, const Tensor* bias, const std::vector<double>& multipliers,
                         const Tensor& y_zp, Tensor& y) {
    const int64_t maps = acc.dim(1), plane = acc.NumElements() / std::max<int64_t>(acc.dim(0) * maps, 1);
    const double* in = acc.data<double>();
    const double zero = y_zp.GetAsDouble(0);
    DispatchQuantized(y_zp.dtype(), /*with_int32=*/false, [&](auto tag) {
      using Q = decltype(tag);
      if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t>) {
        Q* out = y.data<Q>();
        for (int64_t i = 0; i < acc.NumElements(); ++i) {
          const int64_t m = i / plane % maps;
          const double sum = in[i] + (bias != nullptr ? bias->data<int32_t>()[m] : 0);
          // nearbyint rounds half to even (the default rounding mode).
          out[i] = Saturate<Q>(static_cast<float>(std::nearbyint(sum * multipliers[m]) + zero));
        }
      }
    });
  }

  IntegerConvolution conv_;
};

REGISTER_KERNEL(kOnnx, "QLinearConv", 10, kLatest, kInt8Types, QLinearConv);
REGISTER_KERNEL(kOnnx, "ConvInteger", 10, kLatest, kInt8Types, ConvInteger);

}  // namespace
}  // namespace onnxserve
