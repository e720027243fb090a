// Quantization ops: rounding and saturation, the three granularities, unsupported types, and the integer
// products, with expected values worked out from the spec formulas.
#include <limits>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::FailsWith;
using testing::TensorsClose;

TEST(QuantizeLinearTest, RoundsHalfToEvenThenSaturates) {
  // x / 2 + 128: 3/2 = 1.5 -> 2, 5/2 = 2.5 -> 2, 1000 saturates at 255, -1000 at 0.
  auto out = OpTest("QuantizeLinear", 13)
                 .Input("x", Tensor::FromVector<float>({6}, {0, 2, 3, 5, 1000, -1000}))
                 .Input("scale", Tensor::Scalar(2.0f))
                 .Input("zp", Tensor::Scalar<uint8_t>(128))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({6}, {128, 129, 130, 130, 255, 0}), (*out)[0]));
}

// Found by tests/fuzz/model_fuzz.cc: NaN went through a float-to-uint8 conversion (undefined behaviour).
TEST(QuantizeLinearTest, NaNQuantizesToZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto u8 = OpTest("QuantizeLinear", 13)
                .Input("x", Tensor::FromVector<float>({3}, {nan, 0, 4}))
                .Input("scale", Tensor::Scalar(2.0f))
                .Input("zp", Tensor::Scalar<uint8_t>(0))
                .Output("y").Run();
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({3}, {0, 0, 2}), (*u8)[0]));
  auto i8 = OpTest("QuantizeLinear", 13)
                .Input("x", Tensor::FromVector<float>({2}, {nan, -4}))
                .Input("scale", Tensor::Scalar(2.0f))
                .Input("zp", Tensor::Scalar<int8_t>(0))
                .Output("y").Run();
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({2}, {0, -2}), (*i8)[0]));
}

TEST(QuantizeLinearTest, WithoutZeroPointIsUint8) {
  auto out = OpTest("QuantizeLinear", 10).Input("x", Tensor::FromVector<float>({2}, {4, -4}))
                 .Input("scale", Tensor::Scalar(1.0f)).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({2}, {4, 0}), (*out)[0]));
}

TEST(QuantizeLinearTest, PerAxisUsesOneScaleAndZeroPointPerChannel) {
  // Axis 1 (default): channel 0 scale 1 zp 0; channel 1 scale 2 zp -1.
  auto out = OpTest("QuantizeLinear", 13)
                 .Input("x", Tensor::FromVector<float>({1, 2, 2}, {1, 2, 3, 4}))
                 .Input("scale", Tensor::FromVector<float>({2}, {1, 2}))
                 .Input("zp", Tensor::FromVector<int8_t>({2}, {0, -1}))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({1, 2, 2}, {1, 2, 1, 1}), (*out)[0]));
}

TEST(QuantizeLinearTest, BlockedRepeatsEachScaleOverItsBlock) {
  // x [2,4], axis 1, block 2: scale [2,2]; the last block of row 1 uses scale 4.
  auto out = OpTest("QuantizeLinear", 21)
                 .Input("x", Tensor::FromVector<float>({2, 4}, {2, 4, 6, 8, 8, 8, 8, 16}))
                 .Input("scale", Tensor::FromVector<float>({2, 2}, {2, 1, 1, 4}))
                 .Attr("axis", int64_t{1}).Attr("block_size", int64_t{2}).Attr("output_dtype", int64_t{5})
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int16_t>({2, 4}, {1, 2, 6, 8, 8, 8, 2, 4}), (*out)[0]));
}

// Found by the model fuzzer (UBSan): a scalar x with a per-axis or blocked scale read the dim of an axis
// it does not have.
TEST(QuantizeLinearTest, AScalarWithAPerAxisOrBlockedScaleIsAnError) {
  for (int64_t block_size : {0, 2}) {
    auto out = OpTest("QuantizeLinear", 21)
                   .Input("x", Tensor::Scalar(3.0f))
                   .Input("scale", Tensor::FromVector<float>({2}, {1, 2}))
                   .Attr("axis", int64_t{0}).Attr("block_size", block_size)
                   .Output("y").Run();
    ASSERT_FALSE(out.ok()) << "block_size " << block_size;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
    EXPECT_NE(out.status().message().find("scalar x"), std::string::npos) << out.status();
  }
  auto dequantized = OpTest("DequantizeLinear", 21)
                         .Input("x", Tensor::Scalar(int8_t{3}))
                         .Input("scale", Tensor::FromVector<float>({2}, {1, 2}))
                         .Output("y").Run();
  ASSERT_FALSE(dequantized.ok());
  EXPECT_EQ(dequantized.status().code(), absl::StatusCode::kInvalidArgument) << dequantized.status();
}

TEST(QuantizeLinearTest, UnsupportedOutputTypeIsUnimplementedAndNamed) {
  auto out = OpTest("QuantizeLinear", 21).Input("x", Tensor::FromVector<float>({1}, {1}))
                 .Input("scale", Tensor::Scalar(1.0f)).Attr("output_dtype", int64_t{7}).Output("y").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented) << out.status();
  EXPECT_NE(out.status().message().find("int64"), std::string::npos) << out.status();
}

TEST(QuantizeLinearTest, Float8SaturatesToTheLargestFiniteValue) {
  // float8e4m3fn's largest finite value is 448: 500 and -1000 saturate; 1.5 is exact.
  auto out = OpTest("QuantizeLinear", 21).Input("x", Tensor::FromVector<float>({3}, {3, 1000, -2000}))
                 .Input("scale", Tensor::Scalar(2.0f)).Attr("output_dtype", int64_t{17}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].dtype(), DataType::kFloat8E4M3FN);
  EXPECT_EQ((*out)[0].GetAsDouble(0), 1.5);
  EXPECT_EQ((*out)[0].GetAsDouble(1), 448);
  EXPECT_EQ((*out)[0].GetAsDouble(2), -448);
}

TEST(QuantizeLinearTest, Int4SaturatesToItsRange) {
  // round(x / 2) + 1: -10 + 1 -> -8 (clamped), 1.5 -> 2 (+1 = 3), 10 + 1 -> 7 (clamped).
  auto out = OpTest("QuantizeLinear", 21).Input("x", Tensor::FromVector<float>({3}, {-20, 3, 20}))
                 .Input("scale", Tensor::Scalar(2.0f)).Input("zp", Tensor::Scalar(Int4(1))).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].dtype(), DataType::kInt4);
  EXPECT_EQ((*out)[0].GetAsDouble(0), -8);
  EXPECT_EQ((*out)[0].GetAsDouble(1), 3);
  EXPECT_EQ((*out)[0].GetAsDouble(2), 7);
}

TEST(DequantizeLinearTest, PerAxisAndInt32) {
  auto axis = OpTest("DequantizeLinear", 13)
                  .Input("x", Tensor::FromVector<uint8_t>({2, 2}, {10, 20, 10, 20}))
                  .Input("scale", Tensor::FromVector<float>({2}, {0.5f, 2}))
                  .Input("zp", Tensor::FromVector<uint8_t>({2}, {10, 0}))
                  .Attr("axis", int64_t{0}).Output("y").Run();
  ASSERT_TRUE(axis.ok()) << axis.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {0, 5, 20, 40}), (*axis)[0]));

  auto wide = OpTest("DequantizeLinear", 10).Input("x", Tensor::FromVector<int32_t>({2}, {-3, 1 << 20}))
                  .Input("scale", Tensor::Scalar(0.25f)).Output("y").Run();
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {-0.75f, 262144}), (*wide)[0]));
}

TEST(DequantizeLinearTest, BlockedAndOutputTypeFromScale) {
  // x [1,4], axis 1, block 2, float16 scales {1, 0.5}: y is float16.
  auto out = OpTest("DequantizeLinear", 21)
                 .Input("x", Tensor::FromVector<int8_t>({1, 4}, {1, 2, 4, 8}))
                 .Input("scale", Tensor::FromVector<Float16>({1, 2}, {Float16(1.0f), Float16(0.5f)}))
                 .Attr("axis", int64_t{1}).Attr("block_size", int64_t{2}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<Float16>({1, 4}, {Float16(1.0f), Float16(2.0f), Float16(2.0f),
                                                                Float16(4.0f)}),
                           (*out)[0]));
}

// The zero point pairs with the scale element by element: a blocked scale of [2, 3] under a zero point of
// [3, 2] (the same count) paired them in another order. A scalar and a [1] still pair their one value.
TEST(DequantizeLinearTest, AZeroPointOfAnotherShapeThanTheScaleIsAnError) {
  const auto dequantize = [](Shape scale_shape, Shape zp_shape, int64_t block_size) {
    OpTest test("DequantizeLinear", 21);
    test.Input("x", Tensor::FromVector<int8_t>({2, 6}, std::vector<int8_t>(12, 4)))
        .Input("scale", Tensor::FromVector<float>(std::move(scale_shape), std::vector<float>(block_size > 0 ? 6 : 1, 1.f)))
        .Input("zp", Tensor::FromVector<int8_t>(std::move(zp_shape), std::vector<int8_t>(block_size > 0 ? 6 : 1, 1)))
        .Attr("axis", int64_t{1}).Output("y");
    if (block_size > 0) test.Attr("block_size", block_size);
    return test.Run();
  };
  EXPECT_TRUE(testing::FailsWith(dequantize({2, 3}, {3, 2}, 2), "zero point [3,2]: expected the scale's shape [2,3]"));
  auto one = dequantize({}, {1}, 0);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 6}, std::vector<float>(12, 3.f)), (*one)[0]));
}

TEST(DynamicQuantizeLinearTest, MapsTheRangeWithZeroOntoUint8) {
  // The spec's example: range [-3, 2], scale 5/255, zero point 153.
  auto out = OpTest("DynamicQuantizeLinear", 11)
                 .Input("x", Tensor::FromVector<float>({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f}))
                 .Output("y").Output("scale").Output("zp").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({6}, {153, 255, 0, 26, 221, 179}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(5.0f / 255), (*out)[1]));
  EXPECT_TRUE(TensorsClose(Tensor::Scalar<uint8_t>(153), (*out)[2]));
}

TEST(MatMulIntegerTest, SubtractsZeroPointsBeforeMultiplying) {
  // (A - 10) = [[0,10],[20,30]], (B - 1) = [[0,1],[2,3]].
  auto out = OpTest("MatMulInteger", 10)
                 .Input("a", Tensor::FromVector<uint8_t>({2, 2}, {10, 20, 30, 40}))
                 .Input("b", Tensor::FromVector<int8_t>({2, 2}, {1, 2, 3, 4}))
                 .Input("a_zp", Tensor::Scalar<uint8_t>(10)).Input("b_zp", Tensor::Scalar<int8_t>(1))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2, 2}, {20, 30, 60, 110}), (*out)[0]));
}

TEST(QLinearMatMulTest, RequantizesTheProduct) {
  // acc = 2*3 + 4*5 = 26; 26 * 0.5 * 1 / 2 = 6.5 -> 6 (half to even); + 10.
  auto out = OpTest("QLinearMatMul", 10)
                 .Input("a", Tensor::FromVector<uint8_t>({1, 2}, {2, 4})).Input("a_scale", Tensor::Scalar(0.5f))
                 .Input("a_zp", Tensor::Scalar<uint8_t>(0))
                 .Input("b", Tensor::FromVector<uint8_t>({2, 1}, {3, 5})).Input("b_scale", Tensor::Scalar(1.0f))
                 .Input("b_zp", Tensor::Scalar<uint8_t>(0))
                 .Input("y_scale", Tensor::Scalar(2.0f)).Input("y_zp", Tensor::Scalar<uint8_t>(10))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({1, 1}, {16}), (*out)[0]));
}

// y_scale and y_zero_point are scalars: element 0 of an empty one was read anyway, from a recycled buffer
// that held whatever an earlier run (maybe another request) left there.
TEST(QLinearMatMulTest, AnEmptyOutputScaleOrZeroPointIsAnError) {
  const auto matmul = [](Tensor y_scale, Tensor y_zp) {
    return OpTest("QLinearMatMul", 10)
        .Input("a", Tensor::FromVector<uint8_t>({1, 2}, {2, 4})).Input("a_scale", Tensor::Scalar(0.5f))
        .Input("a_zp", Tensor::Scalar<uint8_t>(0))
        .Input("b", Tensor::FromVector<uint8_t>({2, 1}, {3, 5})).Input("b_scale", Tensor::Scalar(1.0f))
        .Input("b_zp", Tensor::Scalar<uint8_t>(0))
        .Input("y_scale", std::move(y_scale)).Input("y_zp", std::move(y_zp))
        .Output("y").Run();
  };
  EXPECT_EQ(matmul(Tensor(DataType::kFloat, {0}), Tensor::Scalar<uint8_t>(10)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(matmul(Tensor::Scalar(2.0f), Tensor(DataType::kUint8, {0})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ConvIntegerTest, ConvolvesTheZeroPointShiftedInput) {
  // x - 1 = 0..8 on a 3x3 image, a 2x2 kernel of ones: sums of each 2x2 window.
  std::vector<uint8_t> x(9);
  for (int i = 0; i < 9; ++i) x[i] = static_cast<uint8_t>(i + 1);
  auto out = OpTest("ConvInteger", 10)
                 .Input("x", Tensor::FromVector<uint8_t>({1, 1, 3, 3}, x))
                 .Input("w", Tensor::FromVector<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1}))
                 .Input("x_zp", Tensor::Scalar<uint8_t>(1))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({1, 1, 2, 2}, {8, 12, 20, 24}), (*out)[0]));
}

// A zero point has its tensor's type. One of another was read as a double and converted to int32: a float
// 1e30 or NaN (undefined behaviour) gave whatever the conversion did, and the product came out as if it were 0.
TEST(MatMulIntegerTest, AZeroPointOfAnotherTypeIsAnError) {
  auto out = OpTest("MatMulInteger", 10)
                 .Input("a", Tensor::FromVector<uint8_t>({1, 1}, {3}))
                 .Input("b", Tensor::FromVector<uint8_t>({1, 1}, {2}))
                 .Input("a_zp", Tensor::FromVector<float>({1}, {1e30f}))
                 .Output("y").Run();
  EXPECT_TRUE(testing::FailsWith(out, "A zero point is float")) << out.status();
  std::vector<uint8_t> x(9, 1);
  out = OpTest("ConvInteger", 10)
            .Input("x", Tensor::FromVector<uint8_t>({1, 1, 3, 3}, x))
            .Input("w", Tensor::FromVector<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1}))
            .Input("x_zp", Tensor::Scalar<int32_t>(1 << 20))
            .Output("y").Run();
  EXPECT_TRUE(testing::FailsWith(out, "x zero point is int32")) << out.status();
}

// QLinearConv's inputs in spec order, then optional B.
OpTest QLinearConvTest(Tensor x, float x_scale, Tensor x_zp, Tensor w, Tensor w_scale, Tensor w_zp, float y_scale,
                       Tensor y_zp) {
  OpTest t("QLinearConv", 10);
  t.Input("x", std::move(x)).Input("x_scale", Tensor::Scalar(x_scale)).Input("x_zp", std::move(x_zp))
      .Input("w", std::move(w)).Input("w_scale", std::move(w_scale)).Input("w_zp", std::move(w_zp))
      .Input("y_scale", Tensor::Scalar(y_scale)).Input("y_zp", std::move(y_zp));
  return t;
}

TEST(QLinearConvTest, ShiftsByZeroPointsAndRoundsHalfToEven) {
  // x - 10 = {0, 2, 4, 6}, w - 1 = 2: sums {0, 4, 8, 12}; times 0.5 * 1 / 4 = {0, 0.5, 1, 1.5}, which rounds
  // half to even to {0, 0, 1, 2}; plus y's zero point 5.
  auto out = QLinearConvTest(Tensor::FromVector<uint8_t>({1, 1, 2, 2}, {10, 12, 14, 16}), 0.5f,
                             Tensor::Scalar<uint8_t>(10), Tensor::FromVector<uint8_t>({1, 1, 1, 1}, {3}),
                             Tensor::Scalar(1.0f), Tensor::Scalar<uint8_t>(1), 4.0f, Tensor::Scalar<uint8_t>(5))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({1, 1, 2, 2}, {5, 5, 6, 7}), (*out)[0]));
}

TEST(QLinearConvTest, SaturatesToTheOutputType) {
  // -128 * 127 and 127 * 127 at unit scales leave int8 and uint8 on both sides.
  for (const Tensor& y_zp : {Tensor::Scalar<int8_t>(0), Tensor::Scalar<uint8_t>(0)}) {
    auto out = QLinearConvTest(Tensor::FromVector<int8_t>({1, 1, 1, 2}, {-128, 127}), 1.0f, Tensor::Scalar<int8_t>(0),
                               Tensor::FromVector<int8_t>({1, 1, 1, 1}, {127}), Tensor::Scalar(1.0f),
                               Tensor::Scalar<int8_t>(0), 1.0f, y_zp)
                   .Output("y").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor expected = y_zp.dtype() == DataType::kInt8 ? Tensor::FromVector<int8_t>({1, 1, 1, 2}, {-128, 127})
                                                            : Tensor::FromVector<uint8_t>({1, 1, 1, 2}, {0, 255});
    EXPECT_TRUE(TensorsClose(expected, (*out)[0]));
  }
}

TEST(QLinearConvTest, PerChannelScalesZeroPointsAndBiasInGroups) {
  // Two groups of one channel: w - w_zp = {2 - 0, -1 - 1} = {2, -2}. Map 0: {1, 2} * 2 + 1 = {3, 5}, times
  // 1 * 1 / 2 = {1.5, 2.5} -> {2, 2}. Map 1: {3, 4} * -2 - 2 = {-8, -10}, times 1 * 0.5 / 2 = {-2, -2.5} ->
  // {-2, -2}. Plus y's zero point 1.
  auto out = QLinearConvTest(Tensor::FromVector<uint8_t>({1, 2, 1, 2}, {1, 2, 3, 4}), 1.0f, Tensor::Scalar<uint8_t>(0),
                             Tensor::FromVector<int8_t>({2, 1, 1, 1}, {2, -1}), Tensor::FromVector<float>({2}, {1, 0.5f}),
                             Tensor::FromVector<int8_t>({2}, {0, 1}), 2.0f, Tensor::Scalar<int8_t>(1))
                 .Input("B", Tensor::FromVector<int32_t>({2}, {1, -2}))
                 .Attr("group", int64_t{2})
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({1, 2, 1, 2}, {3, 3, -1, -1}), (*out)[0]));
}

TEST(QLinearConvTest, PadsWithTheInputZeroPoint) {
  // A 1x2 kernel of ones over x - 7 = {1, 2} padded by one on each side: {1, 3, 2}.
  auto out = QLinearConvTest(Tensor::FromVector<uint8_t>({1, 1, 1, 2}, {8, 9}), 1.0f, Tensor::Scalar<uint8_t>(7),
                             Tensor::FromVector<uint8_t>({1, 1, 1, 2}, {1, 1}), Tensor::Scalar(1.0f),
                             Tensor::Scalar<uint8_t>(0), 1.0f, Tensor::Scalar<uint8_t>(0))
                 .Attr("pads", std::vector<int64_t>{0, 1, 0, 1})
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({1, 1, 1, 3}, {1, 3, 2}), (*out)[0]));
}

TEST(QLinearConvTest, ScaleOfTheWrongLengthIsAnErrorNamingIt) {
  auto out = QLinearConvTest(Tensor::FromVector<uint8_t>({1, 1, 1, 1}, {1}), 1.0f, Tensor::Scalar<uint8_t>(0),
                             Tensor::FromVector<uint8_t>({2, 1, 1, 1}, {1, 1}), Tensor::FromVector<float>({3}, {1, 1, 1}),
                             Tensor::Scalar<uint8_t>(0), 1.0f, Tensor::Scalar<uint8_t>(0))
                 .Output("y").Run();
  EXPECT_TRUE(FailsWith(out, "w_scale"));
}

TEST(QLinearConvTest, BiasOfTheWrongTypeIsAnErrorNamingIt) {
  auto out = QLinearConvTest(Tensor::FromVector<uint8_t>({1, 1, 1, 1}, {1}), 1.0f, Tensor::Scalar<uint8_t>(0),
                             Tensor::FromVector<uint8_t>({1, 1, 1, 1}, {1}), Tensor::Scalar(1.0f),
                             Tensor::Scalar<uint8_t>(0), 1.0f, Tensor::Scalar<uint8_t>(0))
                 .Input("B", Tensor::FromVector<float>({1}, {1}))
                 .Output("y").Run();
  EXPECT_TRUE(FailsWith(out, "B "));
}

// The block count was (dim + block_size - 1) / block_size, which overflows for a block_size near INT64_MAX:
// one block of 2 elements needed a scale of [-1]. It is ceil(2 / block_size) = 1, so scale [1] holds.
TEST(QuantizeLinearTest, ABlockSizeNearInt64MaxIsOneBlock) {
  auto out = OpTest("QuantizeLinear", 21)
                 .Input("x", Tensor::FromVector<float>({2}, {2, 4}))
                 .Input("scale", Tensor::FromVector<float>({1}, {2}))
                 .Attr("axis", int64_t{0}).Attr("block_size", std::numeric_limits<int64_t>::max())
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({2}, {1, 2}), (*out)[0]));
}

}  // namespace
}  // namespace onnxserve
