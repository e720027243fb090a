// TreeEnsembleClassifier (ai.onnx.ml 1, 3; deprecated by 5): class votes summed per class with base values,
// labels by argmax, the one-score binary forms converters emit (probability [1 - s, s], margin [-s, s]
// through LOGISTIC), worked out by hand on two stumps.
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

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
double Sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// Two stumps: tree 0 splits x0 <= 0.5 (nodes 1 true, 2 false), tree 1 splits x1 < 2 (nodes 1 true, 2 false).
OpTest Stumps(int opset = 1) {
  OpTest test("TreeEnsembleClassifier", opset, "ai.onnx.ml");
  test.Attr("nodes_treeids", std::vector<int64_t>{0, 0, 0, 1, 1, 1})
      .Attr("nodes_nodeids", std::vector<int64_t>{0, 1, 2, 0, 1, 2})
      .Attr("nodes_featureids", std::vector<int64_t>{0, 0, 0, 1, 0, 0})
      .Attr("nodes_modes", std::vector<std::string>{"BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF", "LEAF"})
      .Attr("nodes_values", std::vector<float>{0.5f, 0, 0, 2, 0, 0})
      .Attr("nodes_truenodeids", std::vector<int64_t>{1, 0, 0, 1, 0, 0})
      .Attr("nodes_falsenodeids", std::vector<int64_t>{2, 0, 0, 2, 0, 0})
      .Output("Y")
      .Output("Z");
  return test;
}

// Three classes: tree 0 votes {a: 0.5, b: 0.5} or {c: 1}; tree 1 votes {a: 1} or {b: 0.25, c: 0.25}.
OpTest ThreeClasses() {
  OpTest test = Stumps();
  test.Attr("classlabels_strings", std::vector<std::string>{"a", "b", "c"})
      .Attr("class_treeids", std::vector<int64_t>{0, 0, 0, 1, 1, 1})
      .Attr("class_nodeids", std::vector<int64_t>{1, 1, 2, 1, 2, 2})
      .Attr("class_ids", std::vector<int64_t>{0, 1, 2, 0, 1, 2})
      .Attr("class_weights", std::vector<float>{0.5f, 0.5f, 1, 1, 0.25f, 0.25f});
  return test;
}

TEST(TreeEnsembleClassifierTest, VotesSummedPerClassWithBaseValues) {
  OpTest test = ThreeClasses();
  test.Attr("base_values", std::vector<float>{0, 0.125f, 0});
  test.Input("X", Floats({3, 2}, {0, 0, 0, 5, 1, 5}));
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // (0, 0): a 0.5 + 1, b 0.5 + 0.125; (0, 5): a 0.5, b 0.5 + 0.25 + 0.125, c 0.25; (1, 5): b 0.375, c 1.25.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({3}, {"a", "b", "c"}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({3, 3}, {1.5f, 0.625f, 0, 0.5f, 0.875f, 0.25f, 0, 0.375f, 1.25f}), (*out)[1], 1e-6));
}

TEST(TreeEnsembleClassifierTest, SoftmaxAfterTheLabelIsChosen) {
  OpTest test = ThreeClasses();
  test.Attr("post_transform", std::string("SOFTMAX")).Input("X", Floats({1, 2}, {1, 5}));
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const double sum = 1 + std::exp(0.25) + std::exp(1.25);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({1}, {"c"}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 3}, {static_cast<float>(1 / sum), static_cast<float>(std::exp(0.25) / sum),
                                           static_cast<float>(std::exp(1.25) / sum)}),
                           (*out)[1], 1e-6));
}

// Two classes scored by one number in class id 0, as converters write binary models.
OpTest OneScore(const std::vector<float>& weights, int opset = 3) {
  OpTest test = Stumps(opset);
  test.Attr("classlabels_int64s", std::vector<int64_t>{10, 20})
      .Attr("class_treeids", std::vector<int64_t>{0, 0, 1, 1})
      .Attr("class_nodeids", std::vector<int64_t>{1, 2, 1, 2})
      .Attr("class_ids", std::vector<int64_t>{0, 0, 0, 0})
      .Attr("class_weights", weights);
  return test;
}

TEST(TreeEnsembleClassifierTest, OneProbabilityForTwoClassesGivesOneMinusSAndS) {
  // A random forest of two trees: P(20) averaged, 0.1 or 0.4 from tree 0, 0.05 or 0.35 from tree 1.
  OpTest test = OneScore({0.1f, 0.4f, 0.05f, 0.35f});
  test.Input("X", Floats({2, 2}, {0, 0, 1, 5}));  // s = 0.15, 0.75
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {10, 20}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {0.85f, 0.15f, 0.25f, 0.75f}), (*out)[1], 1e-6));
}

TEST(TreeEnsembleClassifierTest, OneMarginForTwoClassesGoesThroughLogistic) {
  // Gradient boosting: margins summed onto one base value, then LOGISTIC of [-s, s].
  OpTest test = OneScore({-1, 0.5f, 0.25f, -0.75f});
  test.Attr("base_values", std::vector<float>{0.125f}).Attr("post_transform", std::string("LOGISTIC"));
  test.Input("X", Floats({2, 2}, {0, 0, 1, 0}));  // s = -1 + 0.25 + 0.125, 0.5 + 0.25 + 0.125
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {10, 20}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {static_cast<float>(Sigmoid(0.625)), static_cast<float>(Sigmoid(-0.625)),
                                           static_cast<float>(Sigmoid(-0.875)), static_cast<float>(Sigmoid(0.875))}),
                           (*out)[1], 1e-6));
}

// Each row of Y is a copy of a class label from the model: a 4 KiB label chosen for 1024 rows is 4 MiB of
// characters, past a 1 MiB limit (the output's byte size counts only its 1024 string objects).
TEST(TreeEnsembleClassifierTest, ALongLabelOverManyRowsMustFitTheLimits) {
  const auto run = [](int64_t rows) {
    OpTest test = ThreeClasses();
    test.Attr("classlabels_strings", std::vector<std::string>{std::string(4096, 'x'), "b", "c"});
    test.Input("X", Floats({rows, 2}, std::vector<float>(2 * rows, 0)));  // (0, 0) votes for class 0
    return test.Run().status();
  };
  ScopedSizeLimits limits(1 << 20);
  EXPECT_EQ(run(1024).code(), absl::StatusCode::kResourceExhausted) << run(1024);
  EXPECT_TRUE(run(200).ok()) << run(200);  // 800 KiB fits
}

TEST(TreeEnsembleClassifierTest, BadClassesAndBaseValuesFailToLoad) {
  OpTest outside = ThreeClasses();
  outside.Attr("class_ids", std::vector<int64_t>{0, 1, 2, 0, 1, 3}).Input("X", Floats({1, 2}, {0, 0}));
  EXPECT_TRUE(FailsWith(outside.Run(), "adds to target 3, outside [0, 3)"));

  OpTest base = ThreeClasses();
  base.Attr("base_values", std::vector<float>{1, 2}).Input("X", Floats({1, 2}, {0, 0}));
  EXPECT_TRUE(FailsWith(base.Run(), "base_values has 2 values, expected 3"));

  OpTest no_labels = ThreeClasses();
  no_labels.Attr("classlabels_int64s", std::vector<int64_t>{1, 2, 3}).Input("X", Floats({1, 2}, {0, 0}));
  EXPECT_TRUE(FailsWith(no_labels.Run(), "exactly one of classlabels_strings and classlabels_int64s"));

  OpTest deprecated = OneScore({0, 0, 0, 0}, 5);
  deprecated.Input("X", Floats({1, 2}, {0, 0}));
  EXPECT_TRUE(FailsWith(deprecated.Run(), "TreeEnsembleClassifier is deprecated since ai.onnx.ml opset 5"));
}

}  // namespace
}  // namespace onnxserve
