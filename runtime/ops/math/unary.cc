// Unary math: Abs Neg Reciprocal Floor Ceil Round Sign Sqrt Exp Log Erf, the trigonometric and hyperbolic
// functions, IsNaN and IsInf. Each op is a functor on ComputeType values run by UnaryKernel (elementwise.h);
// half types compute in float. Version bumps of these ops only widened type lists, so one functor serves
// every range.
#include <cmath>
#include <limits>

#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

struct AbsOp : NumberOp {
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else if constexpr (std::is_integral_v<C>) {
      return x < 0 ? static_cast<C>(WrapType<C>{0} - static_cast<WrapType<C>>(x)) : x;  // INT_MIN wraps
    } else {
      return std::abs(x);
    }
  }
};

struct NegOp : SignedOp {
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(WrapType<C>{0} - static_cast<WrapType<C>>(x));  // INT_MIN wraps
    } else {
      return -x;
    }
  }
};

struct SignOp : NumberOp {
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return static_cast<C>(x != 0);
    if (IsNan(x)) return x;
    return static_cast<C>(static_cast<int>(C{0} < x) - static_cast<int>(x < C{0}));
  }
};

struct ReciprocalOp : FloatOp {
  template <typename C> C operator()(C x) const { return C{1} / x; }
};

// Erf-9 accepts integers too: computed in double, truncated back.
struct ErfOp : NumberOp {
  template <typename C> C operator()(C x) const { return static_cast<C>(std::erf(x)); }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const { k.erf(x, y, n); }
};

struct ExpOp : FloatOp {
  template <typename C> C operator()(C x) const { return std::exp(x); }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const { k.exp(x, y, n); }
};

struct SqrtOp : FloatOp {
  template <typename C> C operator()(C x) const { return std::sqrt(x); }
  void MapFloats(const vec::VectorKernels& k, const float* x, float* y, int64_t n) const { k.sqrt(x, y, n); }
};

// Round half to even, as numpy does: nearbyint in the default rounding mode.
struct RoundOp : FloatOp {
  template <typename C> C operator()(C x) const { return std::nearbyint(x); }
};

#define ONNXSERVE_FLOAT_FUNCTION(Name, expr)                 \
  struct Name##Op : FloatOp {                                \
    template <typename C> C operator()(C x) const { return expr; } \
  }

ONNXSERVE_FLOAT_FUNCTION(Floor, std::floor(x));
ONNXSERVE_FLOAT_FUNCTION(Ceil, std::ceil(x));
ONNXSERVE_FLOAT_FUNCTION(Log, std::log(x));
ONNXSERVE_FLOAT_FUNCTION(Sin, std::sin(x));
ONNXSERVE_FLOAT_FUNCTION(Cos, std::cos(x));
ONNXSERVE_FLOAT_FUNCTION(Tan, std::tan(x));
ONNXSERVE_FLOAT_FUNCTION(Asin, std::asin(x));
ONNXSERVE_FLOAT_FUNCTION(Acos, std::acos(x));
ONNXSERVE_FLOAT_FUNCTION(Atan, std::atan(x));
ONNXSERVE_FLOAT_FUNCTION(Sinh, std::sinh(x));
ONNXSERVE_FLOAT_FUNCTION(Cosh, std::cosh(x));
ONNXSERVE_FLOAT_FUNCTION(Asinh, std::asinh(x));
ONNXSERVE_FLOAT_FUNCTION(Acosh, std::acosh(x));
ONNXSERVE_FLOAT_FUNCTION(Atanh, std::atanh(x));
#undef ONNXSERVE_FLOAT_FUNCTION

struct IsNaNOp {
  template <typename T> static constexpr bool kAccepts = kIsFloat<T>;
  static constexpr bool kPredicate = true;
  template <typename C> bool operator()(C x) const { return std::isnan(x); }
};

// IsInf: which infinities count is set by detect_negative / detect_positive (both by default).
class IsInfOp {
 public:
  template <typename T> static constexpr bool kAccepts = kIsFloat<T>;
  static constexpr bool kPredicate = true;

  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t negative, info.Attr<int64_t>("detect_negative", 1));
    ASSIGN_OR_RETURN(const int64_t positive, info.Attr<int64_t>("detect_positive", 1));
    negative_ = negative != 0;
    positive_ = positive != 0;
    return absl::OkStatus();
  }
  template <typename C> bool operator()(C x) const {
    return (positive_ && x == std::numeric_limits<C>::infinity()) ||
           (negative_ && x == -std::numeric_limits<C>::infinity());
  }

 private:
  bool negative_ = true;
  bool positive_ = true;
};

// -1 had consumed_inputs, -6 dropped it and widened types, -13 added bfloat16.
REGISTER_KERNEL(kOnnx, "Abs", 1, 5, kNumericTypes, UnaryKernel<AbsOp>);
REGISTER_KERNEL(kOnnx, "Abs", 6, 12, kNumericTypes, UnaryKernel<AbsOp>);
REGISTER_KERNEL(kOnnx, "Abs", 13, kLatest, kNumericTypes, UnaryKernel<AbsOp>);
REGISTER_KERNEL(kOnnx, "Neg", 1, 5, kSignedTypes, UnaryKernel<NegOp>);
REGISTER_KERNEL(kOnnx, "Neg", 6, 12, kSignedTypes, UnaryKernel<NegOp>);
REGISTER_KERNEL(kOnnx, "Neg", 13, kLatest, kSignedTypes, UnaryKernel<NegOp>);
REGISTER_KERNEL(kOnnx, "Reciprocal", 1, 5, kFloatTypes, UnaryKernel<ReciprocalOp>);
REGISTER_KERNEL(kOnnx, "Reciprocal", 6, 12, kFloatTypes, UnaryKernel<ReciprocalOp>);
REGISTER_KERNEL(kOnnx, "Reciprocal", 13, kLatest, kFloatTypes, UnaryKernel<ReciprocalOp>);
REGISTER_KERNEL(kOnnx, "Floor", 1, 5, kFloatTypes, UnaryKernel<FloorOp>);
REGISTER_KERNEL(kOnnx, "Floor", 6, 12, kFloatTypes, UnaryKernel<FloorOp>);
REGISTER_KERNEL(kOnnx, "Floor", 13, kLatest, kFloatTypes, UnaryKernel<FloorOp>);
REGISTER_KERNEL(kOnnx, "Ceil", 1, 5, kFloatTypes, UnaryKernel<CeilOp>);
REGISTER_KERNEL(kOnnx, "Ceil", 6, 12, kFloatTypes, UnaryKernel<CeilOp>);
REGISTER_KERNEL(kOnnx, "Ceil", 13, kLatest, kFloatTypes, UnaryKernel<CeilOp>);
REGISTER_KERNEL(kOnnx, "Sqrt", 1, 5, kFloatTypes, UnaryKernel<SqrtOp>);
REGISTER_KERNEL(kOnnx, "Sqrt", 6, 12, kFloatTypes, UnaryKernel<SqrtOp>);
REGISTER_KERNEL(kOnnx, "Sqrt", 13, kLatest, kFloatTypes, UnaryKernel<SqrtOp>);
REGISTER_KERNEL(kOnnx, "Exp", 1, 5, kFloatTypes, UnaryKernel<ExpOp>);
REGISTER_KERNEL(kOnnx, "Exp", 6, 12, kFloatTypes, UnaryKernel<ExpOp>);
REGISTER_KERNEL(kOnnx, "Exp", 13, kLatest, kFloatTypes, UnaryKernel<ExpOp>);
REGISTER_KERNEL(kOnnx, "Log", 1, 5, kFloatTypes, UnaryKernel<LogOp>);
REGISTER_KERNEL(kOnnx, "Log", 6, 12, kFloatTypes, UnaryKernel<LogOp>);
REGISTER_KERNEL(kOnnx, "Log", 13, kLatest, kFloatTypes, UnaryKernel<LogOp>);
// Round-11, Sign-9, Erf-9, the trigonometric -7 and hyperbolic -9 ops; -13 or -22 widened the types.
REGISTER_KERNEL(kOnnx, "Round", 11, 21, kFloatTypes, UnaryKernel<RoundOp>);
REGISTER_KERNEL(kOnnx, "Round", 22, kLatest, kFloatTypes, UnaryKernel<RoundOp>);
REGISTER_KERNEL(kOnnx, "Sign", 9, 12, kNumericTypes, UnaryKernel<SignOp>);
REGISTER_KERNEL(kOnnx, "Sign", 13, kLatest, kNumericTypes, UnaryKernel<SignOp>);
REGISTER_KERNEL(kOnnx, "Erf", 9, 12, kNumericTypes, UnaryKernel<ErfOp>);
REGISTER_KERNEL(kOnnx, "Erf", 13, kLatest, kNumericTypes, UnaryKernel<ErfOp>);
REGISTER_KERNEL(kOnnx, "Sin", 7, 21, kFloatTypes, UnaryKernel<SinOp>);
REGISTER_KERNEL(kOnnx, "Sin", 22, kLatest, kFloatTypes, UnaryKernel<SinOp>);
REGISTER_KERNEL(kOnnx, "Cos", 7, 21, kFloatTypes, UnaryKernel<CosOp>);
REGISTER_KERNEL(kOnnx, "Cos", 22, kLatest, kFloatTypes, UnaryKernel<CosOp>);
REGISTER_KERNEL(kOnnx, "Tan", 7, 21, kFloatTypes, UnaryKernel<TanOp>);
REGISTER_KERNEL(kOnnx, "Tan", 22, kLatest, kFloatTypes, UnaryKernel<TanOp>);
REGISTER_KERNEL(kOnnx, "Asin", 7, 21, kFloatTypes, UnaryKernel<AsinOp>);
REGISTER_KERNEL(kOnnx, "Asin", 22, kLatest, kFloatTypes, UnaryKernel<AsinOp>);
REGISTER_KERNEL(kOnnx, "Acos", 7, 21, kFloatTypes, UnaryKernel<AcosOp>);
REGISTER_KERNEL(kOnnx, "Acos", 22, kLatest, kFloatTypes, UnaryKernel<AcosOp>);
REGISTER_KERNEL(kOnnx, "Atan", 7, 21, kFloatTypes, UnaryKernel<AtanOp>);
REGISTER_KERNEL(kOnnx, "Atan", 22, kLatest, kFloatTypes, UnaryKernel<AtanOp>);
REGISTER_KERNEL(kOnnx, "Sinh", 9, 21, kFloatTypes, UnaryKernel<SinhOp>);
REGISTER_KERNEL(kOnnx, "Sinh", 22, kLatest, kFloatTypes, UnaryKernel<SinhOp>);
REGISTER_KERNEL(kOnnx, "Cosh", 9, 21, kFloatTypes, UnaryKernel<CoshOp>);
REGISTER_KERNEL(kOnnx, "Cosh", 22, kLatest, kFloatTypes, UnaryKernel<CoshOp>);
REGISTER_KERNEL(kOnnx, "Asinh", 9, 21, kFloatTypes, UnaryKernel<AsinhOp>);
REGISTER_KERNEL(kOnnx, "Asinh", 22, kLatest, kFloatTypes, UnaryKernel<AsinhOp>);
REGISTER_KERNEL(kOnnx, "Acosh", 9, 21, kFloatTypes, UnaryKernel<AcoshOp>);
REGISTER_KERNEL(kOnnx, "Acosh", 22, kLatest, kFloatTypes, UnaryKernel<AcoshOp>);
REGISTER_KERNEL(kOnnx, "Atanh", 9, 21, kFloatTypes, UnaryKernel<AtanhOp>);
REGISTER_KERNEL(kOnnx, "Atanh", 22, kLatest, kFloatTypes, UnaryKernel<AtanhOp>);
// IsNaN-9, -13 (bfloat16), -20 (float8 types, which onnxserve does not load); IsInf-10, -20 likewise.
REGISTER_KERNEL(kOnnx, "IsNaN", 9, 12, kFloatTypes, UnaryKernel<IsNaNOp>);
REGISTER_KERNEL(kOnnx, "IsNaN", 13, 19, kFloatTypes, UnaryKernel<IsNaNOp>);
REGISTER_KERNEL(kOnnx, "IsNaN", 20, kLatest, kFloatTypes, UnaryKernel<IsNaNOp>);
REGISTER_KERNEL(kOnnx, "IsInf", 10, 19, kFloatTypes, UnaryKernel<IsInfOp>);
REGISTER_KERNEL(kOnnx, "IsInf", 20, kLatest, kFloatTypes, UnaryKernel<IsInfOp>);

}  // namespace
}  // namespace onnxserve
