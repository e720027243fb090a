// The dead-node-elimination pass (runtime/passes/dead_node_elimination.cc): nodes whose outputs nothing
// reads go, with the chains that only feed them; what a graph output or a subgraph reads stays.
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"

namespace onnxserve {
namespace {

using testing::GraphBuilder;
using testing::RunPass;

TEST(DeadNodeEliminationTest, ChainsThatFeedNothingGo) {
  auto model = GraphBuilder()
                   .Input("x", {2})
                   .Node("Neg", {"x"}, "unused1")
                   .Node("Abs", {"unused1"}, "unused2")
                   .Node("Relu", {"x"}, "y")
                   .Output("y")
                   .Load();
  auto result = RunPass(*model, *passes::MakeDeadNodeElimination());
  EXPECT_EQ(result.ops, std::vector<std::string>{"Relu"});
  EXPECT_EQ(result.changes, (std::vector<std::string>{"removed node \"unused2\" (Abs): nothing reads its outputs",
                                                     "removed node \"unused1\" (Neg): nothing reads its outputs"}));
  EXPECT_EQ(result.graph->FindValue("unused1"), nullptr);
}

TEST(DeadNodeEliminationTest, ANodeWithOneReadOutputStays) {
  auto model = GraphBuilder()
                   .Input("x", {4})
                   .Initializer("k", Tensor::FromVector<int64_t>({1}, {2}))
                   .NodeWith("TopK", {"x", "k"}, {"values", "indices"})
                   .Output("indices")
                   .Load();
  auto result = RunPass(*model, *passes::MakeDeadNodeElimination());
  EXPECT_EQ(result.ops, std::vector<std::string>{"TopK"});
  EXPECT_TRUE(result.changes.empty());
}

// The pass decides every node before it removes any: a value read by dead and living nodes alike keeps its
// living reader, and a dead chain goes however long it is.
TEST(DeadNodeEliminationTest, DeadReadersGoAndTheLivingOnesStay) {
  GraphBuilder builder;
  builder.Input("x", {2});
  for (int i = 0; i < 3; ++i) builder.Node("Neg", {"x"}, absl::StrCat("dead", i));
  builder.Node("Abs", {"dead0"}, "dead_too").Node("Relu", {"x"}, "y").Node("Sigmoid", {"x"}, "also_dead");
  auto result = RunPass(*builder.Output("y").Load(), *passes::MakeDeadNodeElimination());
  EXPECT_EQ(result.ops, std::vector<std::string>{"Relu"});
  EXPECT_EQ(result.changes.size(), 5u);
  ASSERT_EQ(result.graph->FindValue("x")->uses().size(), 1u);
  EXPECT_EQ(result.graph->FindValue("x")->uses()[0].node->op_type(), "Relu");
  for (const char* gone : {"dead0", "dead2", "dead_too", "also_dead"}) {
    EXPECT_EQ(result.graph->FindValue(gone), nullptr) << gone;
  }
}

}  // namespace
}  // namespace onnxserve
