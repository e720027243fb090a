// The graph IR as the builder makes it from a model, and the rewriting primitives passes use: every value
// knows its producer and readers, subgraph reads are uses of the enclosing value, and rewrites keep both
// sides of each edge in step.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ir/builder.h"
#include "tests/support/graph_builder.h"

namespace onnxserve {
namespace {

using testing::GraphAttr;
using testing::GraphBuilder;

std::vector<std::string> Ops(const ir::Graph& graph) {
  std::vector<std::string> ops;
  for (const ir::Node* node : graph.nodes()) ops.push_back(node->op_type());
  return ops;
}

TEST(IrGraphTest, ValuesKnowTheirProducerAndEveryReader) {
  auto model = GraphBuilder()
                   .Input("x", {2})
                   .Initializer("k", Tensor::FromVector<float>({2}, {1.f, 2.f}))
                   .Node("Relu", {"x"}, "a")
                   .Node("Add", {"a", "a"}, "b")
                   .Node("Mul", {"b", "k"}, "y")
                   .Output("y")
                   .Load();
  auto graph = ir::BuildGraph(*model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(Ops(**graph), (std::vector<std::string>{"Relu", "Add", "Mul"}));
  const ir::Value* a = (*graph)->FindValue("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->producer()->op_type(), "Relu");
  ASSERT_EQ(a->uses().size(), 2u);
  EXPECT_EQ(a->uses()[0].node->op_type(), "Add");
  EXPECT_EQ(a->uses()[0].index, 0);
  EXPECT_EQ(a->uses()[1].index, 1);
  EXPECT_TRUE((*graph)->FindValue("x")->is_graph_input());
  EXPECT_TRUE((*graph)->FindValue("y")->is_graph_output());
  ASSERT_NE((*graph)->FindValue("k")->constant(), nullptr);
  EXPECT_EQ((*graph)->FindValue("k")->constant()->data<float>()[1], 2.f);
  EXPECT_EQ((*graph)->FindValue("x")->type().DebugString(), "float[2]");
}

TEST(IrGraphTest, WhatASubgraphReadsIsAnImplicitInputOfItsNode) {
  GraphBuilder branch;
  branch.Node("Neg", {"c"}, "n").Output("n");
  onnx::GraphProto then_branch = branch.proto().graph();
  onnx::GraphProto else_branch = then_branch;
  then_branch.set_name("then");
  else_branch.set_name("else");
  onnx::ModelProto proto = GraphBuilder()
                               .Input("cond", {})
                               .Input("c", {1})
                               .NodeWith("If", {"cond"}, {"y"},
                                     {GraphAttr("then_branch", then_branch), GraphAttr("else_branch", else_branch)})
                               .Output("y")
                               .proto();
  proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::BOOL);
  auto model = Model::FromProto(proto, "");
  ASSERT_TRUE(model.ok()) << model.status();
  auto graph = ir::BuildGraph(**model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const ir::Node* node = (*graph)->nodes()[0];
  ASSERT_EQ(node->subgraphs().size(), 2u);
  EXPECT_EQ(node->Subgraph("then_branch")->outer_scope_reads(), std::vector<std::string>{"c"});
  const ir::Value* c = (*graph)->FindValue("c");
  ASSERT_EQ(node->implicit_inputs(), std::vector<ir::Value*>{const_cast<ir::Value*>(c)});
  ASSERT_EQ(c->uses().size(), 1u);
  EXPECT_EQ(c->uses()[0].index, -1);
  EXPECT_TRUE(node->Subgraph("else_branch")->FindValue("c")->is_outer_scope());
}

TEST(IrGraphTest, ReplacingAndRemovingKeepBothEndsOfEachEdge) {
  auto model = GraphBuilder()
                   .Input("x", {2})
                   .Node("Identity", {"x"}, "a")
                   .Node("Relu", {"a"}, "b")
                   .Output("a")
                   .Output("b")
                   .Load();
  auto built = ir::BuildGraph(*model);
  ASSERT_TRUE(built.ok()) << built.status();
  ir::Graph& graph = **built;
  ir::Value* x = graph.FindValue("x");
  ir::Value* a = graph.FindValue("a");
  ir::Node* identity = a->producer();
  graph.ReplaceAllUses(a, x);
  EXPECT_FALSE(a->is_used());
  EXPECT_EQ(graph.output_values()[0], x);
  EXPECT_EQ(graph.FindValue("b")->producer()->input(0), x);
  ASSERT_EQ(x->uses().size(), 2u);  // Identity and Relu

  graph.RemoveNode(identity);
  EXPECT_EQ(Ops(graph), std::vector<std::string>{"Relu"});
  EXPECT_EQ(graph.FindValue("a"), nullptr);  // nothing produced or read it any more
  ASSERT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(x->uses()[0].node->op_type(), "Relu");
}

// Passes scan the order while rewrites remove nodes: a removed node keeps its place until Compact, so the
// scan goes on from it without a snapshot of the whole order per rewrite (quadratic on a hostile model).
TEST(IrGraphTest, AScanGoesOnFromANodeThatWasRemoved) {
  auto model = GraphBuilder()
                   .Input("x", {2})
                   .Node("Relu", {"x"}, "a")
                   .Node("Neg", {"a"}, "b")
                   .Node("Abs", {"b"}, "y")
                   .Output("y")
                   .Load();
  auto built = ir::BuildGraph(*model);
  ASSERT_TRUE(built.ok()) << built.status();
  ir::Graph& graph = **built;
  ir::Node* neg = graph.FindValue("b")->producer();
  ir::Node* relu = graph.FindValue("a")->producer();
  graph.ReplaceAllUses(graph.FindValue("b"), graph.FindValue("a"));
  graph.RemoveNode(neg);

  EXPECT_EQ(Ops(graph), (std::vector<std::string>{"Relu", "Abs"}));
  EXPECT_EQ(graph.num_nodes(), 2);
  EXPECT_EQ(graph.NextNode(neg)->op_type(), "Abs");
  EXPECT_EQ(graph.NextNode(relu)->op_type(), "Abs");
  EXPECT_EQ(graph.PlaceBefore(graph.NextNode(neg)), neg);
  EXPECT_EQ(graph.NextNode(nullptr), relu);
  EXPECT_EQ(graph.FindValue("b"), nullptr);

  graph.Compact();
  EXPECT_EQ(graph.PlaceBefore(graph.NextNode(relu)), relu);
  EXPECT_EQ(Ops(graph), (std::vector<std::string>{"Relu", "Abs"}));
}

// Conv fusion gives each convolution new weights (a BatchNormalization folded in) and removes the
// BatchNormalization: the old weights must go with that removal, not when the pass ends, or every
// convolution's old and new weights coexist at the peak of a load (97 MB more for a ResNet-50).
TEST(IrGraphTest, AConstantThatLostItsLastReaderGoesWithTheNextRemoval) {
  auto model = GraphBuilder()
                   .Input("x", {2})
                   .Initializer("k", Tensor::FromVector<float>({2}, {1.f, 2.f}))
                   .Node("Mul", {"x", "k"}, "a")
                   .Node("Identity", {"a"}, "b")
                   .Node("Relu", {"b"}, "y")
                   .Output("y")
                   .Load();
  auto built = ir::BuildGraph(*model);
  ASSERT_TRUE(built.ok()) << built.status();
  ir::Graph& graph = **built;
  ir::Node* mul = graph.FindValue("a")->producer();
  ir::Value* folded = graph.AddConstant("k_folded", Tensor::FromVector<float>({2}, {3.f, 4.f}));
  graph.SetInput(mul, 1, folded);
  EXPECT_NE(graph.FindValue("k"), nullptr);  // nothing removed yet

  ir::Node* identity = graph.FindValue("b")->producer();
  graph.ReplaceAllUses(graph.FindValue("b"), graph.FindValue("a"));
  graph.RemoveNode(identity);
  EXPECT_EQ(graph.FindValue("k"), nullptr);
  EXPECT_EQ(graph.constants().size(), 1u);
  EXPECT_EQ(graph.constants()[0], folded);
}

// A pass may hand RemoveNodes a node that a rewrite already removed: it is not counted out twice.
TEST(IrGraphTest, RemovingANodeTwiceCountsItOnce) {
  auto model = GraphBuilder().Input("x", {2}).Node("Neg", {"x"}, "a").Node("Relu", {"x"}, "y").Output("y").Load();
  auto built = ir::BuildGraph(*model);
  ASSERT_TRUE(built.ok()) << built.status();
  ir::Graph& graph = **built;
  ir::Node* neg = graph.FindValue("a")->producer();
  graph.RemoveNode(neg);
  ASSERT_EQ(graph.num_nodes(), 1);
  graph.RemoveNodes({neg});
  EXPECT_EQ(graph.num_nodes(), 1);
  EXPECT_EQ(Ops(graph), std::vector<std::string>{"Relu"});
  graph.Compact();
  EXPECT_EQ(graph.num_nodes(), 1);
}

// The name table names one value per name. Removing a value used to erase its name's entry even when that
// named another value, which FindValue then no longer found.
TEST(IrGraphTest, RemovingAValueKeepsAnotherOfItsNameFindable) {
  auto model = GraphBuilder().Input("x", {2}).Node("Relu", {"x"}, "a").Node("Neg", {"a"}, "y").Output("y").Load();
  auto built = ir::BuildGraph(*model);
  ASSERT_TRUE(built.ok()) << built.status();
  ir::Graph& graph = **built;
  ir::Value* x = graph.FindValue("x");
  ir::Node* relu = graph.FindValue("a")->producer();
  ir::Node* abs = graph.AddNode({"abs", "", "Abs", 13, {x}, {}}, {"a"});
  ASSERT_EQ(graph.FindValue("a"), abs->output(0));

  graph.ReplaceAllUses(relu->output(0), x);
  graph.RemoveNode(relu);
  EXPECT_EQ(graph.FindValue("a"), abs->output(0));
  graph.Compact();
  EXPECT_EQ(graph.FindValue("a"), abs->output(0));
}

// A model may give a node fewer outputs than the op has. The fusion passes hand the last node's output 0 to
// the fused node; the fuzzer found a MatMul ending an attention chain with no output at all, whose output 0
// was read past the end of its list (UBSan).
TEST(IrGraphTest, TransferringAnOutputTheNodeDoesNotListLeavesTheTargetWithout) {
  onnx::ModelProto proto = GraphBuilder().Input("x", {2}).Node("Relu", {"x"}, "y").Output("y").proto();
  proto.mutable_graph()->mutable_node(0)->clear_output();  // Relu's result is not kept
  proto.mutable_graph()->clear_output();
  proto.mutable_graph()->add_output()->set_name("x");
  auto model = Model::FromProto(std::move(proto), "");
  ASSERT_TRUE(model.ok()) << model.status();
  auto built = ir::BuildGraph(**model);
  ASSERT_TRUE(built.ok()) << built.status();
  ir::Graph& graph = **built;
  ir::Node* relu = graph.nodes().front();
  ASSERT_TRUE(relu->outputs().empty());
  ir::Node* other = graph.AddNode({"other", "", "Relu", 14, {graph.FindValue("x")}, {}}, {"z"});
  graph.TransferOutput(relu, 0, other, 0);
  EXPECT_EQ(other->output(0), nullptr);
}

}  // namespace
}  // namespace onnxserve
