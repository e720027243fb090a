// Softmax family: versions 1/11 coerce to 2-D at axis (default 1), 13 normalizes one axis (default -1).
#include <cmath>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

// X [1, 2, 2] = [[0, ln 3], [ln 3, 0]] (rows of the last axis).
Tensor X() {
  const float l3 = std::log(3.0f);
  return Tensor::FromVector<float>({1, 2, 2}, {0, l3, l3, 0});
}

TEST(SoftmaxTest, Version13NormalizesTheLastAxis) {
  auto out = OpTest("Softmax", 13).Input("x", X()).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2}, {0.25f, 0.75f, 0.75f, 0.25f}), (*out)[0]));
}

TEST(SoftmaxTest, Versions1And11CoerceToTwoDimensionsAtAxisOne) {
  // Flattened from axis 1: one row of four, exp = 1, 3, 3, 1 over a sum of 8.
  for (int opset : {1, 11}) {
    auto out = OpTest("Softmax", opset).Input("x", X()).Output("y").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2}, {0.125f, 0.375f, 0.375f, 0.125f}), (*out)[0]))
        << "opset " << opset;
  }
}

TEST(SoftmaxTest, Version13AlongAMiddleAxis) {
  // Along axis 1 the pairs are (0, ln 3) and (ln 3, 0): same numbers, transposed.
  auto out = OpTest("Softmax", 13).Input("x", X()).Attr("axis", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2}, {0.25f, 0.75f, 0.75f, 0.25f}), (*out)[0]));
}

TEST(LogSoftmaxTest, IsTheLogOfSoftmaxAndStableForLargeInputs) {
  auto out = OpTest("LogSoftmax", 13).Input("x", Tensor::FromVector<float>({2}, {1000, 1000})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const float half = std::log(0.5f);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {half, half}), (*out)[0]));
}

TEST(HardmaxTest, FirstMaximumWinsPerRowOrAcrossTheCoercedRow) {
  const Tensor x = Tensor::FromVector<float>({2, 2}, {3, 3, 1, 2});
  auto v13 = OpTest("Hardmax", 13).Input("x", x).Output("y").Run();
  ASSERT_TRUE(v13.ok()) << v13.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {1, 0, 0, 1}), (*v13)[0]));
  // Version 11 with axis 0 sees one row of four: only the first 3 is set.
  auto v11 = OpTest("Hardmax", 11).Input("x", x).Attr("axis", int64_t{0}).Output("y").Run();
  ASSERT_TRUE(v11.ok()) << v11.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {1, 0, 0, 0}), (*v11)[0]));
}

TEST(SoftmaxTest, AxisOutOfRangeIsAnError) {
  auto out = OpTest("Softmax", 13).Input("x", X()).Attr("axis", int64_t{3}).Output("y").Run();
  EXPECT_FALSE(out.ok());
}

}  // namespace
}  // namespace onnxserve
