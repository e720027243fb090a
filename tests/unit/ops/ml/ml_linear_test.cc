// LinearRegressor and LinearClassifier (ai.onnx.ml 1): scores X * coefficients^T + intercepts worked out by
// hand, post-transforms, labels (int64 and string, argmax and the one-score binary form), and attribute
// sizes that disagree rejected at load.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::FailsWith;
using testing::OpTest;
using testing::ScopedSizeLimits;
using testing::TensorsClose;

double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

OpTest Regressor() {
  OpTest test("LinearRegressor", 1, "ai.onnx.ml");
  test.Attr("targets", int64_t{2})
      .Attr("coefficients", std::vector<float>{1, 2, -1, 0.5f})
      .Attr("intercepts", std::vector<float>{0.5f, -1})
      .Output("Y");
  return test;
}

TEST(LinearRegressorTest, OneRowOfCoefficientsPerTarget) {
  OpTest test = Regressor();
  test.Input("X", Tensor::FromVector<int64_t>({2, 2}, {1, 2, 3, -1}));
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // [1, 2]: 1 + 4 + 0.5, -1 + 1 - 1; [3, -1]: 3 - 2 + 0.5, -3 - 0.5 - 1
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {5.5f, -1, 1.5f, -4.5f}), (*out)[0], 1e-6));
}

TEST(LinearRegressorTest, OneRowAsAVectorAndLogistic) {
  OpTest test("LinearRegressor", 1, "ai.onnx.ml");
  test.Attr("coefficients", std::vector<float>{2, -1}).Attr("post_transform", std::string("LOGISTIC"));
  test.Input("X", Tensor::FromVector<double>({2}, {1, 0.5})).Output("Y");
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1}, {static_cast<float>(Sigmoid(1.5))}), (*out)[0], 1e-6));
}

TEST(LinearRegressorTest, SizesThatDisagreeFailNamingTheAttribute) {
  OpTest odd = Regressor();
  odd.Attr("coefficients", std::vector<float>{1, 2, 3}).Input("X", Tensor::FromVector<float>({1, 2}, {1, 2}));
  EXPECT_TRUE(FailsWith(odd.Run(), "coefficients has 3 values for 2 vectors"));

  OpTest intercepts = Regressor();
  intercepts.Attr("intercepts", std::vector<float>{1, 2, 3}).Input("X", Tensor::FromVector<float>({1, 2}, {1, 2}));
  EXPECT_TRUE(FailsWith(intercepts.Run(), "intercepts has 3 values, expected 2"));

  OpTest no_targets = Regressor();
  no_targets.Attr("targets", int64_t{0}).Input("X", Tensor::FromVector<float>({1, 2}, {1, 2}));
  EXPECT_TRUE(FailsWith(no_targets.Run(), "coefficients has 4 values for 0 vectors"));

  OpTest wide = Regressor();
  wide.Input("X", Tensor::FromVector<float>({1, 3}, {1, 2, 3}));
  EXPECT_TRUE(FailsWith(wide.Run(), "has 3 features, the model 2"));
}

// Three classes a, b, c over two features: scores (x0, x1, -x0 - x1 + 0.5).
OpTest ThreeClasses(const std::string& transform) {
  OpTest test("LinearClassifier", 1, "ai.onnx.ml");
  test.Attr("classlabels_strings", std::vector<std::string>{"a", "b", "c"})
      .Attr("coefficients", std::vector<float>{1, 0, 0, 1, -1, -1})
      .Attr("intercepts", std::vector<float>{0, 0, 0.5f})
      .Attr("post_transform", transform)
      .Output("Y")
      .Output("Z");
  return test;
}

TEST(LinearClassifierTest, MulticlassArgmaxAndSoftmax) {
  OpTest test = ThreeClasses("SOFTMAX");
  test.Input("X", Tensor::FromVector<float>({2, 2}, {2, 1, -1, -2}));
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2}, {"a", "c"}), (*out)[0]));
  // Row 0 scores (2, 1, -2.5), row 1 (-1, -2, 3.5): softmax by hand.
  const double s0 = 1 + std::exp(-1.0) + std::exp(-4.5), s1 = std::exp(-4.5) + std::exp(-5.5) + 1;
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {static_cast<float>(1 / s0),
                                                              static_cast<float>(std::exp(-1.0) / s0),
                                                              static_cast<float>(std::exp(-4.5) / s0),
                                                              static_cast<float>(std::exp(-4.5) / s1),
                                                              static_cast<float>(std::exp(-5.5) / s1),
                                                              static_cast<float>(1 / s1)}),
                           (*out)[1], 1e-6));
}

TEST(LinearClassifierTest, ScoresAreOptional) {
  OpTest test("LinearClassifier", 1, "ai.onnx.ml");
  test.Attr("classlabels_ints", std::vector<int64_t>{4, 5})
      .Attr("coefficients", std::vector<float>{1, -1})
      .Attr("intercepts", std::vector<float>{0, 0})
      .Input("X", Tensor::FromVector<int32_t>({2, 1}, {3, -3}))
      .Output("Y");
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {4, 5}), (*out)[0]));
}

// One row of weights for two classes: s = x0 - x1 + 0.5 favours the second class.
OpTest OneScoreBinary(const std::string& transform) {
  OpTest test("LinearClassifier", 1, "ai.onnx.ml");
  test.Attr("classlabels_ints", std::vector<int64_t>{7, 9})
      .Attr("coefficients", std::vector<float>{1, -1})
      .Attr("intercepts", std::vector<float>{0.5f})
      .Attr("post_transform", transform)
      .Input("X", Tensor::FromVector<float>({2, 2}, {1, 2, 3, 1}))
      .Output("Y")
      .Output("Z");
  return test;
}

TEST(LinearClassifierTest, OneScoreForTwoClassesExpandsToMinusSAndS) {
  auto out = OneScoreBinary("NONE").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {7, 9}), (*out)[0]));  // s = -0.5, 2.5
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {0.5f, -0.5f, -2.5f, 2.5f}), (*out)[1], 1e-6));

  out = OneScoreBinary("LOGISTIC").Run();  // LogisticRegression's predict_proba: [1 - p, p]
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {static_cast<float>(Sigmoid(0.5)),
                                                              static_cast<float>(Sigmoid(-0.5)),
                                                              static_cast<float>(Sigmoid(-2.5)),
                                                              static_cast<float>(Sigmoid(2.5))}),
                           (*out)[1], 1e-6));
}

TEST(LinearClassifierTest, LabelsAndRowsThatDisagreeFailNamingTheAttribute) {
  OpTest both = ThreeClasses("NONE");
  both.Attr("classlabels_ints", std::vector<int64_t>{1, 2, 3}).Input("X", Tensor::FromVector<float>({1, 2}, {1, 2}));
  EXPECT_TRUE(FailsWith(both.Run(), "exactly one of classlabels_strings and classlabels_ints"));

  OpTest two_rows = ThreeClasses("NONE");
  two_rows.Attr("intercepts", std::vector<float>{0, 0}).Input("X", Tensor::FromVector<float>({1, 3}, {1, 2, 3}));
  EXPECT_TRUE(FailsWith(two_rows.Run(), "intercepts has 2 values for 3 class labels"));

  OpTest transform = ThreeClasses("SQUASH");
  transform.Input("X", Tensor::FromVector<float>({1, 2}, {1, 2}));
  EXPECT_TRUE(FailsWith(transform.Run(), "post_transform \"SQUASH\""));
}

// Each row of Y is a copy of a class label from the model, and a string tensor's byte size counts only its
// string objects: a 4 KiB label chosen for 1024 rows is 4 MiB of characters, past a 1 MiB limit.
TEST(LinearClassifierTest, ALongLabelOverManyRowsMustFitTheLimits) {
  const auto run = [](int64_t rows) {
    OpTest test("LinearClassifier", 1, "ai.onnx.ml");
    test.Attr("classlabels_strings", std::vector<std::string>{std::string(4096, 'x'), "b"})
        .Attr("coefficients", std::vector<float>{1, -1})
        .Attr("intercepts", std::vector<float>{0, 0})
        .Input("X", Tensor::FromVector<float>({rows, 1}, std::vector<float>(rows, 1)))  // scores (1, -1)
        .Output("Y");
    return test.Run().status();
  };
  ScopedSizeLimits limits(1 << 20);
  EXPECT_EQ(run(1024).code(), absl::StatusCode::kResourceExhausted) << run(1024);
  EXPECT_TRUE(run(200).ok()) << run(200);  // 800 KiB fits
}

}  // namespace
}  // namespace onnxserve
