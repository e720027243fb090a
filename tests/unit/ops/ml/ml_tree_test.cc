// Tree ensembles (ai.onnx.ml): the legacy TreeEnsembleRegressor encoding and TreeEnsemble-5 on one small
// forest whose outputs are worked out by hand, aggregation functions, missing values, post-transforms, and
// malformed trees rejected at load.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Two trees over features (a, b):
//   tree 0: a <= 0.5 ? {t0: 1} : {t0: 3, t1: 10}
//   tree 1: b < 2    ? {t0: -0.5} : {t0: 4}
// Tree 1 lists its nodes out of order with arbitrary ids, so its root must be found, not assumed.
OpTest LegacyRegressor(int opset, const std::string& aggregate = "SUM") {
  OpTest test("TreeEnsembleRegressor", opset, "ai.onnx.ml");
  test.Attr("n_targets", int64_t{2})
      .Attr("aggregate_function", aggregate)
      .Attr("nodes_treeids", std::vector<int64_t>{0, 0, 0, 1, 1, 1})
      .Attr("nodes_nodeids", std::vector<int64_t>{0, 1, 2, 5, 7, 6})
      .Attr("nodes_featureids", std::vector<int64_t>{0, 0, 0, 0, 1, 0})
      .Attr("nodes_modes", std::vector<std::string>{"BRANCH_LEQ", "LEAF", "LEAF", "LEAF", "BRANCH_LT", "LEAF"})
      .Attr("nodes_truenodeids", std::vector<int64_t>{1, 0, 0, 0, 5, 0})
      .Attr("nodes_falsenodeids", std::vector<int64_t>{2, 0, 0, 0, 6, 0})
      .Attr("target_treeids", std::vector<int64_t>{0, 0, 0, 1, 1})
      .Attr("target_nodeids", std::vector<int64_t>{1, 2, 2, 5, 6})
      .Attr("target_ids", std::vector<int64_t>{0, 0, 1, 0, 0})
      .Attr("target_weights", std::vector<float>{1, 3, 10, -0.5f, 4});
  test.Attr("nodes_values", std::vector<float>{0.5f, 0, 0, 0, 2, 0});
  return test;
}

Tensor Rows(const std::vector<float>& v) {
  return Tensor::FromVector<float>({static_cast<int64_t>(v.size() / 2), 2}, v);
}

absl::StatusOr<Tensor> RunOne(OpTest& test, Tensor x) {
  test.Input("X", std::move(x)).Output("Y");
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

TEST(TreeEnsembleRegressorTest, EachAggregateFunction) {
  const Tensor x = Rows({0.2f, 1, 0.9f, 3});
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"SUM", {0.5f, 0, 7, 10}}, {"AVERAGE", {0.25f, 0, 3.5f, 5}}, {"MIN", {-0.5f, 0, 3, 10}}, {"MAX", {1, 0, 4, 10}}};
  for (const auto& [aggregate, expected] : cases) {
    OpTest test = LegacyRegressor(1, aggregate);
    auto y = RunOne(test, x);
    ASSERT_TRUE(y.ok()) << aggregate << ": " << y.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, expected), *y)) << aggregate;
  }
}

TEST(TreeEnsembleRegressorTest, MissingValuesFollowTheirTrack) {
  OpTest falls_false = LegacyRegressor(1);
  auto y = RunOne(falls_false, Rows({kNaN, 3}));  // NaN <= 0.5 is false: 3 + 4 and 10
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Rows({7, 10}), *y));

  OpTest tracks_true = LegacyRegressor(1);
  tracks_true.Attr("nodes_missing_value_tracks_true", std::vector<int64_t>{1, 0, 0, 0, 0, 0});
  y = RunOne(tracks_true, Rows({kNaN, 3}));  // the root sends NaN to its true branch: 1 + 4
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Rows({5, 0}), *y));
}

TEST(TreeEnsembleRegressorTest, BaseValuesAndLogistic) {
  OpTest test = LegacyRegressor(1);
  test.Attr("base_values", std::vector<float>{-0.5f, 1}).Attr("post_transform", std::string("LOGISTIC"));
  auto y = RunOne(test, Rows({0.2f, 1}));  // scores 0.5 - 0.5 and 0 + 1
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Rows({0.5f, static_cast<float>(1 / (1 + std::exp(-1.0)))}), *y));
}

TEST(TreeEnsembleRegressorTest, Opset3TakesDoubleTensorsForWeights) {
  OpTest test = LegacyRegressor(3);
  test.Attr("target_weights_as_tensor", Tensor::FromVector<double>({5}, {1, 3, 10, -0.5, 4}))
      .Attr("base_values_as_tensor", Tensor::FromVector<double>({2}, {0.125, 0}));
  auto y = RunOne(test, Tensor::FromVector<int64_t>({1, 2}, {1, 3}));  // int64 features: 1 > 0.5
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Rows({7.125f, 10}), *y));
}

TEST(TreeEnsembleRegressorTest, MalformedTreesFailToLoadNamingTheFault) {
  OpTest cycle = LegacyRegressor(1);
  cycle.Attr("nodes_modes", std::vector<std::string>{"BRANCH_LEQ", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LT", "LEAF"});
  cycle.Attr("nodes_truenodeids", std::vector<int64_t>{1, 0, 0, 0, 5, 0});  // node 1 leads back to node 0
  cycle.Attr("target_nodeids", std::vector<int64_t>{2, 2, 2, 5, 6});
  auto y = RunOne(cycle, Rows({0, 0}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("tree 0 has 0 nodes no other node points at"), std::string::npos) << y.status();

  OpTest dangling = LegacyRegressor(1);
  dangling.Attr("nodes_falsenodeids", std::vector<int64_t>{9, 0, 0, 0, 6, 0});
  y = RunOne(dangling, Rows({0, 0}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("tree 0 has no node 9"), std::string::npos) << y.status();

  OpTest vote_on_branch = LegacyRegressor(1);
  vote_on_branch.Attr("target_nodeids", std::vector<int64_t>{0, 2, 2, 5, 6});
  y = RunOne(vote_on_branch, Rows({0, 0}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("not a LEAF"), std::string::npos) << y.status();

  OpTest narrow = LegacyRegressor(1);
  y = RunOne(narrow, Tensor::FromVector<float>({1, 1}, {0}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("X has 1 features, the trees read feature 1"), std::string::npos)
      << y.status();
}

TEST(TreeEnsembleRegressorTest, DeprecatedAtOpset5) {
  OpTest test = LegacyRegressor(5);
  auto y = RunOne(test, Rows({0, 0}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("use TreeEnsemble"), std::string::npos) << y.status();
}

// The same two trees in TreeEnsemble-5's encoding (one target per leaf, so tree 0's right leaf only adds 3
// to t0).
OpTest Ensemble5(int64_t post_transform, int64_t aggregate = 1) {
  OpTest test("TreeEnsemble", 5, "ai.onnx.ml");
  test.Attr("n_targets", int64_t{2})
      .Attr("aggregate_function", aggregate)
      .Attr("post_transform", post_transform)
      .Attr("tree_roots", std::vector<int64_t>{0, 1})
      .Attr("nodes_featureids", std::vector<int64_t>{0, 1})
      .Attr("nodes_modes", Tensor::FromVector<uint8_t>({2}, {0, 1}))
      .Attr("nodes_splits", Tensor::FromVector<float>({2}, {0.5f, 2}))
      .Attr("nodes_truenodeids", std::vector<int64_t>{0, 2})
      .Attr("nodes_trueleafs", std::vector<int64_t>{1, 1})
      .Attr("nodes_falsenodeids", std::vector<int64_t>{1, 3})
      .Attr("nodes_falseleafs", std::vector<int64_t>{1, 1})
      .Attr("leaf_targetids", std::vector<int64_t>{0, 0, 0, 0})
      .Attr("leaf_weights", Tensor::FromVector<float>({4}, {1, 3, -0.5f, 4}));
  return test;
}

TEST(TreeEnsembleTest, PostTransforms) {
  const double e7 = std::exp(7.0);
  const std::vector<std::pair<int64_t, std::vector<float>>> cases = {
      {0, {7, 0}},                                                                      // NONE
      {1, {static_cast<float>(e7 / (e7 + 1)), static_cast<float>(1 / (e7 + 1))}},      // SOFTMAX
      {2, {static_cast<float>(1 / (1 + std::exp(-7.0))), 0.5f}},                      // LOGISTIC
      {3, {1, 0}}};                                                                     // SOFTMAX_ZERO
  for (const auto& [transform, expected] : cases) {
    OpTest test = Ensemble5(transform);
    auto y = RunOne(test, Rows({0.9f, 3}));
    ASSERT_TRUE(y.ok()) << transform << ": " << y.status();
    EXPECT_TRUE(TensorsClose(Rows(expected), *y)) << "post_transform " << transform;
  }
}

TEST(TreeEnsembleTest, ProbitIsTheNormalQuantile) {
  OpTest test("TreeEnsemble", 5, "ai.onnx.ml");
  test.Attr("n_targets", int64_t{3})
      .Attr("post_transform", int64_t{4})
      .Attr("tree_roots", std::vector<int64_t>{0, 1, 2})
      .Attr("nodes_featureids", std::vector<int64_t>{0, 0, 0})
      .Attr("nodes_modes", Tensor::FromVector<uint8_t>({3}, {0, 0, 0}))
      .Attr("nodes_splits", Tensor::FromVector<double>({3}, {0, 0, 0}))
      .Attr("nodes_truenodeids", std::vector<int64_t>{0, 1, 2})
      .Attr("nodes_trueleafs", std::vector<int64_t>{1, 1, 1})
      .Attr("nodes_falsenodeids", std::vector<int64_t>{0, 1, 2})
      .Attr("nodes_falseleafs", std::vector<int64_t>{1, 1, 1})
      .Attr("leaf_targetids", std::vector<int64_t>{0, 1, 2})
      .Attr("leaf_weights", Tensor::FromVector<double>({3}, {0.975, 0.1, 0.001}));
  auto y = RunOne(test, Tensor::FromVector<double>({1, 1}, {0}));
  ASSERT_TRUE(y.ok()) << y.status();
  // Standard normal quantiles from tables.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({1, 3}, {1.959963984540054, -1.281551565544601,
                                                                -3.090232306167813}),
                           *y, 1e-9, 0));
}

TEST(TreeEnsembleTest, AverageOverTreesInFloat16) {
  OpTest test = Ensemble5(0, /*aggregate=*/0);
  auto y = RunOne(test, Tensor::FromVector<Float16>({1, 2}, {Float16(0.25f), Float16(3.f)}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<Float16>({1, 2}, {Float16(2.5f), Float16(0.f)}), *y));  // (1+4)/2
}

TEST(TreeEnsembleTest, RejectsChildrenOutOfRangeAndCycles) {
  OpTest out_of_range = Ensemble5(0);
  out_of_range.Attr("nodes_falsenodeids", std::vector<int64_t>{1, 7});
  auto y = RunOne(out_of_range, Rows({0, 0}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("tree node 1 has a child out of range"), std::string::npos) << y.status();

  OpTest cycle = Ensemble5(0);
  cycle.Attr("nodes_falseleafs", std::vector<int64_t>{0, 0}).Attr("nodes_falsenodeids", std::vector<int64_t>{1, 0});
  y = RunOne(cycle, Rows({0, 0}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("cycle"), std::string::npos) << y.status();
}

}  // namespace
}  // namespace onnxserve
