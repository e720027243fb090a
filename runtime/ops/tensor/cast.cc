// Cast and CastLike between every element type onnxserve stores: the numeric types, bool, float16,
// bfloat16, string, and the low-precision storage types (float8 x5, float4e2m1, int4/uint4, int2/uint2).
//
// Numeric rules (Cast-25): float to float goes to +/-inf when out of range; integer to integer keeps the low
// bits (two's complement); anything to bool is "nonzero". Float to integer out of range is undefined in the
// spec; here it saturates (NaN gives 0) rather than invoking C++ undefined behaviour.
//
// Low-precision types convert through a wide value: float for the float formats, int32 for the sub-byte
// integers. Into a float format, the value is rounded to nearest even with the `saturate` (Cast-19) and
// `round_mode` (float8e8m0, Cast-24) rules of the spec tables. Into a sub-byte integer, the value becomes an
// int64 (floats truncated, saturating) whose low bits are kept, as for other integer narrowing and as the
// ONNX reference (ml_dtypes) does: 8.0 to int4 gives -8.
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "runtime/ops/elementwise.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <typename To, typename F>
To SaturatingFloatToInt(F v) {
  if (std::isnan(v)) return To{0};
  constexpr F kLow = static_cast<F>(std::numeric_limits<To>::lowest());
  constexpr F kHigh = static_cast<F>(std::numeric_limits<To>::max());  // rounds up to a power of two
  if (v <= kLow) return std::numeric_limits<To>::lowest();
  if (v >= kHigh) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

// One numeric value (bool included); half types arrive as float (ComputeType).
template <typename To, typename From>
To ConvertNumber(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{0};
  } else if constexpr (kIsHalf<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return SaturatingFloatToInt<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Shortest text that reads back to the same value; "NaN", "INF", "-INF" as the spec spells them.
template <typename C>
std::string NumberToString(C v) {
  if constexpr (std::is_same_v<C, bool>) {
    return v ? "1" : "0";
  } else {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(v)) return "NaN";
      if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
    }
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
    return std::string(buffer, result.ptr);
  }
}

// Parses a whole string as F (float or double), accepting a leading '+' and the case-insensitive literals
// INF, +INF, -INF and NaN.
template <typename F>
bool ParseFloat(absl::string_view s, F* out) {
  bool negative = false;
  absl::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (absl::EqualsIgnoreCase(body, "inf") || absl::EqualsIgnoreCase(body, "infinity")) {
    *out = negative ? -std::numeric_limits<F>::infinity() : std::numeric_limits<F>::infinity();
    return true;
  }
  if (absl::EqualsIgnoreCase(body, "nan")) {
    *out = std::numeric_limits<F>::quiet_NaN();
    return true;
  }
  if (body.empty() || body[0] == '+' || body[0] == '-') return false;
  F value;
  const auto [end, error] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (error != std::errc() || end != body.data() + body.size()) return false;
  *out = negative ? -value : value;
  return true;
}

// Parses one string as To. Integers also accept a float literal ("100.5" gives 100, as the spec allows);
// bool accepts "true"/"false" or a number.
template <typename To>
bool ParseNumber(const std::string& s, To* out) {
  if constexpr (std::is_same_v<To, bool>) {
    if (absl::EqualsIgnoreCase(s, "true") || absl::EqualsIgnoreCase(s, "false")) {
      *out = absl::EqualsIgnoreCase(s, "true");
      return true;
    }
    double value;
    if (!ParseFloat(s, &value)) return false;
    *out = value != 0;
    return true;
  } else if constexpr (std::is_integral_v<To>) {
    const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
    const auto [end, error] = std::from_chars(begin, s.data() + s.size(), *out);
    if (error == std::errc() && end == s.data() + s.size()) return true;
    double value;
    if (!ParseFloat(s, &value)) return false;
    *out = SaturatingFloatToInt<To>(value);
    return true;
  } else {
    ComputeType<To> value;
    if (!ParseFloat(s, &value)) return false;
    *out = static_cast<To>(value);
    return true;
  }
}

// The attributes that only matter when the target is a float8 type.
struct LowPrecisionOptions {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::kUp;
};

// The value a low-precision type converts through (identity for the other types).
template <typename T>
auto Widen(T v) {
  if constexpr (kIsLowPrecisionFloat<T>) {
    return static_cast<float>(v);
  } else if constexpr (kIsSubByteInt<T>) {
    return static_cast<int32_t>(v);
  } else {
    return v;
  }
}
template <typename T>
using WideType = decltype(Widen(T{}));

// One number (float, double, integer or bool) into a low-precision type.
template <typename To, typename C>
To Narrow(C v, const LowPrecisionOptions& options) {
  if constexpr (std::is_same_v<To, Float8E8M0>) {
    return To(static_cast<float>(v), options.saturate, options.rounding);
  } else if constexpr (kIsLowPrecisionFloat<To>) {
    return To(static_cast<float>(v), options.saturate);
  } else if constexpr (std::is_floating_point_v<C>) {
    return To(SaturatingFloatToInt<int64_t>(v));
  } else {
    return To(static_cast<int64_t>(v));
  }
}

// One element between any two castable types; half types arrive as float (ComputeType).
template <typename To, typename From>
To ConvertValue(From v, const LowPrecisionOptions& options) {
  if constexpr (kIsLowPrecision<From>) {
    return ConvertValue<To>(Widen(v), options);
  } else if constexpr (kIsLowPrecision<To>) {
    return Narrow<To>(v, options);
  } else {
    return ConvertNumber<To>(v);
  }
}

template <typename To>
bool ParseValue(const std::string& s, const LowPrecisionOptions& options, To* out) {
  if constexpr (kIsLowPrecision<To>) {
    WideType<To> wide;
    if (!ParseNumber(s, &wide)) return false;
    *out = Narrow<To>(wide, options);
    return true;
  } else {
    return ParseNumber(s, out);
  }
}

template <typename From, typename To>
absl::Status CastElements(ThreadPool& pool, const From* in, To* out, int64_t n,
                          const LowPrecisionOptions& options) {
  if constexpr (std::is_same_v<From, std::string>) {
    for (int64_t i = 0; i < n; ++i) {
      if (!ParseValue(in[i], options, &out[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot cast string \"", in[i], "\" to ", DataTypeName(kTypeOf<To>)));
      }
    }
  } else if constexpr (std::is_same_v<To, std::string>) {
    ParallelRange(pool, n, kElementwiseGrain / 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = NumberToString(Widen(ToCompute(in[i])));
    });
  } else {
    MapUnary(pool, in, out, n, [&](ComputeType<From> v) { return ConvertValue<To>(v, options); });
  }
  return absl::OkStatus();
}

// DispatchAny plus the low-precision types: everything Cast converts.
template <typename Fn>
bool DispatchCastable(DataType type, Fn&& fn) {
  return DispatchAny(type, fn) || DispatchLowPrecision(type, fn);
}

// Casts `in` to `to`, sharing storage when the type already matches.
absl::Status CastTo(KernelContext& ctx, const Tensor& in, DataType to, const LowPrecisionOptions& options) {
  if (in.dtype() == to) {
    ctx.SetOutput(0, in);
    return absl::OkStatus();
  }
  absl::Status status = absl::UnimplementedError(
      absl::StrCat("cannot cast from ", DataTypeName(in.dtype()), " to ", DataTypeName(to)));
  DispatchCastable(in.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    DispatchCastable(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      if constexpr (!std::is_same_v<From, To>) {
        Tensor& out = ctx.Output(0, to, in.shape());
        status = CastElements(ctx.pool(), in.data<From>(), out.data<To>(), in.NumElements(), options);
      }
    });
  });
  return status;
}

// `saturate` (from version 19) and `round_mode` (from 24); absent attributes keep the defaults.
absl::StatusOr<LowPrecisionOptions> ParseLowPrecisionOptions(const KernelInfo& info) {
  LowPrecisionOptions options;
  ASSIGN_OR_RETURN(const int64_t saturate, info.Attr<int64_t>("saturate", 1));
  options.saturate = saturate != 0;
  ASSIGN_OR_RETURN(const std::string round_mode, info.Attr<std::string>("round_mode", "up"));
  if (round_mode == "up") {
    options.rounding = E8M0Rounding::kUp;
  } else if (round_mode == "down") {
    options.rounding = E8M0Rounding::kDown;
  } else if (round_mode == "nearest") {
    options.rounding = E8M0Rounding::kNearest;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute round_mode: expected \"up\", \"down\" or \"nearest\", got \"", round_mode, "\""));
  }
  return options;
}

// A target type onnxserve can hold, or UNIMPLEMENTED naming it.
absl::StatusOr<DataType> TargetType(int64_t onnx_type) {
  absl::StatusOr<DataType> type = DataTypeFromOnnx(static_cast<int32_t>(onnx_type));
  if (!type.ok()) {
    return absl::Status(type.status().code(), absl::StrCat("attribute to: ", type.status().message()));
  }
  return type;
}

class Cast final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    const ir::Attribute* to = info.FindAttr("to");
    if (to == nullptr) return absl::InvalidArgumentError("missing required attribute \"to\"");
    // Cast-1 names the type as a string ("FLOAT"); later versions give the enum value.
    int64_t onnx_type = to->i;
    if (to->type == ir::AttributeType::kString) {
      onnx::TensorProto_DataType parsed;
      if (!onnx::TensorProto_DataType_Parse(absl::AsciiStrToUpper(to->s), &parsed)) {
        return absl::InvalidArgumentError(absl::StrCat("attribute to names no data type: \"", to->s, "\""));
      }
      onnx_type = parsed;
    }
    ASSIGN_OR_RETURN(to_, TargetType(onnx_type));
    ASSIGN_OR_RETURN(options_, ParseLowPrecisionOptions(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    return CastTo(ctx, *ctx.Input(0), to_, options_);
  }

 private:
  DataType to_ = DataType::kUndefined;
  LowPrecisionOptions options_;
};

// CastLike(input, target_type): Cast to the element type of the second input.
class CastLike final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(options_, ParseLowPrecisionOptions(info));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    return CastTo(ctx, *ctx.Input(0), ctx.Input(1)->dtype(), options_);
  }

 private:
  LowPrecisionOptions options_;
};

// Every type Cast takes: kAllTypes and the low-precision storage types.
constexpr DataType kCastTypes[] = {
    DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
    DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUint8, DataType::kUint16,
    DataType::kUint32, DataType::kUint64, DataType::kBool, DataType::kString, DataType::kFloat8E4M3FN,
    DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ, DataType::kFloat8E8M0,
    DataType::kFloat4E2M1, DataType::kInt4, DataType::kUint4, DataType::kInt2, DataType::kUint2};

// Cast-1 `to` is a string, -6 an enum, -9 adds string casts, -13 bfloat16, -19 float8 + saturate, -21
// int4/uint4, -23 float4e2m1, -24 float8e8m0 + round_mode, -25 int2/uint2. CastLike follows from -15.
REGISTER_KERNEL(kOnnx, "Cast", 1, 5, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 6, 8, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 9, 12, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 13, 18, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 19, 20, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 21, 22, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 23, 23, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 24, 24, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 25, kLatest, kCastTypes, Cast);
REGISTER_KERNEL(kOnnx, "CastLike", 15, 18, kCastTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 19, 20, kCastTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 21, 22, kCastTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 23, 23, kCastTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 24, 24, kCastTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 25, kLatest, kCastTypes, CastLike);

}  // namespace
}  // namespace onnxserve
