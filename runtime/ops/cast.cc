// Cast and CastLike between every element type onnxserve stores: the numeric types, bool, float16,
// bfloat16 and string. float8, 4-bit, 2-bit and float4 types are refused with UNIMPLEMENTED (naming the
// type) when the model loads, never reinterpreted; the `saturate` and `round_mode` attributes only concern
// those types.
//
// Numeric rules (Cast-25): float to float goes to +/-inf when out of range; integer to integer keeps the low
// bits (two's complement); anything to bool is "nonzero". Float to integer out of range is undefined in the
// spec; here it saturates (NaN gives 0) rather than invoking C++ undefined behaviour.
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

template <typename From, typename To>
absl::Status CastElements(ThreadPool& pool, const From* in, To* out, int64_t n) {
  if constexpr (std::is_same_v<From, std::string>) {
    for (int64_t i = 0; i < n; ++i) {
      if (!ParseNumber(in[i], &out[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot cast string \"", in[i], "\" to ", DataTypeName(kTypeOf<To>)));
      }
    }
  } else if constexpr (std::is_same_v<To, std::string>) {
    ParallelRange(pool, n, kElementwiseGrain / 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = NumberToString(ToCompute(in[i]));
    });
  } else {
    MapUnary(pool, in, out, n, [](ComputeType<From> v) { return ConvertNumber<To>(v); });
  }
  return absl::OkStatus();
}

// Casts `in` to `to`, sharing storage when the type already matches.
absl::Status CastTo(KernelContext& ctx, const Tensor& in, DataType to) {
  if (in.dtype() == to) {
    ctx.SetOutput(0, in);
    return absl::OkStatus();
  }
  absl::Status status = absl::UnimplementedError(
      absl::StrCat("cannot cast from ", DataTypeName(in.dtype()), " to ", DataTypeName(to)));
  DispatchAny(in.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    DispatchAny(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      if constexpr (!std::is_same_v<From, To>) {
        Tensor& out = ctx.Output(0, to, in.shape());
        status = CastElements(ctx.pool(), in.data<From>(), out.data<To>(), in.NumElements());
      }
    });
  });
  return status;
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
    const onnx::AttributeProto* to = info.FindAttr("to");
    if (to == nullptr) return absl::InvalidArgumentError("missing required attribute \"to\"");
    // Cast-1 names the type as a string ("FLOAT"); later versions give the enum value.
    int64_t onnx_type = to->i();
    if (to->type() == onnx::AttributeProto::STRING) {
      onnx::TensorProto_DataType parsed;
      if (!onnx::TensorProto_DataType_Parse(absl::AsciiStrToUpper(to->s()), &parsed)) {
        return absl::InvalidArgumentError(absl::StrCat("attribute to names no data type: \"", to->s(), "\""));
      }
      onnx_type = parsed;
    }
    ASSIGN_OR_RETURN(to_, TargetType(onnx_type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 1));
    return CastTo(ctx, *ctx.Input(0), to_);
  }

 private:
  DataType to_ = DataType::kUndefined;
};

// CastLike(input, target_type): Cast to the element type of the second input.
class CastLike final : public OpKernel {
 public:
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(RequireInputs(ctx, 2));
    return CastTo(ctx, *ctx.Input(0), ctx.Input(1)->dtype());
  }
};

// Cast-1 `to` is a string, -6 an enum, -9 adds string casts, -13 bfloat16, -19 float8 + saturate, -21
// int4/uint4, -23 float4e2m1, -24 float8e8m0 + round_mode, -25 int2/uint2. CastLike follows from -15.
REGISTER_KERNEL(kOnnx, "Cast", 1, 5, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 6, 8, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 9, 12, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 13, 18, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 19, 20, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 21, 22, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 23, 23, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 24, 24, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "Cast", 25, kLatest, kAllTypes, Cast);
REGISTER_KERNEL(kOnnx, "CastLike", 15, 18, kAllTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 19, 20, kAllTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 21, 22, kAllTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 23, 23, kAllTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 24, 24, kAllTypes, CastLike);
REGISTER_KERNEL(kOnnx, "CastLike", 25, kLatest, kAllTypes, CastLike);

}  // namespace
}  // namespace onnxserve
