// Binary arithmetic with broadcasting: Add Sub Mul Div Pow Mod. Before opset 7 the `broadcast`/`axis`
// attributes governed broadcasting (BinaryShapes in elementwise.h); from 7 on it is numpy's. Integer
// arithmetic wraps as two's complement; integer Div truncates toward zero; integer division or Mod by zero is
// an error rather than a crash.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

template <typename T>
absl::Status CheckNoZeroDivisor(const Tensor& divisor) {
  const auto values = divisor.values<T>();
  if (std::find(values.begin(), values.end(), T{0}) != values.end()) {
    return absl::InvalidArgumentError("integer division by zero: the divisor B holds a 0");
  }
  return absl::OkStatus();
}

template <typename C>
C WrappingNegate(C x) {
  return static_cast<C>(WrapType<C>{0} - static_cast<WrapType<C>>(x));
}

struct AddOp : NumberOp {
  static constexpr vec::BinaryOp kVectorOp = vec::BinaryOp::kAdd;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(static_cast<WrapType<C>>(a) + static_cast<WrapType<C>>(b));
  }
};

struct SubOp : NumberOp {
  static constexpr vec::BinaryOp kVectorOp = vec::BinaryOp::kSub;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(static_cast<WrapType<C>>(a) - static_cast<WrapType<C>>(b));
  }
};

struct MulOp : NumberOp {
  static constexpr vec::BinaryOp kVectorOp = vec::BinaryOp::kMul;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(static_cast<WrapType<C>>(a) * static_cast<WrapType<C>>(b));
  }
};

struct DivOp : NumberOp {
  static constexpr vec::BinaryOp kVectorOp = vec::BinaryOp::kDiv;
  template <typename T> absl::Status CheckInputs(const Tensor&, const Tensor& b) const {
    if constexpr (kIsInteger<T>) return CheckNoZeroDivisor<T>(b);
    return absl::OkStatus();
  }
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
      if (b == -1) return WrappingNegate(a);  // INT_MIN / -1 traps on x86.
    }
    return static_cast<C>(a / b);
  }
};

// Mod: with fmod=1 the remainder takes the dividend's sign (C fmod / %); with fmod=0 (integers only) it
// takes the divisor's, as Python's % does.
class ModOp : public NumberOp {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const int64_t fmod, info.Attr<int64_t>("fmod", 0));
    fmod_ = fmod != 0;
    return absl::OkStatus();
  }
  template <typename T> absl::Status CheckInputs(const Tensor&, const Tensor& b) const {
    if constexpr (kIsInteger<T>) {
      return CheckNoZeroDivisor<T>(b);
    } else if (!fmod_) {
      return absl::InvalidArgumentError(
          absl::StrCat("Mod of ", DataTypeName(kTypeOf<T>), " requires attribute fmod=1"));
    }
    return absl::OkStatus();
  }
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::fmod(a, b);
    } else if constexpr (std::is_unsigned_v<C>) {
      return static_cast<C>(a % b);
    } else {
      if (b == -1) return C{0};  // INT_MIN % -1 traps on x86.
      const C r = static_cast<C>(a % b);
      if (!fmod_ && r != 0 && ((r < 0) != (b < 0))) return static_cast<C>(r + b);
      return r;
    }
  }

 private:
  bool fmod_ = false;
};

// Integer powers by squaring, wrapping like repeated multiplication; a negative exponent truncates 1/b^-e.
template <typename B, typename E>
B IntegerPow(B base, E exponent) {
  if constexpr (std::is_signed_v<E>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if constexpr (std::is_signed_v<B>) {
        if (base == -1) return (exponent % 2 == 0) ? 1 : -1;
      }
      return 0;
    }
  }
  WrapType<B> result = 1;
  WrapType<B> factor = static_cast<WrapType<B>>(base);
  for (auto e = static_cast<std::make_unsigned_t<E>>(exponent); e != 0; e >>= 1) {
    if (e & 1) result *= factor;
    factor *= factor;
  }
  return static_cast<B>(result);
}

// Pow's exponent type may differ from the base's (from Pow-12); the result has the base's type, so an
// integer base with a float exponent truncates the float power like numpy's astype (saturating where that
// would overflow: 10^30 in int32, NaN of a negative base's fractional power becomes 0).
struct PowOp {
  template <typename B, typename E> B operator()(B base, E exponent) const {
    if constexpr (std::is_integral_v<B> && std::is_integral_v<E>) {
      return IntegerPow(base, exponent);
    } else if constexpr (std::is_integral_v<B>) {
      return FromReal<B>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    } else {
      return static_cast<B>(std::pow(base, static_cast<B>(exponent)));
    }
  }
};

// x * x for the common Pow(x, 2): std::pow is much slower, and glibc's pow(x, 2) is exact too.
struct SquareOp {
  template <typename B, typename E> B operator()(B base, E) const { return base * base; }
};

template <typename T>
inline constexpr bool kIsPowBase = kIsFloat<T> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

inline constexpr DataType kPowBaseTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                             DataType::kBFloat16, DataType::kInt32, DataType::kInt64};

class Pow final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) { return shapes_.Init(info); }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    const Tensor& x = *ctx.Input(0);
    const Tensor& y = *ctx.Input(1);
    Shape y_view;
    ASSIGN_OR_RETURN(Shape out_shape, shapes_.Resolve(x.shape(), y.shape(), &y_view));
    const Tensor exponent = y.Reshaped(y_view);
    const bool square = y.NumElements() == 1 && IsFloatingType(y.dtype()) && y.GetAsDouble(0) == 2.0;
    absl::Status status = UnsupportedTypeError(x.dtype());
    DispatchNumeric(x.dtype(), [&](auto base_tag) {
      using B = decltype(base_tag);
      if constexpr (kIsPowBase<B>) {
        status = absl::UnimplementedError(
            absl::StrCat("exponent type ", DataTypeName(y.dtype()), " is not supported"));
        DispatchNumeric(y.dtype(), [&](auto exponent_tag) {
          using E = decltype(exponent_tag);
          if constexpr (kIsNumber<E>) {
            Tensor& z = ctx.Output(0, x.dtype(), out_shape);
            status = absl::OkStatus();
            if constexpr (kIsFloat<B>) {
              if (square) return BroadcastBinary<B, E, B>(ctx.pool(), x, exponent, z, SquareOp{});
            }
            BroadcastBinary<B, E, B>(ctx.pool(), x, exponent, z, PowOp{});
          }
        });
      }
    });
    return status;
  }

 private:
  static bool IsFloatingType(DataType t) {
    return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
           t == DataType::kBFloat16;
  }

  BinaryShapes shapes_;
};

// -1 had broadcast/axis/consumed_inputs, -6 dropped consumed_inputs, -7 numpy broadcasting, -13 bfloat16,
// -14 8- and 16-bit integers.
REGISTER_KERNEL(kOnnx, "Add", 1, 5, kNumericTypes, BinaryKernel<AddOp>);
REGISTER_KERNEL(kOnnx, "Add", 6, 6, kNumericTypes, BinaryKernel<AddOp>);
REGISTER_KERNEL(kOnnx, "Add", 7, 12, kNumericTypes, BinaryKernel<AddOp>);
REGISTER_KERNEL(kOnnx, "Add", 13, 13, kNumericTypes, BinaryKernel<AddOp>);
REGISTER_KERNEL(kOnnx, "Add", 14, kLatest, kNumericTypes, BinaryKernel<AddOp>);
REGISTER_KERNEL(kOnnx, "Sub", 1, 5, kNumericTypes, BinaryKernel<SubOp>);
REGISTER_KERNEL(kOnnx, "Sub", 6, 6, kNumericTypes, BinaryKernel<SubOp>);
REGISTER_KERNEL(kOnnx, "Sub", 7, 12, kNumericTypes, BinaryKernel<SubOp>);
REGISTER_KERNEL(kOnnx, "Sub", 13, 13, kNumericTypes, BinaryKernel<SubOp>);
REGISTER_KERNEL(kOnnx, "Sub", 14, kLatest, kNumericTypes, BinaryKernel<SubOp>);
REGISTER_KERNEL(kOnnx, "Mul", 1, 5, kNumericTypes, BinaryKernel<MulOp>);
REGISTER_KERNEL(kOnnx, "Mul", 6, 6, kNumericTypes, BinaryKernel<MulOp>);
REGISTER_KERNEL(kOnnx, "Mul", 7, 12, kNumericTypes, BinaryKernel<MulOp>);
REGISTER_KERNEL(kOnnx, "Mul", 13, 13, kNumericTypes, BinaryKernel<MulOp>);
REGISTER_KERNEL(kOnnx, "Mul", 14, kLatest, kNumericTypes, BinaryKernel<MulOp>);
REGISTER_KERNEL(kOnnx, "Div", 1, 5, kNumericTypes, BinaryKernel<DivOp>);
REGISTER_KERNEL(kOnnx, "Div", 6, 6, kNumericTypes, BinaryKernel<DivOp>);
REGISTER_KERNEL(kOnnx, "Div", 7, 12, kNumericTypes, BinaryKernel<DivOp>);
REGISTER_KERNEL(kOnnx, "Div", 13, 13, kNumericTypes, BinaryKernel<DivOp>);
REGISTER_KERNEL(kOnnx, "Div", 14, kLatest, kNumericTypes, BinaryKernel<DivOp>);
// Pow-1 had broadcast/axis, -7 numpy broadcasting, -12 a separate exponent type, -13/-15 bfloat16.
REGISTER_KERNEL(kOnnx, "Pow", 1, 6, kPowBaseTypes, Pow);
REGISTER_KERNEL(kOnnx, "Pow", 7, 11, kPowBaseTypes, Pow);
REGISTER_KERNEL(kOnnx, "Pow", 12, 12, kPowBaseTypes, Pow);
REGISTER_KERNEL(kOnnx, "Pow", 13, 14, kPowBaseTypes, Pow);
REGISTER_KERNEL(kOnnx, "Pow", 15, kLatest, kPowBaseTypes, Pow);
// Mod-10, -13 bfloat16.
REGISTER_KERNEL(kOnnx, "Mod", 10, 12, kNumericTypes, BinaryKernel<ModOp>);
REGISTER_KERNEL(kOnnx, "Mod", 13, kLatest, kNumericTypes, BinaryKernel<ModOp>);

}  // namespace
}  // namespace onnxserve
