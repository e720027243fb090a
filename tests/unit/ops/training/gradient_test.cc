// Gradient (ai.onnx.preview.training): derivatives of small graphs worked out by hand, broadcasting
// reduced back to each input's shape, zs held constant, and errors naming what cannot be differentiated.
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/run_limits.h"
#include "runtime/exec/session.h"
#include "runtime/model/model.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::FloatAttr;
using testing::GraphBuilder;
using testing::IntAttr;
using testing::RandomTensor;
using testing::StringAttr;
using testing::StringsAttr;
using testing::TensorsClose;

// Adds Gradient(xs, zs -> y) to `graph`, its outputs "d_<x>", and runs the model on `feeds`; the outputs
// are the gradients in xs order.
absl::StatusOr<std::vector<Tensor>> RunGradient(GraphBuilder graph, const std::vector<std::string>& xs,
                                                const std::vector<std::string>& zs, const std::string& y,
                                                const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                const RunLimits& limits = {}) {
  std::vector<std::string> inputs = xs, outputs;
  inputs.insert(inputs.end(), zs.begin(), zs.end());
  for (const auto& x : xs) outputs.push_back("d_" + x);
  graph.NodeWith("Gradient", inputs, outputs, {StringsAttr("xs", xs), StringsAttr("zs", zs), StringAttr("y", y)});
  for (const auto& out : outputs) graph.Output(out);
  onnx::ModelProto proto = graph.proto();
  proto.mutable_graph()->mutable_node(proto.graph().node_size() - 1)->set_domain("ai.onnx.preview.training");
  auto* opset = proto.add_opset_import();
  opset->set_domain("ai.onnx.preview.training");
  opset->set_version(1);
  auto model = Model::FromProto(std::move(proto), "");
  if (!model.ok()) return model.status();
  auto session = Session::Create(*std::move(model));
  if (!session.ok()) return session.status();
  return (*session)->Run(feeds, outputs, limits);
}

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }

TEST(GradientTest, BroadcastMulThroughReluReducesToEachInputShape) {
  // t = x * w (w [2] broadcast over rows) = {2, 2, 6, -4}; y = Relu(t) passes all but the last.
  // dx = dt * w = {2, -1, 2, 0}; dw = column sums of dt * x = {1 + 3, -2 + 0}.
  GraphBuilder graph;
  graph.Input("x", {2, 2}).Input("w", {2}).Node("Mul", {"x", "w"}, "t").Node("Relu", {"t"}, "y").Output("y");
  auto out = RunGradient(graph, {"x", "w"}, {}, "y",
                         {{"x", Floats({2, 2}, {1, -2, 3, 4})}, {"w", Floats({2}, {2, -1})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {2, -1, 2, 0}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({2}, {4, -2}), (*out)[1]));
}

TEST(GradientTest, LogOfQuotientAndSigmoid) {
  // y = log(a / b) + sigmoid(a - b) at a = 2, b = 2: d/da = 1/a + s(1 - s) = 0.5 + 0.25,
  // d/db = -1/b - 0.25 = -0.75.
  GraphBuilder graph;
  graph.Input("a", {1}).Input("b", {1}).Node("Div", {"a", "b"}, "q").Node("Log", {"q"}, "l")
      .Node("Sub", {"a", "b"}, "d").Node("Sigmoid", {"d"}, "s").Node("Add", {"l", "s"}, "y").Output("y");
  auto out = RunGradient(graph, {"a", "b"}, {}, "y", {{"a", Floats({1}, {2})}, {"b", Floats({1}, {2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1}, {0.75f}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1}, {-0.75f}), (*out)[1]));
}

TEST(GradientTest, MatMulAndGemmWithTransposeAlphaBetaAndBroadcastBias) {
  // y = MatMul(A, B) [1,1] = 1*3 + 2*4; dA = B^T = {3, 4}, dB = A^T = {1, 2}.
  GraphBuilder matmul;
  matmul.Input("A", {1, 2}).Input("B", {2, 1}).Node("MatMul", {"A", "B"}, "y").Output("y");
  auto mm = RunGradient(matmul, {"A", "B"}, {}, "y", {{"A", Floats({1, 2}, {1, 2})}, {"B", Floats({2, 1}, {3, 4})}});
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 2}, {3, 4}), (*mm)[0]));
  EXPECT_TRUE(TensorsClose(Floats({2, 1}, {1, 2}), (*mm)[1]));
  // y = 2 * A B^T + 3 C over a [2,1] output (A [2,2], B [1,2], C [1] broadcast): dA = 2 * B in each row,
  // dB = 2 * (column sums of A), dC = 3 per output element, summed: 6.
  GraphBuilder gemm;
  gemm.Input("A", {2, 2}).Input("B", {1, 2}).Input("C", {1})
      .NodeWith("Gemm", {"A", "B", "C"}, {"y"}, {FloatAttr("alpha", 2), FloatAttr("beta", 3), IntAttr("transB", 1)})
      .Output("y");
  auto g = RunGradient(gemm, {"A", "B", "C"}, {}, "y",
                       {{"A", Floats({2, 2}, {1, 2, 3, 4})}, {"B", Floats({1, 2}, {5, 6})}, {"C", Floats({1}, {7})}});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {10, 12, 10, 12}), (*g)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 2}, {8, 12}), (*g)[1]));
  EXPECT_TRUE(TensorsClose(Floats({1}, {6}), (*g)[2]));
}

TEST(GradientTest, ZsAreInputsHeldConstantAndUnusedXsGetZeros) {
  // y = exp(x) * z: dy/dx = exp(x) * z = 3 at x = 0, z = 3; u does not reach y.
  GraphBuilder graph;
  graph.Input("x", {1}).Input("z", {1}).Input("u", {1}).Node("Exp", {"x"}, "e").Node("Mul", {"e", "z"}, "y")
      .Node("Neg", {"u"}, "n").Output("y").Output("n");
  auto out = RunGradient(graph, {"x", "u"}, {"z"}, "y",
                         {{"x", Floats({1}, {0})}, {"z", Floats({1}, {3})}, {"u", Floats({1}, {5})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1}, {3}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1}, {0}), (*out)[1]));
}

TEST(GradientTest, UnsupportedOperatorIsUnimplementedNamingIt) {
  GraphBuilder graph;
  graph.Input("x", {2}).Node("Softmax", {"x"}, "y").Output("y");
  auto out = RunGradient(graph, {"x"}, {}, "y", {{"x", Floats({2}, {1, 2})}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented) << out.status();
  EXPECT_NE(out.status().message().find("Softmax"), std::string::npos) << out.status();
}

TEST(GradientTest, DependenceOnAnInputOutsideXsAndZsIsAnErrorNamingIt) {
  GraphBuilder graph;
  graph.Input("x", {1}).Input("other", {1}).Node("Add", {"x", "other"}, "y").Output("y");
  auto out = RunGradient(graph, {"x"}, {}, "y", {{"x", Floats({1}, {1})}, {"other", Floats({1}, {1})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("\"other\""), std::string::npos) << out.status();
}

// The backward products of a MatMul are two more products of its size, and a run that must stop stops
// inside them. The graph's MatMul and the tape's forward one count 2 x 315^3 multiply-adds, under the 2^26
// between two checks, so only the backward products can make the Gradient kernel check the run's limits:
// the run is cancelled from its third check on, after the executor's before each of the two nodes.
TEST(GradientTest, AMatMulsBackwardProductsStopWhenTheRunMust) {
  const int64_t n = 315;
  GraphBuilder graph;
  graph.Input("A", {n, n}).Input("B", {n, n}).Node("MatMul", {"A", "B"}, "y").Output("y");
  std::atomic<int> checks{0};
  const RunLimits limits(absl::InfiniteFuture(), [&] { return checks.fetch_add(1) >= 2; });
  StopIfRunEnded(int64_t{1} << 26);  // outside a run: starts this thread's count of work afresh
  auto out = RunGradient(graph, {"A", "B"}, {}, "y", {{"A", RandomTensor({n, n}, 1)}, {"B", RandomTensor({n, n}, 2)}},
                         limits);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
  EXPECT_GE(checks.load(), 3);
}

}  // namespace
}  // namespace onnxserve
