// The Gelu fusion pass (runtime/passes/gelu_fusion.cc): the exact GELU as exporters spell it before opset
// 20 becomes one Gelu with the same result, in both orders of the multiplications.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::GraphBuilder;
using testing::RunPass;
using testing::TensorsClose;

GraphBuilder GeluSpelledOut(bool half_first, float divisor = 1.4142135f, const Shape& constant_shape = {}) {
  GraphBuilder b(13);
  b.Input("x", {5})
      .Initializer("sqrt2", Tensor::FromVector<float>(constant_shape, {divisor}))
      .Initializer("one", Tensor::FromVector<float>(constant_shape, {1.0f}))
      .Initializer("half", Tensor::FromVector<float>(constant_shape, {0.5f}))
      .Node("Div", {"x", "sqrt2"}, "scaled")
      .Node("Erf", {"scaled"}, "erf")
      .Node("Add", {"erf", "one"}, "shifted");
  if (half_first) {
    b.Node("Mul", {"x", "half"}, "halved").Node("Mul", {"halved", "shifted"}, "y");
  } else {
    b.Node("Mul", {"x", "shifted"}, "product").Node("Mul", {"product", "half"}, "y");
  }
  return b.Output("y");
}

const std::vector<float> kX = {-3.f, -0.5f, 0.f, 0.7f, 2.5f};

TEST(GeluFusionTest, BothSpellingsBecomeOneGeluWithTheSpecsValues) {
  std::vector<float> expected;
  for (float x : kX) expected.push_back(static_cast<float>(0.5 * x * (1 + std::erf(x / std::sqrt(2.0)))));
  for (bool half_first : {false, true}) {
    SCOPED_TRACE(half_first);
    auto model = GeluSpelledOut(half_first).Load();
    auto result = RunPass(*model, *passes::MakeGeluFusion());
    EXPECT_EQ(result.ops, std::vector<std::string>{"Gelu"});
    auto session = Session::Create(model);
    ASSERT_TRUE(session.ok()) << session.status();
    auto out = (*session)->Run({{"x", Tensor::FromVector<float>({5}, kX)}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({5}, expected), (*out)[0], 1e-5, 1e-6));
  }
}

TEST(GeluFusionTest, OtherConstantsAreNotGelu) {
  auto result = RunPass(*GeluSpelledOut(false, 2.0f).Load(), *passes::MakeGeluFusion());
  EXPECT_TRUE(result.changes.empty());
  EXPECT_EQ(result.ops.size(), 5u);
}

// Constants of one element still broadcast: of shape [1,1,1,1,1] they make the spelled-out GELU of x [5] a
// [1,1,1,1,5], which one Gelu of x [5] is not.
TEST(GeluFusionTest, ConstantsOfHigherRankThanXStayUnfusedAndKeepTheirShape) {
  for (bool half_first : {false, true}) {
    SCOPED_TRACE(half_first);
    auto model = GeluSpelledOut(half_first, 1.4142135f, {1, 1, 1, 1, 1}).Load();
    EXPECT_TRUE(RunPass(*model, *passes::MakeGeluFusion()).changes.empty());
    testing::ExpectSameResultWithAndWithoutPasses(model, {{"x", Tensor::FromVector<float>({5}, kX)}});
  }
}

// After a rewrite the scan goes on from where it was, not from the start: every one of a chain of GELUs
// (each reading the one before) still fuses.
TEST(GeluFusionTest, EachOfAChainOfGelusFuses) {
  GraphBuilder b(13);
  b.Input("x", {5})
      .Initializer("sqrt2", Tensor::Scalar(1.4142135f))
      .Initializer("one", Tensor::Scalar(1.0f))
      .Initializer("half", Tensor::Scalar(0.5f));
  std::string in = "x";
  for (int i = 0; i < 3; ++i) {
    const std::string p = absl::StrCat("g", i, "_");
    b.Node("Div", {in, "sqrt2"}, p + "scaled")
        .Node("Erf", {p + "scaled"}, p + "erf")
        .Node("Add", {p + "erf", "one"}, p + "shifted")
        .Node("Mul", {in, "half"}, p + "halved")
        .Node("Mul", {p + "halved", p + "shifted"}, p + "y");
    in = p + "y";
  }
  auto model = b.Output(in).Load();
  EXPECT_EQ(RunPass(*model, *passes::MakeGeluFusion()).ops, (std::vector<std::string>{"Gelu", "Gelu", "Gelu"}));
  testing::ExpectSameResultWithAndWithoutPasses(model, {{"x", Tensor::FromVector<float>({5}, kX)}});
}

}  // namespace
}  // namespace onnxserve
