// The low-precision storage types (data_type.h): float <-> float8/float4/e8m0 at the edges of each format as
// the Cast tables define them, sub-byte integer wrapping, and the packed wire format of tensor_proto.cc.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/data_type.h"
#include "runtime/core/tensor.h"
#include "runtime/model/tensor_proto.h"

namespace onnxserve {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

template <typename T>
uint8_t Bits(float f, bool saturate = true) {
  return T(f, saturate).bits;
}

template <typename T>
float Value(uint8_t bits) {
  return static_cast<float>(T::FromBits(bits));
}

TEST(Float8E4M3FNTest, EdgesOfTheRange) {
  EXPECT_EQ(Bits<Float8E4M3FN>(448), 0x7e);           // largest finite
  EXPECT_EQ(Bits<Float8E4M3FN>(464), 0x7e);           // tie between 448 and 480 (NaN code): even wins
  EXPECT_EQ(Bits<Float8E4M3FN>(1e6f), 0x7e);          // saturates
  EXPECT_EQ(Bits<Float8E4M3FN>(-kInf), 0xfe);         // -FLT_MAX
  EXPECT_EQ(Bits<Float8E4M3FN>(1e6f, false), 0x7f);   // NaN without saturation
  EXPECT_EQ(Bits<Float8E4M3FN>(-kInf, false), 0xff);  // -NaN
  EXPECT_EQ(Bits<Float8E4M3FN>(kNaN), 0x7f);
  EXPECT_EQ(Bits<Float8E4M3FN>(std::ldexp(1.0f, -9)), 0x01);   // smallest subnormal
  EXPECT_EQ(Bits<Float8E4M3FN>(std::ldexp(1.0f, -10)), 0x00);  // half of it: ties to even zero
  EXPECT_EQ(Bits<Float8E4M3FN>(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(Bits<Float8E4M3FN>(-std::ldexp(1.0f, -10)), 0x80);  // keeps the sign: -0
  // 0.484375 is midway between 0.46875 (0x2f, odd mantissa) and 0.5 (0x30): even wins.
  EXPECT_EQ(Bits<Float8E4M3FN>(0.484375f), 0x30);
}

TEST(Float8E4M3FNTest, DecodesEveryClass) {
  EXPECT_EQ(Value<Float8E4M3FN>(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(Value<Float8E4M3FN>(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(Value<Float8E4M3FN>(0x7e), 448);
  EXPECT_EQ(Value<Float8E4M3FN>(0xfe), -448);
  EXPECT_TRUE(std::signbit(Value<Float8E4M3FN>(0x80)));
  EXPECT_TRUE(std::isnan(Value<Float8E4M3FN>(0x7f)));
  EXPECT_TRUE(std::isnan(Value<Float8E4M3FN>(0xff)));
}

TEST(Float8E4M3FNUZTest, NoNegativeZeroNoInfinity) {
  EXPECT_EQ(Bits<Float8E4M3FNUZ>(240), 0x7f);  // largest finite
  EXPECT_EQ(Bits<Float8E4M3FNUZ>(kInf), 0x7f);
  EXPECT_EQ(Bits<Float8E4M3FNUZ>(kInf, false), 0x80);
  EXPECT_EQ(Bits<Float8E4M3FNUZ>(-1e6f, false), 0x80);
  EXPECT_EQ(Bits<Float8E4M3FNUZ>(kNaN), 0x80);
  EXPECT_EQ(Bits<Float8E4M3FNUZ>(-0.0f), 0x00);
  EXPECT_EQ(Bits<Float8E4M3FNUZ>(-1e-7f), 0x00);
  EXPECT_EQ(Bits<Float8E4M3FNUZ>(std::ldexp(1.0f, -10)), 0x01);  // smallest subnormal (bias 8)
  EXPECT_EQ(Value<Float8E4M3FNUZ>(0x7f), 240);
  EXPECT_TRUE(std::isnan(Value<Float8E4M3FNUZ>(0x80)));
}

TEST(Float8E5M2Test, InfinityOnlyWithoutSaturation) {
  EXPECT_EQ(Bits<Float8E5M2>(57344), 0x7b);  // largest finite
  EXPECT_EQ(Bits<Float8E5M2>(61440), 0x7b);  // tie with the infinity code rounds up, then saturates
  EXPECT_EQ(Bits<Float8E5M2>(61440, false), 0x7c);
  EXPECT_EQ(Bits<Float8E5M2>(kInf), 0x7b);
  EXPECT_EQ(Bits<Float8E5M2>(-kInf, false), 0xfc);
  EXPECT_EQ(Bits<Float8E5M2>(kNaN), 0x7e);
  EXPECT_EQ(Bits<Float8E5M2>(std::ldexp(1.0f, -16)), 0x01);  // smallest subnormal
  EXPECT_EQ(Value<Float8E5M2>(0x7c), kInf);
  EXPECT_EQ(Value<Float8E5M2>(0xfc), -kInf);
  EXPECT_TRUE(std::isnan(Value<Float8E5M2>(0x7d)));
  EXPECT_EQ(Value<Float8E5M2>(0x7b), 57344);
}

TEST(Float8E5M2FNUZTest, EdgesOfTheRange) {
  EXPECT_EQ(Bits<Float8E5M2FNUZ>(57344), 0x7f);
  EXPECT_EQ(Bits<Float8E5M2FNUZ>(kInf, false), 0x80);
  EXPECT_EQ(Bits<Float8E5M2FNUZ>(-0.0f), 0x00);
  EXPECT_EQ(Bits<Float8E5M2FNUZ>(std::ldexp(1.0f, -17)), 0x01);  // smallest subnormal (bias 16)
  EXPECT_TRUE(std::isnan(Value<Float8E5M2FNUZ>(0x80)));
}

TEST(Float4E2M1Test, RoundsToItsEightMagnitudesAndAlwaysSaturates) {
  EXPECT_EQ(Bits<Float4E2M1>(0.25f), 0x0);  // tie between 0 and 0.5: even
  EXPECT_EQ(Bits<Float4E2M1>(0.75f), 0x2);  // tie between 0.5 and 1: even (1)
  EXPECT_EQ(Bits<Float4E2M1>(5), 0x6);      // tie between 4 and 6: even (4)
  EXPECT_EQ(Bits<Float4E2M1>(7), 0x7);
  EXPECT_EQ(Bits<Float4E2M1>(kInf, false), 0x7);  // no infinity, saturate does not apply
  EXPECT_EQ(Bits<Float4E2M1>(-kInf), 0xf);
  EXPECT_EQ(Bits<Float4E2M1>(-0.0f), 0x8);
  EXPECT_EQ(Bits<Float4E2M1>(kNaN), 0x8);  // the ONNX reference's choice, no NaN in the format
  const std::vector<float> magnitudes = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (uint8_t b = 0; b < 8; ++b) {
    EXPECT_EQ(Value<Float4E2M1>(b), magnitudes[b]);
    EXPECT_EQ(Value<Float4E2M1>(static_cast<uint8_t>(b | 0x8)), -magnitudes[b]);
  }
}

TEST(Float8E8M0Test, RoundingModesAndSaturation) {
  EXPECT_EQ(Float8E8M0(1.0f).bits, 127);
  EXPECT_EQ(Float8E8M0(3.0f, true, E8M0Rounding::kUp).bits, 129);
  EXPECT_EQ(Float8E8M0(3.0f, true, E8M0Rounding::kDown).bits, 128);
  EXPECT_EQ(Float8E8M0(3.0f, true, E8M0Rounding::kNearest).bits, 129);  // 3 is the midpoint: ties up
  EXPECT_EQ(Float8E8M0(2.9f, true, E8M0Rounding::kNearest).bits, 128);
  EXPECT_EQ(Float8E8M0(0.124f).bits, 124);  // up to 0.125
  EXPECT_EQ(Float8E8M0(0.0f).bits, 0);      // saturates to 2^-127
  EXPECT_EQ(Float8E8M0(0.0f, false, E8M0Rounding::kNearest).bits, 0xff);
  EXPECT_EQ(Float8E8M0(kInf).bits, 0xfe);
  EXPECT_EQ(Float8E8M0(kInf, false).bits, 0xff);
  EXPECT_EQ(Float8E8M0(std::ldexp(1.5f, 127)).bits, 0xfe);  // rounding up past 2^127 saturates
  EXPECT_EQ(Float8E8M0(kNaN).bits, 0xff);
  EXPECT_EQ(static_cast<float>(Float8E8M0::FromBits(0)), std::ldexp(1.0f, -127));
  EXPECT_EQ(static_cast<float>(Float8E8M0::FromBits(0xfe)), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8E8M0::FromBits(0xff))));
}

TEST(SubByteIntTest, NarrowingKeepsTheLowBits) {
  EXPECT_EQ(Int4(7).value, 7);
  EXPECT_EQ(Int4(8).value, -8);
  EXPECT_EQ(Int4(-9).value, 7);
  EXPECT_EQ(UInt4(16).value, 0);
  EXPECT_EQ(UInt4(-1).value, 15);
  EXPECT_EQ(Int2(2).value, -2);
  EXPECT_EQ(Int2(-3).value, 1);
  EXPECT_EQ(UInt2(5).value, 1);
  EXPECT_EQ(Int4(-2).ToBits(), 0xe);
  EXPECT_EQ(Int4::FromBits(0xe).value, -2);
}

TEST(LowPrecisionTest, StoredOneElementPerByte) {
  for (DataType t : {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
                     DataType::kFloat8E5M2FNUZ, DataType::kFloat8E8M0, DataType::kFloat4E2M1, DataType::kInt4,
                     DataType::kUint4, DataType::kInt2, DataType::kUint2}) {
    EXPECT_EQ(ElementSize(t), 1u) << DataTypeName(t);
    EXPECT_TRUE(IsSupported(t)) << DataTypeName(t);
    EXPECT_TRUE(DataTypeFromOnnx(static_cast<int32_t>(t)).ok()) << DataTypeName(t);
  }
  EXPECT_FALSE(IsSupported(DataType::kComplex64));
}

onnx::TensorProto RawProto(DataType type, int64_t n, const std::string& raw) {
  onnx::TensorProto proto;
  proto.set_data_type(static_cast<int32_t>(type));
  proto.add_dims(n);
  proto.set_raw_data(raw);
  return proto;
}

TEST(WireFormatTest, Int4PacksTwoPerByteLowNibbleFirst) {
  const Tensor t = Tensor::FromVector<Int4>({3}, {Int4(1), Int4(-2), Int4(7)});
  const onnx::TensorProto proto = TensorToProto(t, "w");
  EXPECT_EQ(proto.raw_data(), std::string("\xe1\x07", 2));
  auto back = TensorFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->dtype(), DataType::kInt4);
  EXPECT_EQ(back->data<Int4>()[0].value, 1);
  EXPECT_EQ(back->data<Int4>()[1].value, -2);
  EXPECT_EQ(back->data<Int4>()[2].value, 7);
}

TEST(WireFormatTest, UInt2PacksFourPerByte) {
  const Tensor t = Tensor::FromVector<UInt2>({5}, {UInt2(1), UInt2(2), UInt2(3), UInt2(0), UInt2(1)});
  const onnx::TensorProto proto = TensorToProto(t, "w");
  EXPECT_EQ(proto.raw_data(), std::string("\x39\x01", 2));  // 1 | 2<<2 | 3<<4 | 0<<6, then 1
  auto back = TensorFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back->data<UInt2>()[i].value, t.data<UInt2>()[i].value) << i;
}

TEST(WireFormatTest, Float4E2M1RoundTripsThroughRawData) {
  auto t = TensorFromProto(RawProto(DataType::kFloat4E2M1, 3, std::string("\x72\x0f", 2)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->GetAsDouble(0), 1.0);   // 0x2
  EXPECT_EQ(t->GetAsDouble(1), 6.0);   // 0x7
  EXPECT_EQ(t->GetAsDouble(2), -6.0);  // 0xf
  EXPECT_EQ(TensorToProto(*t, "x").raw_data(), std::string("\x72\x0f", 2));
}

TEST(WireFormatTest, Float8IsOneBytePerElement) {
  auto t = TensorFromProto(RawProto(DataType::kFloat8E4M3FN, 2, std::string("\x7e\xfe", 2)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->GetAsDouble(0), 448);
  EXPECT_EQ(t->GetAsDouble(1), -448);
}

TEST(WireFormatTest, Int32DataHoldsOneWireBytePerValue) {
  onnx::TensorProto int4;
  int4.set_data_type(static_cast<int32_t>(DataType::kInt4));
  int4.add_dims(3);
  int4.add_int32_data(0xe1);  // 1, -2
  int4.add_int32_data(0x07);  // 7
  auto t = TensorFromProto(int4);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->GetAsDouble(1), -2);
  EXPECT_EQ(t->GetAsDouble(2), 7);

  onnx::TensorProto f8;
  f8.set_data_type(static_cast<int32_t>(DataType::kFloat8E5M2));
  f8.add_dims(1);
  f8.add_int32_data(0x7b);
  auto g = TensorFromProto(f8);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->GetAsDouble(0), 57344);
}

TEST(WireFormatTest, PackedSizeMismatchNamesBothSizes) {
  auto t = TensorFromProto(RawProto(DataType::kUint4, 3, std::string("\x00\x00\x00", 3)));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("raw data has 3 bytes but uint4[3] needs 2"), std::string::npos)
      << t.status();
}

}  // namespace
}  // namespace onnxserve
