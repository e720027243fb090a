// SVMRegressor and SVMClassifier (ai.onnx.ml 1) in libsvm's layout: kernels, one-vs-one decision values and
// votes worked out by hand on tiny models, Platt probabilities coupled pairwise, the linear (no support
// vector) forms, and hostile attribute sizes rejected at load with the attribute named.
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

// Support vectors (0, 0) and (1, 1) weighted 1 and -2, rho 0.5.
OpTest RbfRegressor() {
  OpTest test("SVMRegressor", 1, "ai.onnx.ml");
  test.Attr("kernel_type", std::string("RBF"))
      .Attr("kernel_params", std::vector<float>{0.5f, 0, 3})
      .Attr("n_supports", int64_t{2})
      .Attr("support_vectors", std::vector<float>{0, 0, 1, 1})
      .Attr("coefficients", std::vector<float>{1, -2})
      .Attr("rho", std::vector<float>{0.5f})
      .Output("Y");
  return test;
}

TEST(SVMRegressorTest, KernelsAgainstTheSupportVectors) {
  OpTest rbf = RbfRegressor();
  rbf.Input("X", Floats({2, 2}, {1, 0, 1, 1}));
  auto out = rbf.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // (1, 0) is at squared distance 1 from both vectors; (1, 1) at 2 from the first and 0 from the second.
  const double e1 = std::exp(-0.5), e2 = std::exp(-1.0);
  EXPECT_TRUE(TensorsClose(Floats({2, 1}, {static_cast<float>(e1 - 2 * e1 + 0.5), static_cast<float>(e2 - 2 + 0.5)}),
                           (*out)[0], 1e-6));

  OpTest poly = RbfRegressor();  // (0.5 x.sv + 1)^3
  poly.Attr("kernel_type", std::string("POLY")).Attr("kernel_params", std::vector<float>{0.5f, 1, 3});
  poly.Input("X", Tensor::FromVector<int32_t>({1, 2}, {2, 2}));
  out = poly.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1}, {1 - 2 * 27 + 0.5f}), (*out)[0], 1e-6));

  OpTest sigmoid = RbfRegressor();  // tanh(0.5 x.sv - 1)
  sigmoid.Attr("kernel_type", std::string("SIGMOID")).Attr("kernel_params", std::vector<float>{0.5f, -1, 0});
  sigmoid.Input("X", Floats({1, 2}, {2, 2}));
  out = sigmoid.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1}, {static_cast<float>(std::tanh(-1.0) - 2 * std::tanh(1.0) + 0.5)}),
                           (*out)[0], 1e-6));
}

TEST(SVMRegressorTest, LinearAndOneClass) {
  OpTest linear("SVMRegressor", 1, "ai.onnx.ml");
  linear.Attr("coefficients", std::vector<float>{2, 3}).Attr("rho", std::vector<float>{1});
  linear.Input("X", Tensor::FromVector<double>({2}, {1, -1})).Output("Y");
  auto out = linear.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1}, {0}), (*out)[0], 1e-6));

  OpTest one_class = RbfRegressor();
  one_class.Attr("one_class", int64_t{1}).Input("X", Floats({2, 2}, {0, 0, 1, 1}));
  out = one_class.Run();  // 1 - 2 e^-1 + 0.5 > 0, e^-1 - 2 + 0.5 < 0
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 1}, {1, -1}), (*out)[0]));
}

TEST(SVMRegressorTest, SizesThatDisagreeFailNamingTheAttribute) {
  OpTest coefficients = RbfRegressor();
  coefficients.Attr("coefficients", std::vector<float>{1}).Input("X", Floats({1, 2}, {0, 0}));
  EXPECT_TRUE(FailsWith(coefficients.Run(), "coefficients has 1 values, expected 2"));

  OpTest vectors = RbfRegressor();
  vectors.Attr("support_vectors", std::vector<float>{0, 0, 1}).Input("X", Floats({1, 2}, {0, 0}));
  EXPECT_TRUE(FailsWith(vectors.Run(), "support_vectors has 3 values for 2 vectors"));

  OpTest params = RbfRegressor();
  params.Attr("kernel_params", std::vector<float>{0.5f}).Input("X", Floats({1, 2}, {0, 0}));
  EXPECT_TRUE(FailsWith(params.Run(), "kernel_params has 1 values, expected 3"));

  OpTest rho = RbfRegressor();
  rho.Attr("rho", std::vector<float>{}).Input("X", Floats({1, 2}, {0, 0}));
  EXPECT_TRUE(FailsWith(rho.Run(), "rho has 0 values, expected 1"));

  OpTest wide = RbfRegressor();
  wide.Input("X", Floats({1, 3}, {0, 0, 0}));
  EXPECT_TRUE(FailsWith(wide.Run(), "has 3 features, the model 2"));
}

// Three classes with one linear support vector each: sv0 (1, 0), sv1 (0, 1), sv2 (-1, -1). Coefficient rows
// (1, -1, 1) and (1, 1, 1) make the machines (libsvm: (i, j) weighs i's vectors by row j - 1, j's by row i)
//   d01 = K0 - K1,  d02 = K0 + K2,  d12 = K1 + K2 (all rho 0).
OpTest ThreeClassSvc() {
  OpTest test("SVMClassifier", 1, "ai.onnx.ml");
  test.Attr("classlabels_strings", std::vector<std::string>{"x", "y", "z"})
      .Attr("vectors_per_class", std::vector<int64_t>{1, 1, 1})
      .Attr("support_vectors", std::vector<float>{1, 0, 0, 1, -1, -1})
      .Attr("coefficients", std::vector<float>{1, -1, 1, 1, 1, 1})
      .Attr("rho", std::vector<float>{0, 0, 0})
      .Output("Y")
      .Output("Z");
  return test;
}

TEST(SVMClassifierTest, OneVsOneDecisionValuesAndVotes) {
  OpTest test = ThreeClassSvc();
  test.Input("X", Floats({2, 2}, {2, 1, 0, 2}));
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // (2, 1): K = (2, 1, -3), d = (1, -1, -2): votes x, z, z -> z.
  // (0, 2): K = (0, 2, -2), d = (-2, -2, 0): votes y, z, z (0 is not > 0) -> z.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2}, {"z", "z"}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({2, 3}, {1, -1, -2, -2, -2, 0}), (*out)[1], 1e-6));
}

TEST(SVMClassifierTest, TiedVotesGoToTheFirstClass) {
  OpTest test = ThreeClassSvc();
  test.Attr("rho", std::vector<float>{0, 0, 3});  // (2, 1): d = (1, -1, 1) votes x, z, y
  test.Input("X", Floats({1, 2}, {2, 1}));
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({1}, {"x"}), (*out)[0]));
}

TEST(SVMClassifierTest, PlattProbabilitiesCoupledPairwise) {
  // Zero coefficients leave d = rho; prob_a -1 and prob_b 0 make each machine's probability sigmoid(d).
  // Pairwise probabilities 5/8, 5/7 and 3/5 are those of class probabilities (0.5, 0.3, 0.2), which the
  // coupling recovers to within libsvm's stopping tolerance.
  OpTest test = ThreeClassSvc();
  test.Attr("coefficients", std::vector<float>(6, 0.0f))
      .Attr("rho", std::vector<float>{static_cast<float>(std::log(5.0 / 3)), static_cast<float>(std::log(2.5)),
                                      static_cast<float>(std::log(1.5))})
      .Attr("prob_a", std::vector<float>{-1, -1, -1})
      .Attr("prob_b", std::vector<float>{0, 0, 0})
      .Input("X", Floats({1, 2}, {4, 5}));
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({1}, {"x"}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 3}, {0.5f, 0.3f, 0.2f}), (*out)[1], 0, 2e-3));
}

TEST(SVMClassifierTest, TwoClassesWriteMinusDAndD) {
  // One machine d = K0 - K1 + 0.5 over sv0 (1) and sv1 (-1): a positive d votes for the first class.
  OpTest test("SVMClassifier", 1, "ai.onnx.ml");
  test.Attr("classlabels_ints", std::vector<int64_t>{3, 8})
      .Attr("vectors_per_class", std::vector<int64_t>{1, 1})
      .Attr("support_vectors", std::vector<float>{1, -1})
      .Attr("coefficients", std::vector<float>{1, -1})
      .Attr("rho", std::vector<float>{0.5f})
      .Input("X", Floats({2, 1}, {1, -1}))
      .Output("Y")
      .Output("Z");
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {3, 8}), (*out)[0]));  // d = 2.5, -1.5
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {-2.5f, 2.5f, 1.5f, -1.5f}), (*out)[1], 1e-6));
}

TEST(SVMClassifierTest, LinearModelOneRowPerClass) {
  OpTest test("SVMClassifier", 1, "ai.onnx.ml");
  test.Attr("classlabels_ints", std::vector<int64_t>{0, 1, 2})
      .Attr("coefficients", std::vector<float>{1, 0, 0, 1, -1, -1})
      .Attr("rho", std::vector<float>{0.25f})
      .Input("X", Floats({1, 2}, {1, 3}))
      .Output("Y")
      .Output("Z");
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({1}, {1}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 3}, {1.25f, 3.25f, -3.75f}), (*out)[1], 1e-6));
}

// Each row of Y is a copy of a class label from the model: a 4 KiB label chosen for 1024 rows is 4 MiB of
// characters, past a 1 MiB limit (the output's byte size counts only its 1024 string objects).
TEST(SVMClassifierTest, ALongLabelOverManyRowsMustFitTheLimits) {
  const auto run = [](int64_t rows) {
    OpTest test("SVMClassifier", 1, "ai.onnx.ml");
    test.Attr("classlabels_strings", std::vector<std::string>{std::string(4096, 'x'), "b", "c"})
        .Attr("coefficients", std::vector<float>{1, 0, 0, 1, -1, -1})
        .Attr("rho", std::vector<float>{0.25f})
        .Input("X", Floats({rows, 2}, std::vector<float>(2 * rows, 0)))  // scores (0.25, 0.25, 0.25): class 0
        .Output("Y");
    return test.Run().status();
  };
  ScopedSizeLimits limits(1 << 20);
  EXPECT_EQ(run(1024).code(), absl::StatusCode::kResourceExhausted) << run(1024);
  EXPECT_TRUE(run(200).ok()) << run(200);  // 800 KiB fits
}

TEST(SVMClassifierTest, HostileSizesFailNamingTheAttribute) {
  const auto fails = [](OpTest test, const std::string& text) {
    test.Input("X", Floats({1, 2}, {1, 1}));
    return FailsWith(test.Run(), text);
  };
  EXPECT_TRUE(fails(ThreeClassSvc().Attr("vectors_per_class", std::vector<int64_t>{1, 1}),
                    "vectors_per_class has 2 values, expected 3"));
  EXPECT_TRUE(fails(ThreeClassSvc().Attr("vectors_per_class", std::vector<int64_t>{1, -1, 2}),
                    "vectors_per_class holds -1"));
  EXPECT_TRUE(fails(ThreeClassSvc().Attr("vectors_per_class", std::vector<int64_t>{1, int64_t{1} << 62, 1}),
                    "vectors_per_class holds 4611686018427387904"));
  EXPECT_TRUE(fails(ThreeClassSvc().Attr("vectors_per_class", std::vector<int64_t>{1, 1, 2}),
                    "support_vectors has 6 values for 4 vectors"));
  EXPECT_TRUE(fails(ThreeClassSvc().Attr("coefficients", std::vector<float>{1, 2, 3}),
                    "coefficients has 3 values, expected 6"));
  EXPECT_TRUE(fails(ThreeClassSvc().Attr("rho", std::vector<float>{0}), "rho has 1 values, expected 3"));
  EXPECT_TRUE(fails(ThreeClassSvc().Attr("prob_a", std::vector<float>{1, 1, 1}), "prob_b has 0 values, expected 3"));
  EXPECT_TRUE(fails(ThreeClassSvc().Attr("kernel_type", std::string("CUBIC")), "kernel_type \"CUBIC\""));
  OpTest linear("SVMClassifier", 1, "ai.onnx.ml");
  linear.Attr("classlabels_ints", std::vector<int64_t>{0, 1}).Attr("coefficients", std::vector<float>{1, 2})
      .Attr("rho", std::vector<float>{0}).Attr("prob_a", std::vector<float>{1}).Output("Y");
  EXPECT_TRUE(fails(linear, "need vectors_per_class"));
}

}  // namespace
}  // namespace onnxserve
