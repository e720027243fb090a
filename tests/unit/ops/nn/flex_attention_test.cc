// FlexAttention (ai.onnx.preview): softmax(scale * Q K^T) V worked by hand with grouped heads, the score_mod
// and prob_mod subgraphs applied before and after the softmax, and the modifier and shape errors.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, std::vector<float> v) { return Tensor::FromVector<float>(std::move(shape), v); }

onnx::ValueInfoProto FloatValue(const std::string& name) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return v;
}

// A modifier graph as the attribute `name`: one node `op_type` reading "x" `inputs` times, with the graph
// inputs `graph_inputs`.
onnx::AttributeProto Modifier(const std::string& name, const std::string& op_type, int inputs = 1,
                              const std::vector<std::string>& graph_inputs = {"x"}) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& g = *attr.mutable_g();
  g.set_name(name);
  for (const std::string& input : graph_inputs) *g.add_input() = FloatValue(input);
  auto* node = g.add_node();
  node->set_op_type(op_type);
  const std::string x = "x", y = "y";
  for (int i = 0; i < inputs; ++i) node->add_input(x);
  node->add_output(y);
  *g.add_output() = FloatValue(y);
  return attr;
}

// Two query heads sharing one K/V head; L = 1, S = 2, E = Ev = 1, scale 1. Head 0 (q = 1) scores the keys
// [0, ln 3], head 1 (q = 0) scores [0, 0]; V = [4, 8].
OpTest TwoHeadsOneKv() {
  OpTest test("FlexAttention", 1, "ai.onnx.preview");
  test.Opset("", 21)
      .Attr("scale", 1.0f)
      .Input("Q", Floats({1, 2, 1, 1}, {1, 0}))
      .Input("K", Floats({1, 1, 2, 1}, {0, std::log(3.0f)}))
      .Input("V", Floats({1, 1, 2, 1}, {4, 8}))
      .Output("Y");
  return test;
}

TEST(FlexAttentionTest, GroupedHeadsAttendThroughTheirSharedKvHead) {
  // Head 0: softmax [0, ln 3] = [1/4, 3/4] -> 1 + 6 = 7. Head 1: [1/2, 1/2] -> 6.
  auto out = TwoHeadsOneKv().Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 2, 1, 1}, {7, 6}), (*out)[0]));
}

TEST(FlexAttentionTest, ScoreModRunsBeforeAndProbModAfterTheSoftmax) {
  // score_mod Neg: head 0 scores [0, -ln 3] -> [3/4, 1/4] -> 3 + 2 = 5; head 1 unchanged, 6.
  auto out = TwoHeadsOneKv().Attr(Modifier("score_mod", "Neg")).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 2, 1, 1}, {5, 6}), (*out)[0]));

  // prob_mod p * p: head 0 [1/16, 9/16] -> 0.25 + 4.5; head 1 [1/4, 1/4] -> 1 + 2.
  out = TwoHeadsOneKv().Attr(Modifier("prob_mod", "Mul", 2)).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 2, 1, 1}, {4.75f, 3}), (*out)[0]));
}

TEST(FlexAttentionTest, ScaleDefaultsToOneOverSqrtHeadSize) {
  // E = 4, q = k0 = [1, 1, 1, 1], k1 = 0: scores [4 / sqrt(4), 0] = [2, 0].
  auto out = OpTest("FlexAttention", 1, "ai.onnx.preview")
                 .Input("Q", Floats({1, 1, 1, 4}, {1, 1, 1, 1}))
                 .Input("K", Floats({1, 1, 2, 4}, {1, 1, 1, 1, 0, 0, 0, 0}))
                 .Input("V", Floats({1, 1, 2, 1}, {1, 0}))
                 .Output("Y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const float e2 = std::exp(2.0f);
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 1}, {e2 / (e2 + 1)}), (*out)[0]));
}

TEST(FlexAttentionTest, ModifiersMustTakeOneInputAndKeepTheShape) {
  auto out = TwoHeadsOneKv().Attr(Modifier("score_mod", "Neg", 1, {"x", "extra"})).Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("score_mod must have one input and one output, has 2 and 1"),
            std::string::npos) << out.status();

  out = TwoHeadsOneKv().Attr(Modifier("prob_mod", "ReduceMax")).Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("prob_mod must return its input's type and shape"), std::string::npos)
      << out.status();
}

TEST(FlexAttentionTest, QueryHeadsMustBeAMultipleOfKvHeads) {
  auto out = OpTest("FlexAttention", 1, "ai.onnx.preview")
                 .Input("Q", Floats({1, 3, 1, 1}, {1, 1, 1}))
                 .Input("K", Floats({1, 2, 1, 1}, {1, 1}))
                 .Input("V", Floats({1, 2, 1, 1}, {1, 1}))
                 .Output("Y")
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Hq a multiple of Hkv"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace onnxserve
