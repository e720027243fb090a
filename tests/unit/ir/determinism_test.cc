// Which graphs may answer differently on equal inputs: the random ops, Dropout only when it may train, and
// random ops inside subgraphs.
#include "runtime/ir/determinism.h"

#include <string>

#include "gtest/gtest.h"
#include "runtime/ir/builder.h"
#include "tests/support/graph_builder.h"

namespace onnxserve {
namespace {

using testing::GraphAttr;
using testing::GraphBuilder;
using testing::IntAttr;

// The op of the random node FindRandomNode reports in `builder`'s graph, or "" when it finds none.
std::string RandomOpIn(const GraphBuilder& builder) {
  auto model = builder.Load();
  auto graph = ir::BuildGraph(*model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  const ir::Node* found = ir::FindRandomNode(**graph);
  return found == nullptr ? "" : found->op_type();
}

TEST(DeterminismTest, AGraphOfPlainOpsIsDeterministic) {
  EXPECT_EQ(RandomOpIn(GraphBuilder().Input("x", {2}).Node("Relu", {"x"}, "y").Output("y")), "");
}

TEST(DeterminismTest, EachRandomOpIsFoundSeededOrNot) {
  for (const char* op : {"RandomNormalLike", "RandomUniformLike", "Bernoulli"}) {
    EXPECT_EQ(RandomOpIn(GraphBuilder().Input("x", {2}).Node(op, {"x"}, "y").Output("y")), op);
    EXPECT_EQ(RandomOpIn(GraphBuilder().Input("x", {2}).NodeWith(op, {"x"}, {"y"}, {testing::FloatAttr("seed", 3)})
                             .Output("y")),
              op);
  }
  EXPECT_EQ(RandomOpIn(GraphBuilder().Input("x", {1, 3}).NodeWith("Multinomial", {"x"}, {"y"}).Output("y")),
            "Multinomial");
}

TEST(DeterminismTest, DropoutCountsOnlyWhenItMayTrain) {
  // Opset 15: training_mode absent, a constant false, a constant true, a graph input.
  EXPECT_EQ(RandomOpIn(GraphBuilder().Input("x", {2}).Node("Dropout", {"x"}, "y").Output("y")), "");
  EXPECT_EQ(RandomOpIn(GraphBuilder()
                           .Input("x", {2})
                           .Initializer("off", Tensor::Scalar<bool>(false))
                           .NodeWith("Dropout", {"x", "", "off"}, {"y"})
                           .Output("y")),
            "");
  EXPECT_EQ(RandomOpIn(GraphBuilder()
                           .Input("x", {2})
                           .Initializer("on", Tensor::Scalar<bool>(true))
                           .NodeWith("Dropout", {"x", "", "on"}, {"y"})
                           .Output("y")),
            "Dropout");
  EXPECT_EQ(RandomOpIn(GraphBuilder()
                           .Input("x", {2})
                           .Input("train", {})
                           .NodeWith("Dropout", {"x", "", "train"}, {"y"})
                           .Output("y")),
            "Dropout");
  // Opset 6: training unless is_test; opset 7 to 11: always inference.
  EXPECT_EQ(RandomOpIn(GraphBuilder(6).Input("x", {2}).Node("Dropout", {"x"}, "y").Output("y")), "Dropout");
  EXPECT_EQ(RandomOpIn(GraphBuilder(6).Input("x", {2}).NodeWith("Dropout", {"x"}, {"y"}, {IntAttr("is_test", 1)})
                           .Output("y")),
            "");
  EXPECT_EQ(RandomOpIn(GraphBuilder(10).Input("x", {2}).Node("Dropout", {"x"}, "y").Output("y")), "");
}

TEST(DeterminismTest, ARandomOpInsideASubgraphIsFound) {
  GraphBuilder branch;
  branch.Node("RandomUniformLike", {"c"}, "n").Output("n");
  onnx::GraphProto then_branch = branch.proto().graph();
  then_branch.set_name("then");
  GraphBuilder plain;
  plain.Node("Neg", {"c"}, "n").Output("n");
  onnx::GraphProto else_branch = plain.proto().graph();
  else_branch.set_name("else");
  GraphBuilder outer;
  outer.Input("cond", {}).Input("c", {1}).NodeWith(
      "If", {"cond"}, {"y"}, {GraphAttr("then_branch", then_branch), GraphAttr("else_branch", else_branch)});
  outer.Output("y");
  onnx::ModelProto proto = outer.proto();
  proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::BOOL);
  auto model = Model::FromProto(proto, "");
  ASSERT_TRUE(model.ok()) << model.status();
  auto graph = ir::BuildGraph(**model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const ir::Node* found = ir::FindRandomNode(**graph);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->op_type(), "RandomUniformLike");
}

}  // namespace
}  // namespace onnxserve
