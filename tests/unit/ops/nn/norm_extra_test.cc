#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }

absl::StatusOr<Tensor> RunOne(const OpTest& test) {
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// Rows of RMS 1 and 2 normalize to ones, then take the scale.
TEST(RmsNormalizationTest, DividesEachRowByItsRmsThenScales) {
  auto y = RunOne(OpTest("RMSNormalization", 23).Input("X", Floats({2, 2}, {1, -1, 2, 2}))
                      .Input("scale", Floats({2}, {2, 3})).Attr("epsilon", 0.0f).Output("Y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {2, -3, 2, 3}), *y));
}

// axis 0 normalizes over everything: rms([3, 4, 0, 0]) = sqrt(25 / 4) = 2.5; the scale broadcasts.
TEST(RmsNormalizationTest, AxisZeroSpansTheWholeTensorAndScaleBroadcasts) {
  auto y = RunOne(OpTest("RMSNormalization", 23).Input("X", Floats({2, 2}, {3, 4, 0, 0}))
                      .Input("scale", Floats({1}, {5})).Attr("axis", int64_t{0}).Attr("epsilon", 0.0f).Output("Y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {6, 8, 0, 0}), *y));
}

TEST(RmsNormalizationTest, RejectsAScaleThatDoesNotBroadcast) {
  EXPECT_FALSE(RunOne(OpTest("RMSNormalization", 23).Input("X", Floats({2, 2}, {1, 1, 1, 1}))
                          .Input("scale", Floats({3}, {1, 1, 1})).Output("Y")).ok());
}

TEST(LpNormalizationTest, L2AndL1AlongTheLastAxis) {
  const Tensor x = Floats({2, 2}, {3, 4, 0, 0});
  auto l2 = RunOne(OpTest("LpNormalization", 22).Input("x", x).Output("y"));
  auto l1 = RunOne(OpTest("LpNormalization", 1).Input("x", x).Attr("p", int64_t{1}).Output("y"));
  ASSERT_TRUE(l2.ok() && l1.ok());
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {0.6f, 0.8f, 0, 0}), *l2));  // a zero norm gives zeros
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {3.0f / 7, 4.0f / 7, 0, 0}), *l1));
}

TEST(LpNormalizationTest, AlongTheFirstAxis) {
  auto y = RunOne(OpTest("LpNormalization", 22).Input("x", Floats({2, 2}, {3, 1, 4, 0}))
                      .Attr("axis", int64_t{0}).Output("y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {0.6f, 1, 0.8f, 0}), *y));
}

TEST(LpNormalizationTest, RejectsOtherOrders) {
  EXPECT_FALSE(RunOne(OpTest("LpNormalization", 22).Input("x", Floats({1}, {1})).Attr("p", int64_t{3}).Output("y")).ok());
}

TEST(ShrinkTest, HardAndSoft) {
  const Tensor x = Floats({5}, {-2, -1, 0, 1, 2});
  auto hard = RunOne(OpTest("Shrink", 9).Input("x", x).Attr("lambd", 1.5f).Output("y"));
  auto soft = RunOne(OpTest("Shrink", 9).Input("x", x).Attr("lambd", 1.5f).Attr("bias", 1.5f).Output("y"));
  ASSERT_TRUE(hard.ok() && soft.ok());
  EXPECT_TRUE(TensorsClose(Floats({5}, {-2, 0, 0, 0, 2}), *hard));
  EXPECT_TRUE(TensorsClose(Floats({5}, {-0.5f, 0, 0, 0, 0.5f}), *soft));
}

TEST(ShrinkTest, Integers) {
  auto y = RunOne(OpTest("Shrink", 9).Input("x", Tensor::FromVector<int8_t>({3}, {-3, 1, 3}))
                      .Attr("lambd", 1.0f).Attr("bias", 1.0f).Output("y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({3}, {-2, 0, 2}), *y));
}

TEST(SwishTest, IsXTimesSigmoidOfAlphaX) {
  auto one = RunOne(OpTest("Swish", 24).Input("x", Floats({3}, {0, 1, -1})).Output("y"));
  auto two = RunOne(OpTest("Swish", 24).Input("x", Floats({1}, {-1})).Attr("alpha", 2.0f).Output("y"));
  ASSERT_TRUE(one.ok() && two.ok());
  const float s1 = 1 / (1 + std::exp(-1.0f));
  EXPECT_TRUE(TensorsClose(Floats({3}, {0, s1, -(1 - s1)}), *one));
  EXPECT_TRUE(TensorsClose(Floats({1}, {-1 / (1 + std::exp(2.0f))}), *two));
}

TEST(SwiGluTest, GatesBWithSwishOfAAndRefusesToBroadcast) {
  // Swish_2(-1) = -1 / (1 + e^2); Swish_2(0) = 0; Swish_2(1) = 1 / (1 + e^-2).
  auto y = RunOne(OpTest("SwiGLU", 28).Input("A", Floats({3}, {-1, 0, 1})).Input("B", Floats({3}, {3, 5, -2}))
                      .Attr("alpha", 2.0f).Output("Y"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {-3 / (1 + std::exp(2.0f)), 0, -2 / (1 + std::exp(-2.0f))}), *y));

  y = RunOne(OpTest("SwiGLU", 28).Input("A", Floats({2, 1}, {1, 2})).Input("B", Floats({2, 2}, {1, 2, 3, 4}))
                 .Output("Y"));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("does not broadcast"), std::string::npos) << y.status();
}

absl::StatusOr<Tensor> CumProd(const Tensor& x, const Tensor& axis, int64_t exclusive = 0, int64_t reverse = 0) {
  return RunOne(OpTest("CumProd", 26).Input("x", x).Input("axis", axis).Attr("exclusive", exclusive)
                    .Attr("reverse", reverse).Output("y"));
}

// The spec's examples on [1, 2, 3].
TEST(CumProdTest, ExclusiveAndReverse) {
  const Tensor x = Floats({3}, {1, 2, 3});
  const std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<float>>> cases = {
      {{0, 0}, {1, 2, 6}}, {{1, 0}, {1, 1, 2}}, {{0, 1}, {6, 6, 3}}, {{1, 1}, {6, 3, 1}}};
  for (const auto& [flags, expected] : cases) {
    auto y = CumProd(x, Tensor::Scalar(int64_t{0}), flags.first, flags.second);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(TensorsClose(Floats({3}, expected), *y)) << "exclusive " << flags.first << " reverse " << flags.second;
  }
}

TEST(CumProdTest, AlongEitherAxisOfAnIntegerMatrix) {
  const Tensor x = Tensor::FromVector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto rows = CumProd(x, Tensor::Scalar(int32_t{0}));
  auto cols = CumProd(x, Tensor::Scalar(int64_t{-1}));
  ASSERT_TRUE(rows.ok() && cols.ok());
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2, 3}, {1, 2, 3, 4, 10, 18}), *rows));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2, 3}, {1, 2, 6, 4, 20, 120}), *cols));
}

TEST(CumProdTest, RejectsAnAxisOutOfRange) {
  EXPECT_FALSE(CumProd(Floats({2}, {1, 2}), Tensor::Scalar(int64_t{1})).ok());
}

}  // namespace
}  // namespace onnxserve
