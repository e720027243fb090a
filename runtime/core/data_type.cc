#include "runtime/core/data_type.h"

#include <bit>
#include <limits>

#include "absl/strings/str_cat.h"

namespace onnxserve {
namespace {

uint32_t FloatBits(float f) { return std::bit_cast<uint32_t>(f); }
float BitsFloat(uint32_t u) { return std::bit_cast<float>(u); }

}  // namespace

Float16::Float16(float f) {
  // Round-to-nearest-even conversion (the method of Fabian Giesen's float_to_half_fast3_rtne).
  uint32_t u = FloatBits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t out;
  if (u >= 0x47800000u) {  // Overflow, Inf or NaN.
    out = (u > 0x7f800000u) ? 0x7e00 : 0x7c00;
  } else if (u < 0x38800000u) {  // Subnormal half or zero: let the FPU round by adding a magic number.
    const float magic = BitsFloat(126u << 23);
    float g = BitsFloat(u) + magic;
    out = static_cast<uint16_t>(FloatBits(g) - FloatBits(magic));
  } else {
    const uint32_t mant_odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    u += mant_odd;
    out = static_cast<uint16_t>(u >> 13);
  }
  bits = static_cast<uint16_t>(out | (sign >> 16));
}

Float16::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
  // Subnormal or zero: mant * 2^-24.
  const float value = static_cast<float>(mant) * BitsFloat(0x33800000u);
  return sign ? -value : value;
}

BFloat16::BFloat16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // Keep NaN a quiet NaN.
    return;
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  bits = static_cast<uint16_t>(u >> 16);
}

namespace {

// What distinguishes the MiniFloat formats: field widths, exponent bias and how the special values are
// encoded (the tables of the Cast operator).
struct MiniFloatSpec {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  uint8_t max_finite;    // magnitude bits of the largest finite value
  uint8_t nan;           // NaN pattern (magnitude bits, or 0x80 for FNUZ)
  bool nan_keeps_sign;   // -NaN encodes as sign | nan
  bool signed_zero;      // false for FNUZ: 0x80 is NaN, not -0
  uint8_t overflow;      // what out-of-range values give without saturation (magnitude bits; 0 = saturate)
  bool overflow_keeps_sign;
};

constexpr MiniFloatSpec SpecOf(MiniFloatFormat format) {
  switch (format) {
    case MiniFloatFormat::kE4M3FN: return {4, 3, 7, 0x7e, 0x7f, true, true, 0x7f, true};
    case MiniFloatFormat::kE4M3FNUZ: return {4, 3, 8, 0x7f, 0x80, false, false, 0x80, false};
    case MiniFloatFormat::kE5M2: return {5, 2, 15, 0x7b, 0x7e, true, true, 0x7c, true};
    case MiniFloatFormat::kE5M2FNUZ: return {5, 2, 16, 0x7f, 0x80, false, false, 0x80, false};
    case MiniFloatFormat::kE2M1: return {2, 1, 1, 0x7, 0x8, false, true, 0, false};
  }
  return {};
}

// 2^k as a float, for k in the normal range [-126, 127].
constexpr float Pow2(int k) { return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23); }

// Magnitude bits of the finite, non-negative float with bits `a`, rounded to nearest even into a format with
// `m` mantissa bits and exponent `bias`. May exceed the format's largest finite value (the caller checks).
uint32_t RoundMagnitude(uint32_t a, int m, int bias) {
  const int float_exp = static_cast<int>(a >> 23);
  if (float_exp == 0) return 0;  // float zero or subnormal: far below any target's smallest subnormal
  const int target_exp = float_exp - 127 + bias;
  if (target_exp >= 1) {  // normal in the target: round the mantissa, a carry bumps the exponent
    const int shift = 23 - m;
    const uint32_t rounded = (a + (1u << (shift - 1)) - 1 + ((a >> shift) & 1u)) >> shift;
    return rounded - (static_cast<uint32_t>(127 - bias) << m);
  }
  // Subnormal in the target: the significand (with its implicit bit) in units of the smallest subnormal.
  const uint32_t significand = (a & 0x7fffffu) | 0x800000u;
  const int shift = 24 - m - target_exp;
  if (shift > 24) return 0;  // below half the smallest subnormal
  return (significand + (1u << (shift - 1)) - 1 + ((significand >> shift) & 1u)) >> shift;
}

}  // namespace

template <MiniFloatFormat Format>
uint8_t MiniFloatFromFloat(float f, bool saturate) {
  constexpr MiniFloatSpec spec = SpecOf(Format);
  constexpr uint8_t kSignBit = static_cast<uint8_t>(1u << (spec.exponent_bits + spec.mantissa_bits));
  const uint32_t u = FloatBits(f);
  const uint8_t sign = (u >> 31) ? kSignBit : 0;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint8_t>(spec.nan | (spec.nan_keeps_sign ? sign : 0));
  const uint32_t magnitude =
      a == 0x7f800000u ? spec.max_finite + 1u : RoundMagnitude(a, spec.mantissa_bits, spec.bias);
  if (magnitude > spec.max_finite) {
    if (saturate || spec.overflow == 0) return static_cast<uint8_t>(sign | spec.max_finite);
    return static_cast<uint8_t>(spec.overflow | (spec.overflow_keeps_sign ? sign : 0));
  }
  if (magnitude == 0 && !spec.signed_zero) return 0;
  return static_cast<uint8_t>(sign | magnitude);
}

template <MiniFloatFormat Format>
float MiniFloatToFloat(uint8_t bits) {
  constexpr MiniFloatSpec spec = SpecOf(Format);
  constexpr int kMagnitudeBits = spec.exponent_bits + spec.mantissa_bits;
  constexpr uint32_t kMantissaMask = (1u << spec.mantissa_bits) - 1;
  const bool negative = (bits >> kMagnitudeBits) & 1u;
  const uint32_t magnitude = bits & ((1u << kMagnitudeBits) - 1);
  if constexpr (!spec.signed_zero) {
    if (bits == 0x80) return std::numeric_limits<float>::quiet_NaN();
  }
  if constexpr (Format == MiniFloatFormat::kE4M3FN) {
    if (magnitude == 0x7f) return negative ? -std::numeric_limits<float>::quiet_NaN()
                                           : std::numeric_limits<float>::quiet_NaN();
  }
  if constexpr (Format == MiniFloatFormat::kE5M2) {
    if (magnitude >= 0x7c) {
      const float special = magnitude == 0x7c ? std::numeric_limits<float>::infinity()
                                              : std::numeric_limits<float>::quiet_NaN();
      return negative ? -special : special;
    }
  }
  const uint32_t exponent = magnitude >> spec.mantissa_bits;
  const uint32_t mantissa = magnitude & kMantissaMask;
  float value;
  if (exponent == 0) {
    value = static_cast<float>(mantissa) * Pow2(1 - spec.bias - spec.mantissa_bits);
  } else {
    value = BitsFloat(((exponent - spec.bias + 127) << 23) | (mantissa << (23 - spec.mantissa_bits)));
  }
  return negative ? -value : value;
}

#define ONNXSERVE_INSTANTIATE_MINIFLOAT(format)                             \
  template uint8_t MiniFloatFromFloat<MiniFloatFormat::format>(float, bool); \
  template float MiniFloatToFloat<MiniFloatFormat::format>(uint8_t);
ONNXSERVE_INSTANTIATE_MINIFLOAT(kE4M3FN)
ONNXSERVE_INSTANTIATE_MINIFLOAT(kE4M3FNUZ)
ONNXSERVE_INSTANTIATE_MINIFLOAT(kE5M2)
ONNXSERVE_INSTANTIATE_MINIFLOAT(kE5M2FNUZ)
ONNXSERVE_INSTANTIATE_MINIFLOAT(kE2M1)
#undef ONNXSERVE_INSTANTIATE_MINIFLOAT

Float8E8M0::Float8E8M0(float f, bool saturate, E8M0Rounding rounding) {
  const uint32_t a = FloatBits(f) & 0x7fffffffu;
  if (a > 0x7f800000u) {
    bits = 0xff;
    return;
  }
  if (a == 0x7f800000u) {
    bits = saturate ? 0xfe : 0xff;
    return;
  }
  // The float's biased exponent is already the E8M0 code (both use bias 127), except below 2^-126 where
  // floats are subnormal: there 2^-127 (code 0) is mantissa 0x400000 and 2^-126 is one past the mantissa.
  uint32_t exponent = a >> 23;
  uint32_t mantissa = a & 0x7fffffu;
  if (exponent == 0) {
    if (mantissa < 0x400000u) {  // below the smallest E8M0 value, zero included
      bits = saturate ? 0x00 : 0xff;
      return;
    }
    mantissa = (mantissa - 0x400000u) << 1;  // the fraction above 2^-127, in units of 2^-127
  }
  bool round_up = false;
  switch (rounding) {
    case E8M0Rounding::kUp: round_up = mantissa != 0; break;
    case E8M0Rounding::kDown: break;
    case E8M0Rounding::kNearest: round_up = mantissa >= 0x400000u; break;
  }
  exponent += round_up ? 1 : 0;
  bits = exponent < 0xff ? static_cast<uint8_t>(exponent) : (saturate ? 0xfe : 0xff);
}

Float8E8M0::operator float() const {
  if (bits == 0xff) return std::numeric_limits<float>::quiet_NaN();
  if (bits == 0) return BitsFloat(0x00400000u);  // 2^-127, a float subnormal
  return BitsFloat(static_cast<uint32_t>(bits) << 23);
}

int ElementsPerWireByte(DataType type) {
  switch (type) {
    case DataType::kInt4: case DataType::kUint4: case DataType::kFloat4E2M1: return 2;
    case DataType::kInt2: case DataType::kUint2: return 4;
    default: return 1;
  }
}

size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kFloat: case DataType::kInt32: case DataType::kUint32: return 4;
    case DataType::kDouble: case DataType::kInt64: case DataType::kUint64: return 8;
    case DataType::kFloat16: case DataType::kBFloat16: case DataType::kInt16: case DataType::kUint16:
      return 2;
    case DataType::kInt8: case DataType::kUint8: case DataType::kBool: return 1;
    // Low-precision types: one element per byte in memory, whatever their wire packing.
    case DataType::kFloat8E4M3FN: case DataType::kFloat8E4M3FNUZ: case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: case DataType::kFloat8E8M0: case DataType::kFloat4E2M1:
    case DataType::kInt4: case DataType::kUint4: case DataType::kInt2: case DataType::kUint2:
      return 1;
    default: return 0;
  }
}

bool IsSupported(DataType type) {
  return type == DataType::kString || ElementSize(type) != 0;
}

const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kUndefined: return "undefined";
    case DataType::kFloat: return "float";
    case DataType::kUint8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUint16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kDouble: return "double";
    case DataType::kUint32: return "uint32";
    case DataType::kUint64: return "uint64";
    case DataType::kComplex64: return "complex64";
    case DataType::kComplex128: return "complex128";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat8E4M3FN: return "float8e4m3fn";
    case DataType::kFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case DataType::kFloat8E5M2: return "float8e5m2";
    case DataType::kFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case DataType::kUint4: return "uint4";
    case DataType::kInt4: return "int4";
    case DataType::kFloat4E2M1: return "float4e2m1";
    case DataType::kFloat8E8M0: return "float8e8m0";
    case DataType::kUint2: return "uint2";
    case DataType::kInt2: return "int2";
  }
  return "unknown";
}

absl::StatusOr<DataType> DataTypeFromOnnx(int32_t onnx_type) {
  if (onnx_type < 0 || onnx_type > static_cast<int32_t>(DataType::kInt2)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown ONNX tensor element type ", onnx_type));
  }
  const auto type = static_cast<DataType>(onnx_type);
  if (type == DataType::kUndefined) {
    return absl::InvalidArgumentError("tensor element type is UNDEFINED");
  }
  if (!IsSupported(type)) {
    return absl::UnimplementedError(
        absl::StrCat("tensor element type ", DataTypeName(type), " is not supported by onnxserve"));
  }
  return type;
}

int64_t FirstNonBoolByte(const void* bytes, int64_t count) {
  const auto* byte = static_cast<const uint8_t*>(bytes);
  for (int64_t i = 0; i < count; ++i) {
    if (byte[i] > 1) return i;
  }
  return -1;
}

}  // namespace onnxserve
