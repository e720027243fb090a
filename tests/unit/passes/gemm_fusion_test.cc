// The Gemm fusion pass (runtime/passes/gemm_fusion.cc): MatMul + Add of a bias and MatMul/Gemm + an
// activation become one FusedGemm whose results equal the unfused graph's, and what does not fit stays.
#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::GraphBuilder;
using testing::RandomFloats;
using testing::RunPass;

// A [rows, columns] constant of random values.
Tensor Weight(int64_t rows, int64_t columns, uint32_t seed) {
  return Tensor::FromVector<float>({rows, columns}, RandomFloats(rows * columns, seed));
}

std::vector<std::string> PlanOps(const GraphBuilder& builder) {
  auto session = Session::Create(builder.Load());
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? (*session)->plan().StepOps() : std::vector<std::string>{};
}

// x [2, 3, 40] (rank 3: rows fold) times a constant W [40, 50], + a constant bias [50], then `activation`.
GraphBuilder MatMulAddThen(const std::string& activation, int opset = 20) {
  GraphBuilder builder(opset);
  builder.Input("x", {2, 3, 40})
      .Initializer("w", Weight(40, 50, 1))
      .Initializer("bias", Tensor::FromVector<float>({50}, RandomFloats(50, 2)))
      .Node("MatMul", {"x", "w"}, "xw")
      .Node("Add", {"bias", "xw"}, activation.empty() ? "y" : "sum");
  if (!activation.empty()) builder.Node(activation, {"sum"}, "y");
  return std::move(builder.Output("y"));
}

Tensor ScaledInput(const Shape& shape, float scale, uint32_t seed) {
  std::vector<float> x = RandomFloats(NumElements(shape), seed);
  for (float& v : x) v *= scale;
  return Tensor::FromVector<float>(shape, x);
}

TEST(GemmFusionTest, MatMulAddBecomesOneFusedGemmWithTheSameResult) {
  const GraphBuilder builder = MatMulAddThen("");
  auto result = RunPass(*builder.Load(), *passes::MakeGemmFusion());
  EXPECT_EQ(result.ops, std::vector<std::string>{"FusedGemm"});
  ASSERT_EQ(result.changes.size(), 1u);
  EXPECT_EQ(result.changes[0], "fused node \"y\" (Add) into node \"xw\" (MatMul)");
  testing::ExpectSameResultWithAndWithoutPasses(builder.Load(), {{"x", ScaledInput({2, 3, 40}, 1, 3)}});
}

TEST(GemmFusionTest, EveryActivationAfterMatMulAddFusesToo) {
  for (const char* activation : {"Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Tanh", "Gelu"}) {
    SCOPED_TRACE(activation);
    const GraphBuilder builder = MatMulAddThen(activation);
    EXPECT_EQ(PlanOps(builder), std::vector<std::string>{"FusedGemm"});
    testing::ExpectSameResultWithAndWithoutPasses(builder.Load(), {{"x", ScaledInput({2, 3, 40}, 2, 4)}});
  }
}

TEST(GemmFusionTest, GemmThenClipFusesAndKeepsGemmsAttributes) {
  // Y = Clip(2 * x W^T + 0.5 C, 0, 6) with transB: FusedGemm keeps alpha, beta and transB.
  const GraphBuilder builder = std::move(
      GraphBuilder(13)
          .Input("x", {5, 30})
          .Initializer("w", Weight(20, 30, 5))
          .Initializer("c", Tensor::FromVector<float>({1, 20}, RandomFloats(20, 6)))
          .Initializer("zero", Tensor::Scalar(0.0f))
          .Initializer("six", Tensor::Scalar(6.0f))
          .NodeWith("Gemm", {"x", "w", "c"}, {"g"},
                    {testing::FloatAttr("alpha", 2), testing::FloatAttr("beta", 0.5f), testing::IntAttr("transB", 1)})
          .Node("Clip", {"g", "zero", "six"}, "y")
          .Output("y"));
  EXPECT_EQ(PlanOps(builder), std::vector<std::string>{"FusedGemm"});
  testing::ExpectSameResultWithAndWithoutPasses(builder.Load(), {{"x", ScaledInput({5, 30}, 3, 7)}});
}

TEST(GemmFusionTest, ARank1InputKeepsMatMulsShape) {
  const GraphBuilder builder = std::move(GraphBuilder(20)
                                             .Input("x", {40})
                                             .Initializer("w", Weight(40, 9, 8))
                                             .Initializer("bias", Tensor::FromVector<float>({9}, RandomFloats(9, 9)))
                                             .Node("MatMul", {"x", "w"}, "xw")
                                             .Node("Add", {"xw", "bias"}, "sum")
                                             .Node("Tanh", {"sum"}, "y")
                                             .Output("y"));
  EXPECT_EQ(PlanOps(builder), std::vector<std::string>{"FusedGemm"});
  testing::ExpectSameResultWithAndWithoutPasses(builder.Load(), {{"x", ScaledInput({40}, 1, 10)}});
}

TEST(GemmFusionTest, WhatDoesNotFitStaysUnfused) {
  // A bias that is not one value per column (here [3, 50], per row and column) changes Add's result shape
  // rules; a weight fed at run time is not packed; a MatMul output read twice must stay.
  const GraphBuilder full_bias = std::move(GraphBuilder(20)
                                               .Input("x", {3, 40})
                                               .Initializer("w", Weight(40, 50, 1))
                                               .Initializer("c", Weight(3, 50, 2))
                                               .Node("MatMul", {"x", "w"}, "xw")
                                               .Node("Add", {"xw", "c"}, "y")
                                               .Output("y"));
  EXPECT_EQ(PlanOps(full_bias), (std::vector<std::string>{"MatMul", "Add"}));
  const GraphBuilder fed_weight = std::move(GraphBuilder(20)
                                                .Input("x", {3, 40})
                                                .Input("w", {40, 50})
                                                .Node("MatMul", {"x", "w"}, "xw")
                                                .Node("Relu", {"xw"}, "y")
                                                .Output("y"));
  EXPECT_EQ(PlanOps(fed_weight), (std::vector<std::string>{"MatMul", "Relu"}));
  const GraphBuilder two_readers = std::move(GraphBuilder(20)
                                                 .Input("x", {3, 40})
                                                 .Initializer("w", Weight(40, 50, 1))
                                                 .Node("MatMul", {"x", "w"}, "xw")
                                                 .Node("Relu", {"xw"}, "y")
                                                 .Output("y")
                                                 .Output("xw"));
  EXPECT_EQ(PlanOps(two_readers), (std::vector<std::string>{"MatMul", "Relu"}));
}

TEST(GemmFusionTest, GeluSpelledOutFusesIntoTheMatMulBeforeIt) {
  // Exporters before opset 20 write Gelu as five primitives; Gelu fusion runs first, so the Gelu it makes
  // then fuses into the MatMul + Add.
  const GraphBuilder builder = std::move(GraphBuilder(17)
                                             .Input("x", {4, 40})
                                             .Initializer("w", Weight(40, 50, 1))
                                             .Initializer("bias", Tensor::FromVector<float>({50}, RandomFloats(50, 2)))
                                             .Initializer("sqrt2", Tensor::Scalar(1.41421356f))
                                             .Initializer("one", Tensor::Scalar(1.0f))
                                             .Initializer("half", Tensor::Scalar(0.5f))
                                             .Node("MatMul", {"x", "w"}, "xw")
                                             .Node("Add", {"xw", "bias"}, "h")
                                             .Node("Div", {"h", "sqrt2"}, "scaled")
                                             .Node("Erf", {"scaled"}, "erf")
                                             .Node("Add", {"erf", "one"}, "erf1")
                                             .Node("Mul", {"h", "erf1"}, "prod")
                                             .Node("Mul", {"prod", "half"}, "y")
                                             .Output("y"));
  EXPECT_EQ(PlanOps(builder), std::vector<std::string>{"FusedGemm"});
  testing::ExpectSameResultWithAndWithoutPasses(builder.Load(), {{"x", ScaledInput({4, 40}, 2, 11)}});
}

}  // namespace
}  // namespace onnxserve
