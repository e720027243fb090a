// Softmax family: versions 1/11 coerce to 2-D at axis (default 1), 13 normalizes one axis (default -1).
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

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

// Rows of every length up to 70 (partial vectors) and a long one, against the formulas in double.
TEST(SoftmaxTest, FloatRowsMatchTheDoubleFormulaForEveryLength) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> dist(-20, 20);
  for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 70, 1000}) {
    std::vector<float> values(static_cast<size_t>(3 * n));
    for (float& v : values) v = dist(rng);
    const Tensor x = Tensor::FromVector<float>({3, n}, values);
    Tensor softmax(DataType::kFloat, {3, n}), log_softmax(DataType::kFloat, {3, n});
    for (int64_t r = 0; r < 3; ++r) {
      double max = -1e30, sum = 0;
      for (int64_t i = 0; i < n; ++i) max = std::max<double>(max, values[r * n + i]);
      for (int64_t i = 0; i < n; ++i) sum += std::exp(values[r * n + i] - max);
      for (int64_t i = 0; i < n; ++i) {
        softmax.data<float>()[r * n + i] = static_cast<float>(std::exp(values[r * n + i] - max) / sum);
        log_softmax.data<float>()[r * n + i] = static_cast<float>(values[r * n + i] - max - std::log(sum));
      }
    }
    auto y = OpTest("Softmax", 13).Input("x", x).Output("y").Run();
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(TensorsClose(softmax, (*y)[0], 1e-5, 1e-12)) << "n=" << n;
    auto log_y = OpTest("LogSoftmax", 13).Input("x", x).Output("y").Run();
    ASSERT_TRUE(log_y.ok()) << log_y.status();
    EXPECT_TRUE(TensorsClose(log_softmax, (*log_y)[0], 1e-5, 1e-6)) << "n=" << n;
  }
}

// light_squeezenet's logits: all equal at ~1e10. Every output must be the same float, whatever its position
// in the row's vectors or tail.
TEST(SoftmaxTest, EqualLargeLogitsGiveBitEqualProbabilities) {
  const Tensor x = Tensor::FromVector<float>({1, 1000}, std::vector<float>(1000, 1.2345e10f));
  auto y = OpTest("Softmax", 13).Input("x", x).Output("y").Run();
  ASSERT_TRUE(y.ok()) << y.status();
  const float* p = (*y)[0].data<float>();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(std::bit_cast<uint32_t>(p[i]), std::bit_cast<uint32_t>(p[0])) << i;
  EXPECT_NEAR(p[0], 1e-3, 1e-9);
}

}  // namespace
}  // namespace onnxserve
