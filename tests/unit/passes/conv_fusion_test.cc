// The Conv fusion pass (runtime/passes/conv_fusion.cc): results equal the unfused formula, and the plan really
// holds fewer steps.
#include <cmath>

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

std::unique_ptr<Session> Compile(const GraphBuilder& builder) {
  auto session = Session::Create(builder.Load());
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

// A 1x1 convolution is a per-pixel matrix product: y[m] = sum_c w[m][c] x[c] + b[m].
std::vector<float> Conv1x1(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                           int channels, int maps, int pixels) {
  std::vector<float> y(maps * pixels);
  for (int m = 0; m < maps; ++m) {
    for (int p = 0; p < pixels; ++p) {
      double acc = b[m];
      for (int c = 0; c < channels; ++c) acc += w[m * channels + c] * x[c * pixels + p];
      y[m * pixels + p] = static_cast<float>(acc);
    }
  }
  return y;
}

TEST(ConvFusionTest, ConvBatchNormAddReluBecomesOneStepWithTheSameResult) {
  const std::vector<float> x = {1, -2, 3, 0.5f, -1, 2, 0, 4};  // [1, 2, 2, 2]
  const std::vector<float> w = {0.5f, -1, 2, 0.25f};             // [2, 2, 1, 1]
  const std::vector<float> b = {0.1f, -0.2f};
  const std::vector<float> scale = {2, 0.5f}, shift = {1, -1}, mean = {0.3f, -0.4f}, var = {4, 0.25f};
  const std::vector<float> z = {1, 1, -5, 0, 0.5f, -0.5f, 2, -3};  // the residual, [1, 2, 2, 2]
  auto session = Compile(GraphBuilder()
                     .Input("x", {1, 2, 2, 2})
                     .Input("z", {1, 2, 2, 2})
                     .Initializer("w", Tensor::FromVector<float>({2, 2, 1, 1}, w))
                     .Initializer("b", Tensor::FromVector<float>({2}, b))
                     .Initializer("scale", Tensor::FromVector<float>({2}, scale))
                     .Initializer("shift", Tensor::FromVector<float>({2}, shift))
                     .Initializer("mean", Tensor::FromVector<float>({2}, mean))
                     .Initializer("var", Tensor::FromVector<float>({2}, var))
                     .Node("Conv", {"x", "w", "b"}, "conv")
                     .Node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, "bn")
                     .Node("Add", {"z", "bn"}, "sum")
                     .Node("Relu", {"sum"}, "y")
                     .Output("y"));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), std::vector<std::string>{"FusedConv"});

  std::vector<float> expected = Conv1x1(x, w, b, 2, 2, 4);
  for (int i = 0; i < 8; ++i) {
    const int m = i / 4;
    const float normalized = (expected[i] - mean[m]) / std::sqrt(var[m] + 1e-5f) * scale[m] + shift[m];
    expected[i] = std::max(0.f, normalized + z[i]);
  }
  auto out = session->Run({{"x", Tensor::FromVector<float>({1, 2, 2, 2}, x)},
                           {"z", Tensor::FromVector<float>({1, 2, 2, 2}, z)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2, 2}, expected), (*out)[0], 1e-5, 1e-6));
}

TEST(ConvFusionTest, AConvOutputWithTwoReadersStaysUnfused) {
  const std::vector<float> x = {1, -2, 3, -4};  // [1, 1, 2, 2]
  auto session = Compile(GraphBuilder()
                     .Input("x", {1, 1, 2, 2})
                     .Initializer("w", Tensor::FromVector<float>({1, 1, 1, 1}, {2.f}))
                     .Node("Conv", {"x", "w"}, "conv")
                     .Node("Relu", {"conv"}, "y")
                     .Output("y")
                     .Output("conv"));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), (std::vector<std::string>{"Conv", "Relu"}));
  auto out = session->Run({{"x", Tensor::FromVector<float>({1, 1, 2, 2}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {2, 0, 6, 0}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {2, -4, 6, -8}), (*out)[1]));
}

TEST(ConvFusionTest, TheFusedNodeTakesItsReadersPlaceAfterTheResidualItReads) {
  // The residual z is computed after the Conv in the file's order: the fused node must move past it.
  auto model = GraphBuilder()
                   .Input("x", {1, 1, 2, 2})
                   .Input("r", {1, 1, 2, 2})
                   .Initializer("w", Tensor::FromVector<float>({1, 1, 1, 1}, {2.f}))
                   .Node("Conv", {"x", "w"}, "conv")
                   .Node("Neg", {"r"}, "z")
                   .Node("Add", {"conv", "z"}, "sum")
                   .Node("Relu", {"sum"}, "y")
                   .Output("y")
                   .Load();
  auto result = RunPass(*model, *passes::MakeConvFusion());
  EXPECT_EQ(result.ops, (std::vector<std::string>{"Neg", "FusedConv"}));
  ASSERT_EQ(result.changes.size(), 2u);
  EXPECT_EQ(result.changes[0], "fused node \"sum\" (Add) into node \"conv\" (Conv)");
  EXPECT_EQ(result.changes[1], "fused node \"y\" (Relu) into node \"conv\" (FusedConv)");
  testing::ExpectSameResultWithAndWithoutPasses(
      model, {{"x", Tensor::FromVector<float>({1, 1, 2, 2}, {1, -2, 3, -4})},
              {"r", Tensor::FromVector<float>({1, 1, 2, 2}, {-1, -1, 7, -9})}});
}

// Found by tests/fuzz/model_fuzz.cc: fusion read input(1) of an Add with one input (out of range) before the
// kernel could reject the node. Whatever the kernel says, compiling must return, not crash.
TEST(ConvFusionTest, NodesMissingInputsAreLeftToTheirKernels) {
  const struct {
    const char* op;
    std::vector<std::string> inputs;
  } cases[] = {{"Add", {"x"}}, {"Sum", {"x"}}, {"Relu", {}}, {"BatchNormalization", {}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(15);
    auto* graph = model.mutable_graph();
    auto* x = graph->add_input();
    x->set_name("x");
    x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* node = graph->add_node();
    node->set_op_type(c.op);
    for (const auto& in : c.inputs) node->add_input(in);
    // Through StrCat: g++ 12 warns (-Wrestrict) on add_output("y") here.
    node->add_output(absl::StrCat("y"));
    graph->add_output()->set_name("y");
    auto loaded = Model::FromProto(model, "");
    if (loaded.ok()) (void)Session::Create(*loaded);
  }
}

}  // namespace
}  // namespace onnxserve
