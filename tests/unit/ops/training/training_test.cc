// ai.onnx.preview.training optimizers against their pseudo code in Operators.md, worked by hand.
#include <cmath>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

constexpr const char* kDomain = "ai.onnx.preview.training";

Tensor F(std::vector<float> v) { return Tensor::FromVector<float>({static_cast<int64_t>(v.size())}, v); }

TEST(AdagradTest, DecaysTheRateWithTheUpdateCount) {
  // r = 0.5 / (1 + 1 * 1) = 0.25; H_new = 0 + 2^2 = 4; X_new = 1 - 0.25 * 2 / 2 = 0.75.
  auto out = OpTest("Adagrad", 1, kDomain)
                 .Input("R", Tensor::Scalar(0.5f))
                 .Input("T", Tensor::Scalar(int64_t{1}))
                 .Input("X", F({1}))
                 .Input("G", F({2}))
                 .Input("H", F({0}))
                 .Attr("decay_factor", 1.0f)
                 .Output("X_new")
                 .Output("H_new")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({0.75f}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(F({4}), (*out)[1]));
}

TEST(MomentumTest, FirstStepUsesBetaOfOne) {
  // T = 0: V_new = 0.5 * 4 + 1 * 2 = 4; X_new = 1 - 0.1 * 4 = 0.6.
  auto out = OpTest("Momentum", 1, kDomain)
                 .Input("R", Tensor::Scalar(0.1f))
                 .Input("T", Tensor::Scalar(int64_t{0}))
                 .Input("X", F({1}))
                 .Input("G", F({2}))
                 .Input("V", F({4}))
                 .Attr("alpha", 0.5f)
                 .Attr("beta", 0.1f)
                 .Attr("norm_coefficient", 0.0f)
                 .Attr("mode", std::string("standard"))
                 .Output("X_new")
                 .Output("V_new")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({0.6f}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(F({4}), (*out)[1]));
}

TEST(MomentumTest, StandardAndNesterovDifferInTheStep) {
  // T = 1: V_new = 0.5 * 4 + 0.1 * 2 = 2.2; standard X_new = 1 - 0.1 * 2.2 = 0.78;
  // nesterov X_new = 1 - 0.1 * (2 + 0.5 * 2.2) = 0.69.
  for (const auto& [mode, x_new] : {std::pair<std::string, float>{"standard", 0.78f}, {"nesterov", 0.69f}}) {
    auto out = OpTest("Momentum", 1, kDomain)
                   .Input("R", Tensor::Scalar(0.1f))
                   .Input("T", Tensor::Scalar(int64_t{1}))
                   .Input("X", F({1}))
                   .Input("G", F({2}))
                   .Input("V", F({4}))
                   .Attr("alpha", 0.5f)
                   .Attr("beta", 0.1f)
                   .Attr("norm_coefficient", 0.0f)
                   .Attr("mode", mode)
                   .Output("X_new")
                   .Output("V_new")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(F({x_new}), (*out)[0])) << mode;
    EXPECT_TRUE(TensorsClose(F({2.2f}), (*out)[1])) << mode;
  }
}

TEST(MomentumTest, RejectsAnUnknownMode) {
  auto out = OpTest("Momentum", 1, kDomain)
                 .Input("R", Tensor::Scalar(0.1f))
                 .Input("T", Tensor::Scalar(int64_t{1}))
                 .Input("X", F({1}))
                 .Input("G", F({2}))
                 .Input("V", F({4}))
                 .Attr("alpha", 0.5f)
                 .Attr("beta", 0.1f)
                 .Attr("norm_coefficient", 0.0f)
                 .Attr("mode", std::string("heavy_ball"))
                 .Output("X_new")
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("mode"), std::string::npos) << out.status();
}

TEST(AdamTest, BiasCorrectionAndPostRegularization) {
  // T = 1, alpha = beta = 0.5: V_new = 1, H_new = 2, R_adjusted = 1 * sqrt(0.5) / 0.5 = sqrt(2);
  // X_new = 3 - sqrt(2) * 1 / sqrt(2) = 2; X_final = (1 - 0.5) * 2 = 1.
  auto out = OpTest("Adam", 1, kDomain)
                 .Input("R", Tensor::Scalar(1.0f))
                 .Input("T", Tensor::Scalar(int64_t{1}))
                 .Input("X", F({3}))
                 .Input("G", F({2}))
                 .Input("V", F({0}))
                 .Input("H", F({0}))
                 .Attr("alpha", 0.5f)
                 .Attr("beta", 0.5f)
                 .Attr("norm_coefficient_post", 0.5f)
                 .Output("X_new")
                 .Output("V_new")
                 .Output("H_new")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({1}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(F({1}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(F({2}), (*out)[2]));
}

TEST(AdamTest, OptimizesSeveralTensorsIndependently) {
  // T = 0 (no bias correction), alpha = beta = 0.5, R = 1, norm_coefficient = 1 so G_regularized = X + G.
  // X1 = 1, G1 = 1: g = 2, V = 1, H = 2, X_new = 1 - 1 / sqrt(2).
  // X2 = [0, 2], G2 = [2, -4]: g = [2, -2], V = [1, -1], H = [2, 2], X_new = [-1/sqrt(2), 2 + 1/sqrt(2)].
  const float r = 1 / std::sqrt(2.0f);
  auto out = OpTest("Adam", 1, kDomain)
                 .Input("R", Tensor::Scalar(1.0f))
                 .Input("T", Tensor::Scalar(int64_t{0}))
                 .Input("X1", F({1}))
                 .Input("X2", F({0, 2}))
                 .Input("G1", F({1}))
                 .Input("G2", F({2, -4}))
                 .Input("V1", F({0}))
                 .Input("V2", F({0, 0}))
                 .Input("H1", F({0}))
                 .Input("H2", F({0, 0}))
                 .Attr("alpha", 0.5f)
                 .Attr("beta", 0.5f)
                 .Attr("norm_coefficient", 1.0f)
                 .Output("X1_new")
                 .Output("X2_new")
                 .Output("V1_new")
                 .Output("V2_new")
                 .Output("H1_new")
                 .Output("H2_new")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({1 - r}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(F({-r, 2 + r}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(F({1}), (*out)[2]));
  EXPECT_TRUE(TensorsClose(F({1, -1}), (*out)[3]));
  EXPECT_TRUE(TensorsClose(F({2}), (*out)[4]));
  EXPECT_TRUE(TensorsClose(F({2, 2}), (*out)[5]));
}

TEST(AdagradTest, InputsMustComeInWholeGroups) {
  auto out = OpTest("Adagrad", 1, kDomain)
                 .Input("R", Tensor::Scalar(0.5f))
                 .Input("T", Tensor::Scalar(int64_t{1}))
                 .Input("X", F({1}))
                 .Input("G", F({2}))
                 .Output("X_new")
                 .Run();
  ASSERT_FALSE(out.ok());
}

}  // namespace
}  // namespace onnxserve
