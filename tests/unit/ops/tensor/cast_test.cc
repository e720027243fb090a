// Cast and CastLike (cast.cc): the numeric rules of Cast-25, strings both ways, half types bit-exact, the
// low-precision types (saturate, round_mode, sub-byte wrapping), and the types onnxserve refuses.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

absl::StatusOr<Tensor> CastTo(const Tensor& x, DataType to, int opset = 25) {
  auto result = OpTest("Cast", opset).Input("x", x).Attr("to", static_cast<int64_t>(to)).Output("y").Run();
  if (!result.ok()) return result.status();
  return (*result)[0];
}

Tensor MustCast(const Tensor& x, DataType to, int opset = 25) {
  auto result = CastTo(x, to, opset);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : Tensor();
}

TEST(CastTest, FloatToIntegerTruncatesAndSaturatesOutOfRange) {
  const Tensor actual =
      MustCast(Tensor::FromVector<float>({4}, {1.9f, -1.9f, 1e10f, kNaN}), DataType::kInt32);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({4}, {1, -1, std::numeric_limits<int32_t>::max(), 0}),
                           actual));
}

TEST(CastTest, IntegerToNarrowerIntegerKeepsLowBits) {
  // The spec's example: 200 (int16) -> -56 (int8).
  const Tensor actual = MustCast(Tensor::FromVector<int16_t>({2}, {200, -1}), DataType::kInt8);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({2}, {-56, -1}), actual));
  const Tensor unsigned_out = MustCast(Tensor::FromVector<int32_t>({1}, {-1}), DataType::kUint16);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint16_t>({1}, {65535}), unsigned_out));
}

TEST(CastTest, BoolIsNonzeroBothWays) {
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({4}, {false, false, true, true}),
                           MustCast(Tensor::FromVector<float>({4}, {0.0f, -0.0f, 0.5f, kNaN}), DataType::kBool)));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({2}, {1, 0}),
                           MustCast(Tensor::FromVector<bool>({2}, {true, false}), DataType::kDouble)));
}

TEST(CastTest, HalfTypesRoundToNearestEven) {
  const Tensor half = MustCast(Tensor::FromVector<float>({3}, {1.0f, 65504.0f, 65520.0f}), DataType::kFloat16);
  ASSERT_EQ(half.dtype(), DataType::kFloat16);
  EXPECT_EQ(half.data<Float16>()[0].bits, 0x3C00);
  EXPECT_EQ(half.data<Float16>()[1].bits, 0x7BFF);  // the largest half
  EXPECT_EQ(half.data<Float16>()[2].bits, 0x7C00);  // rounds past it to +inf
  // 1 + 2^-8 and 1 + 3 * 2^-8 lie halfway between bfloat16 neighbours: ties go to the even mantissa.
  const Tensor bf16 = MustCast(Tensor::FromVector<float>({2}, {1.00390625f, 1.01171875f}), DataType::kBFloat16);
  EXPECT_EQ(bf16.data<BFloat16>()[0].bits, 0x3F80);
  EXPECT_EQ(bf16.data<BFloat16>()[1].bits, 0x3F82);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({2}, {1.0, 1.015625}), MustCast(bf16, DataType::kDouble)));
}

TEST(CastTest, StringsParseToFloatsIncludingSpecialLiterals) {
  const Tensor x = Tensor::FromVector<std::string>(
      {7}, {"3.14", "1e-5", "1E8", "+INF", "-inf", "NaN", "-2"});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({7}, {3.14f, 1e-5f, 1e8f, kInf, -kInf, kNaN, -2.0f}),
                           MustCast(x, DataType::kFloat), 0, 0));
}

TEST(CastTest, StringsParseToIntegersTruncatingFloatLiterals) {
  const Tensor x = Tensor::FromVector<std::string>({3}, {"1000", "-7", "100.5"});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({3}, {1000, -7, 100}), MustCast(x, DataType::kInt64)));
}

TEST(CastTest, NonNumericStringIsAnError) {
  const auto result = CastTo(Tensor::FromVector<std::string>({1}, {"Hello World!"}), DataType::kFloat);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("Hello World!"), std::string::npos) << result.status();
}

TEST(CastTest, NumbersFormatAsPlainShortestText) {
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({5}, {"0.5", "-2", "100.25", "INF", "NaN"}),
                           MustCast(Tensor::FromVector<float>({5}, {0.5f, -2.0f, 100.25f, kInf, kNaN}),
                                    DataType::kString)));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2}, {"-7", "123456789012"}),
                           MustCast(Tensor::FromVector<int64_t>({2}, {-7, 123456789012}), DataType::kString)));
}

TEST(CastTest, SameTypeIsPassedThrough) {
  const Tensor x = Tensor::FromVector<int32_t>({2}, {1, 2});
  EXPECT_TRUE(TensorsClose(x, MustCast(x, DataType::kInt32)));
}

TEST(CastTest, Version1NamesTheTypeAsAString) {
  auto result = OpTest("Cast", 1)
                    .Input("x", Tensor::FromVector<int32_t>({2}, {1, -3}))
                    .Attr("to", std::string("FLOAT"))
                    .Output("y")
                    .Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {1, -3}), (*result)[0]));
}

TEST(CastTest, ComplexTargetsAreUnimplementedByName) {
  for (const auto& [onnx_type, name] : {std::pair<int64_t, const char*>{14, "complex64"}, {15, "complex128"}}) {
    const auto result = CastTo(Tensor::Scalar(1.0f), static_cast<DataType>(onnx_type));
    ASSERT_FALSE(result.ok()) << name;
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented) << result.status();
    EXPECT_NE(result.status().message().find(name), std::string::npos) << result.status();
  }
}

absl::StatusOr<Tensor> CastWith(const Tensor& x, DataType to, int64_t saturate, const std::string& round_mode) {
  auto result = OpTest("Cast", 25)
                    .Input("x", x)
                    .Attr("to", static_cast<int64_t>(to))
                    .Attr("saturate", saturate)
                    .Attr("round_mode", round_mode)
                    .Output("y")
                    .Run();
  if (!result.ok()) return result.status();
  return (*result)[0];
}

TEST(CastTest, Float8SaturatesByDefaultAndOverflowsToNaNOrInfWithout) {
  const Tensor x = Tensor::FromVector<float>({3}, {1e6f, -kInf, 0.5f});
  const Tensor saturated = MustCast(x, DataType::kFloat8E4M3FN);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {448, -448, 0.5f}), MustCast(saturated, DataType::kFloat)));
  auto e4m3 = CastWith(x, DataType::kFloat8E4M3FN, 0, "up");
  ASSERT_TRUE(e4m3.ok()) << e4m3.status();
  EXPECT_EQ(e4m3->data<Float8E4M3FN>()[0].bits, 0x7f);  // NaN: the format has no infinity
  EXPECT_EQ(e4m3->data<Float8E4M3FN>()[1].bits, 0xff);
  auto e5m2 = CastWith(x, DataType::kFloat8E5M2, 0, "up");
  ASSERT_TRUE(e5m2.ok()) << e5m2.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {kInf, -kInf, 0.5f}), MustCast(*e5m2, DataType::kFloat)));
}

TEST(CastTest, FloatToSubByteIntegerTruncatesThenKeepsLowBits) {
  const Tensor x = Tensor::FromVector<float>({4}, {-9, 8, 2.7f, -1.5f});
  const Tensor int4 = MustCast(x, DataType::kInt4);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({4}, {7, -8, 2, -1}), MustCast(int4, DataType::kInt8)));
  const Tensor uint2 = MustCast(Tensor::FromVector<int32_t>({3}, {-1, 4, 6}), DataType::kUint2);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({3}, {3, 0, 2}), MustCast(uint2, DataType::kUint8)));
}

TEST(CastTest, LowPrecisionTypesConvertBetweenEachOtherAndStrings) {
  // 448 = 1.75 * 2^8 is exact in E5M2 too: 0 10111 11.
  const Tensor e4m3 = Tensor::FromVector<Float8E4M3FN>({1}, {Float8E4M3FN(448.0f)});
  EXPECT_EQ(MustCast(e4m3, DataType::kFloat8E5M2).data<Float8E5M2>()[0].bits, 0x5f);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2}, {"-8", "7"}),
                           MustCast(Tensor::FromVector<Int4>({2}, {Int4(-8), Int4(7)}), DataType::kString)));
  const Tensor parsed = MustCast(Tensor::FromVector<std::string>({2}, {"1.5", "-INF"}), DataType::kFloat4E2M1);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {1.5f, -6}), MustCast(parsed, DataType::kFloat)));
  const Tensor int4 = MustCast(Tensor::FromVector<Float8E5M2>({1}, {Float8E5M2(-3.0f)}), DataType::kInt4);
  EXPECT_EQ(int4.data<Int4>()[0].value, -3);
}

TEST(CastTest, RoundModeChoosesTheE8M0Neighbour) {
  const Tensor x = Tensor::FromVector<float>({2}, {3.0f, 2.9f});
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> cases = {
      {"up", {129, 129}}, {"down", {128, 128}}, {"nearest", {129, 128}}};
  for (const auto& [mode, bits] : cases) {
    auto result = CastWith(x, DataType::kFloat8E8M0, 1, mode);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->data<Float8E8M0>()[0].bits, bits[0]) << mode;
    EXPECT_EQ(result->data<Float8E8M0>()[1].bits, bits[1]) << mode;
  }
  auto bad = CastWith(x, DataType::kFloat8E8M0, 1, "sideways");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("sideways"), std::string::npos) << bad.status();
}

TEST(CastTest, SaturateAttributeIsAcceptedForOtherTypes) {
  auto result = OpTest("Cast", 19)
                    .Input("x", Tensor::FromVector<float>({1}, {1e6f}))
                    .Attr("to", static_cast<int64_t>(DataType::kFloat16))
                    .Attr("saturate", int64_t{0})
                    .Output("y")
                    .Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ((*result)[0].data<Float16>()[0].bits, 0x7C00);  // out of half range: +inf, not saturated
}

TEST(CastLikeTest, TakesTheTypeOfTheSecondInput) {
  auto result = OpTest("CastLike", 21)
                    .Input("x", Tensor::FromVector<float>({2}, {2.5f, -2.5f}))
                    .Input("like", Tensor::FromVector<int64_t>({0}, {}))
                    .Output("y")
                    .Run();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {2, -2}), (*result)[0]));
}

}  // namespace
}  // namespace onnxserve
