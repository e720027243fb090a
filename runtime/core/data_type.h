// ONNX tensor element types: the enum mirrors onnx.TensorProto.DataType so values cross the wire unchanged.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace onnxserve {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
};

// IEEE 754 half precision, stored as its bit pattern.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f);
  explicit operator float() const;
  static Float16 FromBits(uint16_t b) { Float16 h; h.bits = b; return h; }
  friend bool operator==(Float16 a, Float16 b) { return static_cast<float>(a) == static_cast<float>(b); }
};

// bfloat16: the upper half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  explicit operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static BFloat16 FromBits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
  friend bool operator==(BFloat16 a, BFloat16 b) { return static_cast<float>(a) == static_cast<float>(b); }
};

// Bytes per element; 0 for kString (elements are std::string objects) and for unsupported types.
size_t ElementSize(DataType type);

// True for the types onnxserve stores and computes with (float8, 4-bit, 2-bit and complex are not).
bool IsSupported(DataType type);

// "float", "int64", "bfloat16", ... as the ONNX spec spells them (tensor(float) without the wrapper).
const char* DataTypeName(DataType type);

// Maps an onnx.TensorProto.DataType number to a supported DataType, or explains why it is not supported.
absl::StatusOr<DataType> DataTypeFromOnnx(int32_t onnx_type);

template <typename T> struct TypeOf;
template <> struct TypeOf<float> { static constexpr DataType value = DataType::kFloat; };
template <> struct TypeOf<double> { static constexpr DataType value = DataType::kDouble; };
template <> struct TypeOf<Float16> { static constexpr DataType value = DataType::kFloat16; };
template <> struct TypeOf<BFloat16> { static constexpr DataType value = DataType::kBFloat16; };
template <> struct TypeOf<int8_t> { static constexpr DataType value = DataType::kInt8; };
template <> struct TypeOf<int16_t> { static constexpr DataType value = DataType::kInt16; };
template <> struct TypeOf<int32_t> { static constexpr DataType value = DataType::kInt32; };
template <> struct TypeOf<int64_t> { static constexpr DataType value = DataType::kInt64; };
template <> struct TypeOf<uint8_t> { static constexpr DataType value = DataType::kUint8; };
template <> struct TypeOf<uint16_t> { static constexpr DataType value = DataType::kUint16; };
template <> struct TypeOf<uint32_t> { static constexpr DataType value = DataType::kUint32; };
template <> struct TypeOf<uint64_t> { static constexpr DataType value = DataType::kUint64; };
template <> struct TypeOf<bool> { static constexpr DataType value = DataType::kBool; };
template <> struct TypeOf<std::string> { static constexpr DataType value = DataType::kString; };

template <typename T> inline constexpr DataType kTypeOf = TypeOf<T>::value;

}  // namespace onnxserve
