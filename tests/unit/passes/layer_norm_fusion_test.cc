// The LayerNormalization fusion pass (runtime/passes/layer_norm_fusion.cc): the primitives exporters write
// before opset 17 become one LayerNormalization with the same result; near misses stay as they are.
#include <cmath>

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::GraphBuilder;
using testing::IntsAttr;
using testing::RunPass;
using testing::TensorsClose;

// x [2, 4] normalized over its last axis (or `axes`), as PyTorch exports nn.LayerNorm at opset 13.
// The constants may be given other shapes of the same elements.
struct Constants {
  Shape two = {}, eps = {}, gamma = {4}, beta = {4};
};

GraphBuilder LayerNormSpelledOut(std::vector<int64_t> axes = {-1}, bool affine = true, const Constants& shapes = {}) {
  GraphBuilder b(13);
  b.Input("x", {2, 4})
      .Initializer("two", Tensor::FromVector<float>(shapes.two, {2.0f}))
      .Initializer("eps", Tensor::FromVector<float>(shapes.eps, {1e-5f}))
      .Initializer("gamma", Tensor::FromVector<float>(shapes.gamma, {1.f, 2.f, 0.5f, -1.f}))
      .Initializer("beta", Tensor::FromVector<float>(shapes.beta, {0.f, 0.1f, -0.2f, 3.f}))
      .NodeWith("ReduceMean", {"x"}, {"mean"}, {IntsAttr("axes", axes)})
      .Node("Sub", {"x", "mean"}, "d")
      .Node("Pow", {"d", "two"}, "sq")
      .NodeWith("ReduceMean", {"sq"}, {"var"}, {IntsAttr("axes", axes)})
      .Node("Add", {"var", "eps"}, "ve")
      .Node("Sqrt", {"ve"}, "std")
      .Node("Div", {"d", "std"}, affine ? "n" : "y");
  if (affine) b.Node("Mul", {"n", "gamma"}, "scaled").Node("Add", {"scaled", "beta"}, "y");
  return b.Output("y");
}

const std::vector<float> kX = {1, 2, 3, 4, -1, 0.5f, 8, 2};

TEST(LayerNormFusionTest, ThePrimitivesBecomeOneLayerNormalization) {
  auto model = LayerNormSpelledOut().Load();
  auto result = RunPass(*model, *passes::MakeLayerNormFusion());
  EXPECT_EQ(result.ops, std::vector<std::string>{"LayerNormalization"});
  ASSERT_EQ(result.changes.size(), 1u);

  // The spec's formula, row by row.
  const float gamma[] = {1.f, 2.f, 0.5f, -1.f}, beta[] = {0.f, 0.1f, -0.2f, 3.f};
  std::vector<float> expected;
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += kX[r * 4 + i] / 4.0;
    for (int i = 0; i < 4; ++i) var += (kX[r * 4 + i] - mean) * (kX[r * 4 + i] - mean) / 4.0;
    for (int i = 0; i < 4; ++i) {
      expected.push_back(static_cast<float>((kX[r * 4 + i] - mean) / std::sqrt(var + 1e-5) * gamma[i] + beta[i]));
    }
  }
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({{"x", Tensor::FromVector<float>({2, 4}, kX)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 4}, expected), (*out)[0], 1e-5, 1e-6));
}

TEST(LayerNormFusionTest, WithoutTheAffinePartTheScaleIsOne) {
  auto model = LayerNormSpelledOut({-1}, /*affine=*/false).Load();
  auto result = RunPass(*model, *passes::MakeLayerNormFusion());
  EXPECT_EQ(result.ops, std::vector<std::string>{"LayerNormalization"});
  testing::ExpectSameResultWithAndWithoutPasses(model, {{"x", Tensor::FromVector<float>({2, 4}, kX)}});
}

TEST(LayerNormFusionTest, LeadingAxesAndSharedIntermediatesStay) {
  // Axis 0 is not a trailing axis spelled from the end: shapes are not known to the pass.
  auto leading = RunPass(*LayerNormSpelledOut({0}).Load(), *passes::MakeLayerNormFusion());
  EXPECT_TRUE(leading.changes.empty());
  // The variance is also a graph output: fusing would lose it.
  auto shared = RunPass(*LayerNormSpelledOut().Output("var").Load(), *passes::MakeLayerNormFusion());
  EXPECT_TRUE(shared.changes.empty());
  EXPECT_EQ(shared.ops.size(), 9u);
}

// A constant of more dims than the normalized axes broadcasts x's rows past x's shape (epsilon or the
// exponent, gamma or beta of rank 3 make y [1,2,4]), which LayerNormalization keeps and
// whose Scale and B span the normalized axes only: the primitives that do so stay, and give their shape.
TEST(LayerNormFusionTest, ConstantsOfMoreDimsThanTheNormalizedAxesStayWithTheirBroadcasting) {
  const struct {
    const char* name;
    Constants shapes;
    std::vector<std::string> ops;
  } cases[] = {
      {"eps", {.eps = {1, 1, 1}}, {"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"}},
      {"two", {.two = {1, 1, 1}}, {"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"}},
      {"gamma", {.gamma = {1, 1, 4}}, {"LayerNormalization", "Mul", "Add"}},
      {"beta", {.beta = {1, 1, 4}}, {"LayerNormalization", "Add"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto model = LayerNormSpelledOut({-1}, /*affine=*/true, c.shapes).Load();
    EXPECT_EQ(RunPass(*model, *passes::MakeLayerNormFusion()).ops, c.ops);
    testing::ExpectSameResultWithAndWithoutPasses(model, {{"x", Tensor::FromVector<float>({2, 4}, kX)}});
  }
}

// `x` normalized over its last axis into `n` as exporters also spell it, squaring by Mul(d, d); epsilon is
// the constant "eps", of x's type.
GraphBuilder& NormalizeLastAxis(GraphBuilder& b, const std::string& x, const std::string& n) {
  return b.NodeWith("ReduceMean", {x}, {"mean"}, {IntsAttr("axes", {-1})})
      .Node("Sub", {x, "mean"}, "d")
      .Node("Mul", {"d", "d"}, "sq")
      .NodeWith("ReduceMean", {"sq"}, {"var"}, {IntsAttr("axes", {-1})})
      .Node("Add", {"var", "eps"}, "ve")
      .Node("Sqrt", {"ve"}, "std")
      .Node("Div", {"d", "std"}, n);
}

// A double x without the affine part: the Scale of 1 the fused node reads must be double too, or every
// request fails on a type mismatch that the primitives do not have.
TEST(LayerNormFusionTest, ADoubleNormalizationWithoutTheAffinePartFusesWithADoubleScale) {
  GraphBuilder b(13);
  b.Input("x", {2, 4})
      .Initializer("eps", Tensor::Scalar(1e-5))
      .NodeWith("Cast", {"x"}, {"xd"}, {testing::IntAttr("to", onnx::TensorProto::DOUBLE)});
  auto model = NormalizeLastAxis(b, "xd", "y").Output("y").Load();
  EXPECT_EQ(RunPass(*model, *passes::MakeLayerNormFusion()).ops,
            (std::vector<std::string>{"Cast", "LayerNormalization"}));
  testing::ExpectSameResultWithAndWithoutPasses(model, {{"x", Tensor::FromVector<float>({2, 4}, kX)}});
}

// Over a normalized dim of 1 every normalized value is 0, and gamma [4] widens the row to [..., 4]: a valid
// model whose Mul and Add the pass absorbs without seeing shapes. LayerNormalization refused such a Scale on
// every request; it now computes what the Mul and Add compute.
TEST(LayerNormFusionTest, AGammaAndBetaThatWidenANormalizedDimOfOneGiveWhatMulAndAddGive) {
  GraphBuilder b(13);
  b.Input("x", {2, 1})
      .Initializer("eps", Tensor::Scalar(1e-5f))
      .Initializer("gamma", Tensor::FromVector<float>({4}, {1.f, 2.f, 0.5f, -1.f}))
      .Initializer("beta", Tensor::FromVector<float>({4}, {0.f, 0.1f, -0.2f, 3.f}));
  NormalizeLastAxis(b, "x", "n")
      .Node("Mul", {"n", "gamma"}, "scaled")
      .Node("Add", {"scaled", "beta"}, "y");
  auto model = b.Output("y").Load();
  EXPECT_EQ(RunPass(*model, *passes::MakeLayerNormFusion()).ops, std::vector<std::string>{"LayerNormalization"});
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({{"x", Tensor::FromVector<float>({2, 1}, {3.f, -7.f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  // Each row is 0 * gamma + beta.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 4}, {0.f, 0.1f, -0.2f, 3.f, 0.f, 0.1f, -0.2f, 3.f}), (*out)[0],
                           1e-6, 1e-6));
}

// LayerNormalization's epsilon is a float attribute: a double epsilon of 1e-300 became 0, and a row of equal
// values then normalized to 0 * inf = NaN where the primitives give 0 / sqrt(1e-300) = 0.
TEST(LayerNormFusionTest, AnEpsilonTheFloatCannotHoldStaysUnfused) {
  GraphBuilder b(13);
  b.Input("x", {2, 4})
      .Initializer("eps", Tensor::Scalar(1e-300))
      .NodeWith("Cast", {"x"}, {"xd"}, {testing::IntAttr("to", onnx::TensorProto::DOUBLE)});
  NormalizeLastAxis(b, "xd", "n").NodeWith("Cast", {"n"}, {"y"}, {testing::IntAttr("to", onnx::TensorProto::FLOAT)});
  auto model = b.Output("y").Load();
  EXPECT_TRUE(RunPass(*model, *passes::MakeLayerNormFusion()).changes.empty());
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  auto out = (*session)->Run({{"x", Tensor::FromVector<float>({2, 4}, {5, 5, 5, 5, 1, 2, 3, 4})}});
  ASSERT_TRUE(out.ok()) << out.status();
  // Row 0 is constant: 0 everywhere. Row 1: (x - 2.5) / sqrt(1.25).
  const float r = 1 / std::sqrt(1.25f);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 4}, {0, 0, 0, 0, -1.5f * r, -0.5f * r, 0.5f * r, 1.5f * r}),
                           (*out)[0], 1e-6, 1e-6));
}

}  // namespace
}  // namespace onnxserve
