// ONNX tensor element types: the enum mirrors onnx.TensorProto.DataType so values cross the wire unchanged.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

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

// The low-precision formats below are storage types: ONE ELEMENT PER BYTE in memory (the packed wire format
// of the 4- and 2-bit types is unpacked by TensorFromProto and packed again by TensorToProto). They convert
// to and from float as Cast defines; no arithmetic kernel takes them (DispatchNumeric leaves them out).

// The 8- and 4-bit float formats of the ONNX spec (Cast "Float 8" tables, float4e2m1 from Cast-23).
enum class MiniFloatFormat { kE4M3FN, kE4M3FNUZ, kE5M2, kE5M2FNUZ, kE2M1 };

// Bit pattern of `f` in `Format`, rounded to nearest even. Out-of-range values and infinities become the
// largest finite value when `saturate`, else infinity (E5M2) or NaN (the others). E2M1 has neither, so it
// always saturates, and NaN maps to 0x8 as the ONNX reference does. FNUZ formats have no negative zero.
template <MiniFloatFormat Format>
uint8_t MiniFloatFromFloat(float f, bool saturate);
template <MiniFloatFormat Format>
float MiniFloatToFloat(uint8_t bits);

template <MiniFloatFormat Format>
struct MiniFloat {
  uint8_t bits = 0;
  MiniFloat() = default;
  explicit MiniFloat(float f, bool saturate = true) : bits(MiniFloatFromFloat<Format>(f, saturate)) {}
  explicit operator float() const { return MiniFloatToFloat<Format>(bits); }
  static MiniFloat FromBits(uint8_t b) { MiniFloat m; m.bits = b; return m; }
  uint8_t ToBits() const { return bits; }
  // Bitwise: two NaNs with the same pattern are equal (what tests of conversions want).
  friend bool operator==(MiniFloat a, MiniFloat b) { return a.bits == b.bits; }
};
using Float8E4M3FN = MiniFloat<MiniFloatFormat::kE4M3FN>;
using Float8E4M3FNUZ = MiniFloat<MiniFloatFormat::kE4M3FNUZ>;
using Float8E5M2 = MiniFloat<MiniFloatFormat::kE5M2>;
using Float8E5M2FNUZ = MiniFloat<MiniFloatFormat::kE5M2FNUZ>;
using Float4E2M1 = MiniFloat<MiniFloatFormat::kE2M1>;

// Cast's `round_mode` for float8e8m0: `up` (away from zero, the default), `down` (towards zero) or
// `nearest` (ties up).
enum class E8M0Rounding { kUp, kDown, kNearest };

// float8e8m0: an unsigned power of two 2^(bits - 127); 0xFF is NaN, there is no zero.
struct Float8E8M0 {
  uint8_t bits = 0;
  Float8E8M0() = default;
  // Negative inputs are unspecified by the spec: their magnitude is converted. Below 2^-127 (zero included)
  // gives 2^-127 when `saturate`, else NaN; above 2^127 gives 2^127 when `saturate`, else NaN.
  explicit Float8E8M0(float f, bool saturate = true, E8M0Rounding rounding = E8M0Rounding::kUp);
  explicit operator float() const;
  static Float8E8M0 FromBits(uint8_t b) { Float8E8M0 m; m.bits = b; return m; }
  uint8_t ToBits() const { return bits; }
  friend bool operator==(Float8E8M0 a, Float8E8M0 b) { return a.bits == b.bits; }
};

// int4, uint4, int2, uint2: the value itself, sign-extended for the signed types.
template <int kBits, bool kSigned>
struct SubByteInt {
  using Value = std::conditional_t<kSigned, int8_t, uint8_t>;
  static constexpr int kMin = kSigned ? -(1 << (kBits - 1)) : 0;
  static constexpr int kMax = kSigned ? (1 << (kBits - 1)) - 1 : (1 << kBits) - 1;
  static constexpr uint8_t kMask = (1u << kBits) - 1;

  Value value = 0;
  SubByteInt() = default;
  // Keeps the low kBits bits of v, as integer narrowing does (two's complement).
  explicit SubByteInt(int64_t v) { *this = FromBits(static_cast<uint8_t>(v)); }
  explicit operator int32_t() const { return value; }
  uint8_t ToBits() const { return static_cast<uint8_t>(value) & kMask; }
  static SubByteInt FromBits(uint8_t b) {
    SubByteInt i;
    b &= kMask;
    // Sign-extend: subtract 2^kBits when the top bit is set.
    i.value = static_cast<Value>(kSigned && (b >> (kBits - 1)) ? b - (1 << kBits) : b);
    return i;
  }
  friend bool operator==(SubByteInt a, SubByteInt b) { return a.value == b.value; }
};
using Int4 = SubByteInt<4, true>;
using UInt4 = SubByteInt<4, false>;
using Int2 = SubByteInt<2, true>;
using UInt2 = SubByteInt<2, false>;

// Bytes per element; 0 for kString (elements are std::string objects) and for unsupported types.
size_t ElementSize(DataType type);

// True for the types onnxserve stores (complex types are not).
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

template <> struct TypeOf<Float8E4M3FN> { static constexpr DataType value = DataType::kFloat8E4M3FN; };
template <> struct TypeOf<Float8E4M3FNUZ> { static constexpr DataType value = DataType::kFloat8E4M3FNUZ; };
template <> struct TypeOf<Float8E5M2> { static constexpr DataType value = DataType::kFloat8E5M2; };
template <> struct TypeOf<Float8E5M2FNUZ> { static constexpr DataType value = DataType::kFloat8E5M2FNUZ; };
template <> struct TypeOf<Float8E8M0> { static constexpr DataType value = DataType::kFloat8E8M0; };
template <> struct TypeOf<Float4E2M1> { static constexpr DataType value = DataType::kFloat4E2M1; };
template <> struct TypeOf<Int4> { static constexpr DataType value = DataType::kInt4; };
template <> struct TypeOf<UInt4> { static constexpr DataType value = DataType::kUint4; };
template <> struct TypeOf<Int2> { static constexpr DataType value = DataType::kInt2; };
template <> struct TypeOf<UInt2> { static constexpr DataType value = DataType::kUint2; };

template <typename T> inline constexpr DataType kTypeOf = TypeOf<T>::value;

// Calls fn(T{}) with T the C++ type of a low-precision `type` (float8, float4, 4- and 2-bit integers).
// Returns false for every other type. Kept apart from DispatchNumeric so these types never reach
// arithmetic kernels by accident.
template <typename Fn>
bool DispatchLowPrecision(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat8E4M3FN: fn(Float8E4M3FN{}); return true;
    case DataType::kFloat8E4M3FNUZ: fn(Float8E4M3FNUZ{}); return true;
    case DataType::kFloat8E5M2: fn(Float8E5M2{}); return true;
    case DataType::kFloat8E5M2FNUZ: fn(Float8E5M2FNUZ{}); return true;
    case DataType::kFloat8E8M0: fn(Float8E8M0{}); return true;
    case DataType::kFloat4E2M1: fn(Float4E2M1{}); return true;
    case DataType::kInt4: fn(Int4{}); return true;
    case DataType::kUint4: fn(UInt4{}); return true;
    case DataType::kInt2: fn(Int2{}); return true;
    case DataType::kUint2: fn(UInt2{}); return true;
    default: return false;
  }
}

inline bool IsLowPrecision(DataType type) { return DispatchLowPrecision(type, [](auto) {}); }

// Compile-time counterparts: the low-precision float formats (which convert through float) and the
// sub-byte integers (which convert through int32).
template <typename T> inline constexpr bool kIsLowPrecisionFloat = false;
template <MiniFloatFormat F> inline constexpr bool kIsLowPrecisionFloat<MiniFloat<F>> = true;
template <> inline constexpr bool kIsLowPrecisionFloat<Float8E8M0> = true;
template <typename T> inline constexpr bool kIsSubByteInt = false;
template <int kBits, bool kSigned> inline constexpr bool kIsSubByteInt<SubByteInt<kBits, kSigned>> = true;
template <typename T> inline constexpr bool kIsLowPrecision = kIsLowPrecisionFloat<T> || kIsSubByteInt<T>;

// Elements per byte in the ONNX wire format (raw_data and int32_data): 2 for the 4-bit types, 4 for the
// 2-bit types, else 1.
int ElementsPerWireByte(DataType type);

// The index of the first of `count` bytes that is no BOOL element (only 0 and 1 are), or -1 when all are:
// any other byte read as a bool is undefined behaviour (Not of 2 answered 3).
int64_t FirstNonBoolByte(const void* bytes, int64_t count);

}  // namespace onnxserve
