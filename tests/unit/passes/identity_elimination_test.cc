// The identity-elimination pass (runtime/passes/identity_elimination.cc): readers of an Identity (or an
// inference Dropout) read its input instead, unless the graph or a subgraph needs the value by its name.
#include "gtest/gtest.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"

namespace onnxserve {
namespace {

using testing::GraphBuilder;
using testing::RunPass;

TEST(IdentityEliminationTest, ReadersOfAnIdentityReadItsInput) {
  auto model = GraphBuilder(13)
                   .Input("x", {2})
                   .Node("Identity", {"x"}, "a")
                   .Node("Dropout", {"a"}, "b")
                   .Node("Relu", {"b"}, "y")
                   .Output("y")
                   .Load();
  auto result = RunPass(*model, *passes::MakeIdentityElimination());
  EXPECT_EQ(result.ops, std::vector<std::string>{"Relu"});
  EXPECT_EQ(result.changes.size(), 2u);
  EXPECT_EQ(result.graph->FindValue("y")->producer()->input(0)->name(), "x");
  testing::ExpectSameResultWithAndWithoutPasses(model, {{"x", Tensor::FromVector<float>({2}, {-1.f, 2.f})}});
}

TEST(IdentityEliminationTest, GraphOutputsAndTrainingDropoutsStay) {
  auto model = GraphBuilder(13)
                   .Input("x", {2})
                   .Initializer("ratio", Tensor::Scalar(0.5f))
                   .Initializer("training", Tensor::Scalar(true))
                   .Node("Identity", {"x"}, "out")
                   .Node("Dropout", {"x", "ratio", "training"}, "dropped")
                   .NodeWith("Dropout", {"x"}, {"kept", "mask"})
                   .Output("out")
                   .Output("dropped")
                   .Output("kept")
                   .Output("mask")
                   .Load();
  auto result = RunPass(*model, *passes::MakeIdentityElimination());
  EXPECT_EQ(result.ops, (std::vector<std::string>{"Identity", "Dropout", "Dropout"}));
  EXPECT_TRUE(result.changes.empty());
}

}  // namespace
}  // namespace onnxserve
