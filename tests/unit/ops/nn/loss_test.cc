#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor Labels(Shape shape, const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>(std::move(shape), v); }

// The spec's NegativeLogLikelihoodLoss examples: N, C, d1 = 2, 3, 2.
const Tensor kInput = Floats({2, 3, 2}, {1, 2, 2, 2, 3, 2, 0, 1, 2, 2, 1, 2});
const Tensor kTarget = Labels({2, 2}, {2, 1, 0, 2});
const Tensor kWeight = Floats({3}, {0.2f, 0.3f, 0.1f});

TEST(NllLossTest, NoneKeepsOneLossPerSample) {
  auto out = OpTest("NegativeLogLikelihoodLoss", 13).Input("input", kInput).Input("target", kTarget)
                 .Attr("reduction", std::string("none")).Output("loss").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {-3, -2, -0, -2}), (*out)[0]));
}

TEST(NllLossTest, WeightedSumAndMean) {
  auto sum = OpTest("NegativeLogLikelihoodLoss", 22).Input("input", kInput).Input("target", kTarget)
                 .Input("weight", kWeight).Attr("reduction", std::string("sum")).Output("loss").Run();
  auto mean = OpTest("NegativeLogLikelihoodLoss", 12).Input("input", kInput).Input("target", kTarget)
                  .Input("weight", kWeight).Output("loss").Run();
  ASSERT_TRUE(sum.ok() && mean.ok()) << sum.status() << mean.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(-1.1f), (*sum)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(-1.57f), (*mean)[0]));
}

// An ignored sample adds nothing to the loss nor to the mean's denominator.
TEST(NllLossTest, IgnoredSamplesLeaveTheMean) {
  auto out = OpTest("NegativeLogLikelihoodLoss", 13).Input("input", Floats({3, 2}, {-1, -2, -3, -4, -5, -6}))
                 .Input("target", Labels({3}, {0, 1, -1})).Attr("ignore_index", int64_t{-1}).Output("loss").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(2.5f), (*out)[0]));  // (1 + 4) / 2
}

TEST(NllLossTest, RejectsALabelOutsideTheClasses) {
  auto out = OpTest("NegativeLogLikelihoodLoss", 13).Input("input", Floats({1, 2}, {-1, -2}))
                 .Input("target", Labels({1}, {2})).Output("loss").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("out of range [0, 2)"), std::string::npos) << out.status();
}

TEST(NllLossTest, RejectsTargetsOfAnotherShape) {
  EXPECT_FALSE(OpTest("NegativeLogLikelihoodLoss", 13).Input("input", kInput).Input("target", Labels({2}, {0, 1}))
                   .Output("loss").Run().ok());
}

// Equal scores make every class equally likely: each loss is log(C) and log_prob is -log(C) everywhere.
TEST(SoftmaxCrossEntropyLossTest, UniformScoresCostLogC) {
  auto out = OpTest("SoftmaxCrossEntropyLoss", 13).Input("scores", Floats({2, 4}, {0, 0, 0, 0, 5, 5, 5, 5}))
                 .Input("labels", Labels({2}, {1, 3})).Attr("reduction", std::string("none"))
                 .Output("loss").Output("log_prob").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const float log4 = std::log(4.0f);
  EXPECT_TRUE(TensorsClose(Floats({2}, {log4, log4}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({2, 4}, std::vector<float>(8, -log4)), (*out)[1]));
}

// scores [N=1, C=2, d1=2]: softmax runs over the class axis for each d1 position.
TEST(SoftmaxCrossEntropyLossTest, SoftmaxOverTheClassAxisThenWeightedMean) {
  const Tensor scores = Floats({1, 2, 2}, {0, 1, std::log(3.0f), 1});
  // Position 0: p = [1/4, 3/4]; position 1: p = [1/2, 1/2].
  auto out = OpTest("SoftmaxCrossEntropyLoss", 12).Input("scores", scores).Input("labels", Labels({1, 2}, {0, 1}))
                 .Input("weights", Floats({2}, {1, 3})).Output("loss").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const float expected = (std::log(4.0f) * 1 + std::log(2.0f) * 3) / 4;
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(expected), (*out)[0]));
}

TEST(SoftmaxCrossEntropyLossTest, SumSkipsIgnoredLabels) {
  auto out = OpTest("SoftmaxCrossEntropyLoss", 13).Input("scores", Floats({2, 2}, {0, 0, 7, 1}))
                 .Input("labels", Labels({2}, {0, 5})).Attr("ignore_index", int64_t{5})
                 .Attr("reduction", std::string("sum")).Output("loss").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(std::log(2.0f)), (*out)[0]));
}

TEST(SoftmaxCrossEntropyLossTest, RejectsAnUnknownReduction) {
  EXPECT_FALSE(OpTest("SoftmaxCrossEntropyLoss", 13).Input("scores", Floats({1, 2}, {0, 0}))
                   .Input("labels", Labels({1}, {0})).Attr("reduction", std::string("max")).Output("loss").Run().ok());
}

}  // namespace
}  // namespace onnxserve
