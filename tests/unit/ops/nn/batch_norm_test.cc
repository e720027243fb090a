// BatchNormalization: inference math, and what each version makes of training (is_test, output count,
// training_mode), non-spatial statistics and mixed parameter types. Expected values are worked by hand.
#include <cmath>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor F(Shape shape, std::vector<float> v) { return Tensor::FromVector<float>(std::move(shape), v); }

// X [1, 2, 1, 2]; channel 0: (x - 1) / 2 * 1 + 0, channel 1: (x - 3) / 1 * 2 + 1 (epsilon 0).
OpTest InferenceCase(int opset) {
  return OpTest("BatchNormalization", opset)
      .Input("x", F({1, 2, 1, 2}, {1, 2, 3, 4}))
      .Input("scale", F({2}, {1, 2}))
      .Input("b", F({2}, {0, 1}))
      .Input("mean", F({2}, {1, 3}))
      .Input("var", F({2}, {4, 1}))
      .Attr("epsilon", 0.0f)
      .Output("y");
}
const Tensor kInferenceY = F({1, 2, 1, 2}, {0, 0.5f, 1, 3});

// X [2, 1, 1, 2] = 1, 3, 5, 7: batch mean 4, population variance 5. scale 2, B 1, momentum 0.5 from
// input mean 0 and var 1: running mean 2, running var 3.
OpTest TrainingCase(int opset) {
  return OpTest("BatchNormalization", opset)
      .Input("x", F({2, 1, 1, 2}, {1, 3, 5, 7}))
      .Input("scale", F({1}, {2}))
      .Input("b", F({1}, {1}))
      .Input("mean", F({1}, {0}))
      .Input("var", F({1}, {1}))
      .Attr("epsilon", 0.0f)
      .Attr("momentum", 0.5f);
}
Tensor TrainingY() {
  const float k = 2 / std::sqrt(5.0f);
  return F({2, 1, 1, 2}, {-3 * k + 1, -k + 1, k + 1, 3 * k + 1});
}

TEST(BatchNormTest, InferenceInEveryVersion) {
  for (int opset : {7, 9, 14, 15}) {
    auto out = InferenceCase(opset).Run();
    ASSERT_TRUE(out.ok()) << "opset " << opset << ": " << out.status();
    EXPECT_TRUE(TensorsClose(kInferenceY, (*out)[0])) << "opset " << opset;
  }
  for (int opset : {1, 6}) {
    auto out = InferenceCase(opset).Attr("is_test", int64_t{1}).Run();
    ASSERT_TRUE(out.ok()) << "opset " << opset << ": " << out.status();
    EXPECT_TRUE(TensorsClose(kInferenceY, (*out)[0])) << "opset " << opset;
  }
}

TEST(BatchNormTest, ConstantParametersFoldedAtLoadGiveTheSameResult) {
  auto out = OpTest("BatchNormalization", 15)
                 .Input("x", F({1, 2, 1, 2}, {1, 2, 3, 4}))
                 .Constant("scale", F({2}, {1, 2}))
                 .Constant("b", F({2}, {0, 1}))
                 .Constant("mean", F({2}, {1, 3}))
                 .Constant("var", F({2}, {4, 1}))
                 .Attr("epsilon", 0.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(kInferenceY, (*out)[0]));
}

TEST(BatchNorm1Test, IsTestZeroTrainsAndFillsAllFiveOutputs) {
  for (int opset : {1, 6}) {
    OpTest op = TrainingCase(opset).Output("y").Output("mean_out").Output("var_out").Output("saved_mean").Output(
        "saved_var");
    if (opset == 1) op.Attr("consumed_inputs", std::vector<int64_t>{0, 0, 0, 1, 1});
    auto out = op.Run();
    ASSERT_TRUE(out.ok()) << "opset " << opset << ": " << out.status();
    EXPECT_TRUE(TensorsClose(TrainingY(), (*out)[0])) << "opset " << opset;
    EXPECT_TRUE(TensorsClose(F({1}, {2}), (*out)[1]));
    EXPECT_TRUE(TensorsClose(F({1}, {3}), (*out)[2]));
    EXPECT_TRUE(TensorsClose(F({1}, {4}), (*out)[3]));
    EXPECT_TRUE(TensorsClose(F({1}, {5}), (*out)[4]));
  }
}

TEST(BatchNorm7Test, TrainsWhenTheNodeAsksForTheExtraOutputs) {
  for (int opset : {7, 9}) {
    auto train = TrainingCase(opset).Output("y").Output("mean_out").Output("var_out").Run();
    ASSERT_TRUE(train.ok()) << "opset " << opset << ": " << train.status();
    EXPECT_TRUE(TensorsClose(TrainingY(), (*train)[0])) << "opset " << opset;
    EXPECT_TRUE(TensorsClose(F({1}, {2}), (*train)[1]));
    EXPECT_TRUE(TensorsClose(F({1}, {3}), (*train)[2]));

    // Y alone is the spec's test-mode case: the given mean 0 and var 1 apply, y = 2x + 1.
    auto test = TrainingCase(opset).Output("y").Run();
    ASSERT_TRUE(test.ok()) << test.status();
    EXPECT_TRUE(TensorsClose(F({2, 1, 1, 2}, {3, 7, 11, 15}), (*test)[0])) << "opset " << opset;
  }
}

// X [2, 2, 1, 2]: four features (C x D1 x D2); n0 = 1, 2, 3, 4 and n1 = 3, 6, 9, 12.
Tensor NonSpatialX() { return F({2, 2, 1, 2}, {1, 2, 3, 4, 3, 6, 9, 12}); }

TEST(BatchNorm7Test, NonSpatialInferenceUsesOneStatisticPerFeature) {
  auto out = OpTest("BatchNormalization", 7)
                 .Input("x", NonSpatialX())
                 .Input("scale", F({2, 1, 2}, {1, 1, 1, 1}))
                 .Input("b", F({2, 1, 2}, {0, 0, 0, 0}))
                 .Input("mean", F({2, 1, 2}, {1, 2, 3, 4}))
                 .Input("var", F({2, 1, 2}, {1, 1, 1, 1}))
                 .Attr("spatial", int64_t{0})
                 .Attr("epsilon", 0.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({2, 2, 1, 2}, {0, 0, 0, 0, 2, 4, 6, 8}), (*out)[0]));
}

TEST(BatchNorm7Test, NonSpatialTrainingAveragesOverTheBatchOnly) {
  // Per feature: mean (1+3)/2.. = 2, 4, 6, 8 and population variance 1, 4, 9, 16, so y = -1 then +1.
  auto out = OpTest("BatchNormalization", 7)
                 .Input("x", NonSpatialX())
                 .Input("scale", F({2, 1, 2}, {1, 1, 1, 1}))
                 .Input("b", F({2, 1, 2}, {0, 0, 0, 0}))
                 .Input("mean", F({2, 1, 2}, {0, 0, 0, 0}))
                 .Input("var", F({2, 1, 2}, {0, 0, 0, 0}))
                 .Attr("spatial", int64_t{0})
                 .Attr("epsilon", 0.0f)
                 .Attr("momentum", 0.0f)
                 .Output("y")
                 .Output("mean_out")
                 .Output("var_out")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({2, 2, 1, 2}, {-1, -1, -1, -1, 1, 1, 1, 1}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(F({2, 1, 2}, {2, 4, 6, 8}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(F({2, 1, 2}, {1, 4, 9, 16}), (*out)[2]));
}

TEST(BatchNorm7Test, SpatialParametersMustBePerChannel) {
  auto wrong = OpTest("BatchNormalization", 7)
                   .Input("x", NonSpatialX())
                   .Input("scale", F({2, 1, 2}, {1, 1, 1, 1}))
                   .Input("b", F({2, 1, 2}, {0, 0, 0, 0}))
                   .Input("mean", F({2, 1, 2}, {1, 2, 3, 4}))
                   .Input("var", F({2, 1, 2}, {1, 1, 1, 1}))
                   .Output("y")
                   .Run();
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("scale"), std::string::npos) << wrong.status();
}

TEST(BatchNorm9Test, RankOneInputIsOneChannel) {
  auto out = OpTest("BatchNormalization", 9)
                 .Input("x", F({3}, {1, 2, 3}))
                 .Input("scale", F({1}, {2}))
                 .Input("b", F({1}, {1}))
                 .Input("mean", F({1}, {2}))
                 .Input("var", F({1}, {1}))
                 .Attr("epsilon", 0.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({3}, {-1, 1, 3}), (*out)[0]));
}

TEST(BatchNorm14Test, TrainingModeReturnsRunningStatistics) {
  auto out = TrainingCase(14).Attr("training_mode", int64_t{1}).Output("y").Output("rm").Output("rv").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(TrainingY(), (*out)[0]));
  EXPECT_TRUE(TensorsClose(F({1}, {2}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(F({1}, {3}), (*out)[2]));
}

TEST(BatchNorm14Test, RunningOutputsAreInvalidOutsideTraining) {
  auto out = TrainingCase(14).Output("y").Output("rm").Output("rv").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("training_mode"), std::string::npos) << out.status();
}

TEST(BatchNorm15Test, StatisticsMayHaveAnotherTypeThanX) {
  auto out = OpTest("BatchNormalization", 15)
                 .Input("x", F({2, 1, 1, 2}, {1, 3, 5, 7}))
                 .Input("scale", F({1}, {2}))
                 .Input("b", F({1}, {1}))
                 .Input("mean", Tensor::FromVector<double>({1}, {0}))
                 .Input("var", Tensor::FromVector<double>({1}, {1}))
                 .Attr("epsilon", 0.0f)
                 .Attr("momentum", 0.5f)
                 .Attr("training_mode", int64_t{1})
                 .Output("y")
                 .Output("rm")
                 .Output("rv")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(TrainingY(), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({1}, {2}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({1}, {3}), (*out)[2]));
}

}  // namespace
}  // namespace onnxserve
