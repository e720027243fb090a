#include "runtime/core/data_type.h"

#include <bit>

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

size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kFloat: case DataType::kInt32: case DataType::kUint32: return 4;
    case DataType::kDouble: case DataType::kInt64: case DataType::kUint64: return 8;
    case DataType::kFloat16: case DataType::kBFloat16: case DataType::kInt16: case DataType::kUint16:
      return 2;
    case DataType::kInt8: case DataType::kUint8: case DataType::kBool: return 1;
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

}  // namespace onnxserve
