// Constant folding and Conv fusion in the plan: results equal the unfused formula, and the plan really
// holds fewer steps.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/model/tensor_proto.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::TensorsClose;

class GraphBuilder {
 public:
  GraphBuilder() {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(15);
    model_.mutable_graph()->set_name("g");
  }
  GraphBuilder& Input(const std::string& name, const Shape& shape) {
    auto* in = model_.mutable_graph()->add_input();
    in->set_name(name);
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->mutable_shape()->add_dim()->set_dim_value(d);
    return *this;
  }
  GraphBuilder& Initializer(const std::string& name, const Tensor& value) {
    *model_.mutable_graph()->add_initializer() = TensorToProto(value, name);
    return *this;
  }
  GraphBuilder& Node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(output);
    for (auto& in : inputs) n->add_input(in);
    n->add_output(output);
    return *this;
  }
  GraphBuilder& Output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  std::unique_ptr<Session> Build() {
    auto session = Session::Create(*Model::FromProto(model_, ""));
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

 private:
  onnx::ModelProto model_;
};

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

TEST(FusionTest, ConvBatchNormAddReluBecomesOneStepWithTheSameResult) {
  const std::vector<float> x = {1, -2, 3, 0.5f, -1, 2, 0, 4};  // [1, 2, 2, 2]
  const std::vector<float> w = {0.5f, -1, 2, 0.25f};             // [2, 2, 1, 1]
  const std::vector<float> b = {0.1f, -0.2f};
  const std::vector<float> scale = {2, 0.5f}, shift = {1, -1}, mean = {0.3f, -0.4f}, var = {4, 0.25f};
  const std::vector<float> z = {1, 1, -5, 0, 0.5f, -0.5f, 2, -3};  // the residual, [1, 2, 2, 2]
  auto session = GraphBuilder()
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
                     .Output("y")
                     .Build();
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

TEST(FusionTest, AConvOutputWithTwoReadersStaysUnfused) {
  const std::vector<float> x = {1, -2, 3, -4};  // [1, 1, 2, 2]
  auto session = GraphBuilder()
                     .Input("x", {1, 1, 2, 2})
                     .Initializer("w", Tensor::FromVector<float>({1, 1, 1, 1}, {2.f}))
                     .Node("Conv", {"x", "w"}, "conv")
                     .Node("Relu", {"conv"}, "y")
                     .Output("y")
                     .Output("conv")
                     .Build();
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), (std::vector<std::string>{"Conv", "Relu"}));
  auto out = session->Run({{"x", Tensor::FromVector<float>({1, 1, 2, 2}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {2, 0, 6, 0}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {2, -4, 6, -8}), (*out)[1]));
}

TEST(ConstantFoldingTest, NodesOnConstantsRunAtLoad) {
  auto session = GraphBuilder()
                     .Input("x", {2})
                     .Initializer("a", Tensor::FromVector<float>({2}, {1.f, 2.f}))
                     .Initializer("b", Tensor::FromVector<float>({2}, {10.f, 20.f}))
                     .Node("Mul", {"a", "b"}, "ab")
                     .Node("Add", {"x", "ab"}, "y")
                     .Output("y")
                     .Build();
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), std::vector<std::string>{"Add"});
  auto out = session->Run({{"x", Tensor::FromVector<float>({2}, {0.5f, -1.f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {10.5f, 39.f}), (*out)[0]));
}

// Found by tests/fuzz/model_fuzz.cc: fusion read input(1) of an Add with one input (out of range) before the
// kernel could reject the node. Whatever the kernel says, compiling must return, not crash.
TEST(FusionTest, NodesMissingInputsAreLeftToTheirKernels) {
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
