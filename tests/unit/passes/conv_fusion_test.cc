// The Conv fusion pass (runtime/passes/conv_fusion.cc): results equal the unfused formula, and the plan really
// holds fewer steps.
#include <cmath>
#include <limits>

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

TEST(ConvFusionTest, AnAddThatBroadcastsComputesWhatConvThenAddComputes) {
  // The pass cannot see shapes: an exporter's [C,1,1] bias as an Add, and a one-map convolution added to a
  // two-map tensor (the sum takes the larger shape), fuse as Z all the same and must mean what Add means.
  const Tensor x = Tensor::FromVector<float>({1, 2, 2, 2}, {1, -2, 3, 0.5f, -1, 2, 0, 4});
  auto bias_add = GraphBuilder()
                      .Input("x", {1, 2, 2, 2})
                      .Initializer("w", Tensor::FromVector<float>({2, 2, 1, 1}, {0.5f, -1, 2, 0.25f}))
                      .Initializer("c", Tensor::FromVector<float>({2, 1, 1}, {0.75f, -3}))
                      .Node("Conv", {"x", "w"}, "conv")
                      .Node("Add", {"conv", "c"}, "sum")
                      .Node("Relu", {"sum"}, "y")
                      .Output("y");
  auto session = Compile(bias_add);
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), std::vector<std::string>{"FusedConv"});
  testing::ExpectSameResultWithAndWithoutPasses(bias_add.Load(), {{"x", x}});

  auto widening_add = GraphBuilder()
                          .Input("x", {1, 2, 2, 2})
                          .Input("t", {1, 2, 2, 2})
                          .Initializer("w", Tensor::FromVector<float>({1, 2, 1, 1}, {0.5f, -1}))
                          .Node("Conv", {"x", "w"}, "conv")
                          .Node("Add", {"t", "conv"}, "y")
                          .Output("y");
  const Tensor t = Tensor::FromVector<float>({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  testing::ExpectSameResultWithAndWithoutPasses(widening_add.Load(), {{"x", x}, {"t", t}});
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

// An activation node after a Conv: its op, extra inputs (Clip-11's bounds) and attributes.
struct ActivationNode {
  std::string op;
  std::vector<std::string> extra_inputs;
  std::vector<onnx::AttributeProto> attributes;
  std::string fused;  // what `onnxserve check --plan` shows: the activation and its parameters
};

// Every activation the epilogues take, as opset-20 models write them.
std::vector<ActivationNode> ActivationNodes() {
  using testing::FloatAttr;
  using testing::StringAttr;
  return {
      {"Relu", {}, {}, "Relu"},
      {"Clip", {"zero", "six"}, {}, "Clip(0, 6)"},
      {"Clip", {"", "six"}, {}, "Clip(-inf, 6)"},
      {"LeakyRelu", {}, {FloatAttr("alpha", 0.2f)}, "LeakyRelu(0.2)"},
      {"HardSigmoid", {}, {FloatAttr("alpha", 0.3f)}, "HardSigmoid(0.3, 0.5)"},
      {"HardSwish", {}, {}, "HardSwish"},
      {"Sigmoid", {}, {}, "Sigmoid"},
      {"Tanh", {}, {}, "Tanh"},
      {"Gelu", {}, {}, "Gelu"},
      {"Gelu", {}, {StringAttr("approximate", "tanh")}, "Gelu(1)"},
  };
}

// Conv (3x3, pad 1; `group` 1 runs the packed GEMM, 4 the depthwise kernel) -> BatchNormalization ->
// `activation`, on [1, 4, 7, 9].
GraphBuilder ConvThen(const ActivationNode& activation, int64_t group) {
  std::vector<std::string> inputs = {"bn"};
  inputs.insert(inputs.end(), activation.extra_inputs.begin(), activation.extra_inputs.end());
  return std::move(GraphBuilder(20)
                       .Input("x", {1, 4, 7, 9})
                       .Initializer("w", Tensor::FromVector<float>({4, 4 / group, 3, 3},
                                                                   testing::RandomFloats(4 * 4 / group * 9, 1)))
                       .Initializer("b", Tensor::FromVector<float>({4}, {0.1f, -0.2f, 0.3f, 0}))
                       .Initializer("scale", Tensor::FromVector<float>({4}, {2, 0.5f, 1, 3}))
                       .Initializer("shift", Tensor::FromVector<float>({4}, {1, -1, 0, 0.5f}))
                       .Initializer("mean", Tensor::FromVector<float>({4}, {0.3f, -0.4f, 0, 0.1f}))
                       .Initializer("var", Tensor::FromVector<float>({4}, {4, 0.25f, 1, 2}))
                       .Initializer("zero", Tensor::Scalar(0.0f))
                       .Initializer("six", Tensor::Scalar(6.0f))
                       .NodeWith("Conv", {"x", "w", "b"}, {"conv"},
                                 {testing::IntsAttr("pads", {1, 1, 1, 1}), testing::IntAttr("group", group)})
                       .Node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, "bn")
                       .NodeWith(activation.op, inputs, {"y"}, activation.attributes)
                       .Output("y"));
}

TEST(ConvFusionTest, EveryActivationFusesIntoTheConvWithTheUnfusedResult) {
  // Inputs spread over [-4, 4]: both sides of every activation's bends (HardSwish's -3 and 3, Clip's 6).
  std::vector<float> x = testing::RandomFloats(4 * 7 * 9, 2);
  for (float& v : x) v *= 4;
  for (const ActivationNode& activation : ActivationNodes()) {
    for (int64_t group : {1, 4}) {
      SCOPED_TRACE(::testing::Message() << activation.fused << ", group " << group);
      const GraphBuilder builder = ConvThen(activation, group);
      auto session = Compile(builder);
      ASSERT_NE(session, nullptr);
      EXPECT_EQ(session->plan().StepOps(), std::vector<std::string>{"FusedConv"});
      const ir::Node* fused = session->plan().graph().nodes()[0];
      const ir::Attribute* name = fused->FindAttribute("activation");
      ASSERT_NE(name, nullptr);
      EXPECT_EQ(name->s, activation.op);
      testing::ExpectSameResultWithAndWithoutPasses(builder.Load(),
                                                    {{"x", Tensor::FromVector<float>({1, 4, 7, 9}, x)}});
    }
  }
}

TEST(ConvFusionTest, AClipWithBoundsUnknownAtLoadStaysUnfused) {
  auto session = Compile(GraphBuilder(13)
                             .Input("x", {1, 1, 2, 2})
                             .Input("hi", {})
                             .Initializer("w", Tensor::FromVector<float>({1, 1, 1, 1}, {2.f}))
                             .Node("Conv", {"x", "w"}, "conv")
                             .NodeWith("Clip", {"conv", "", "hi"}, {"y"})
                             .Output("y"));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), (std::vector<std::string>{"Conv", "Clip"}));
}

TEST(ConvFusionTest, ClipBeforeOpset11TakesItsBoundsFromAttributes) {
  const GraphBuilder builder = GraphBuilder(10)
                                   .Input("x", {1, 1, 2, 2})
                                   .Initializer("w", Tensor::FromVector<float>({1, 1, 1, 1}, {2.f}))
                                   .Node("Conv", {"x", "w"}, "conv")
                                   .NodeWith("Clip", {"conv"}, {"y"},
                                             {testing::FloatAttr("min", -1), testing::FloatAttr("max", 3)});
  auto session = Compile(GraphBuilder(builder).Output("y"));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), std::vector<std::string>{"FusedConv"});
  auto out = session->Run({{"x", Tensor::FromVector<float>({1, 1, 2, 2}, {1, -2, 3, 0.25f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  // clamp(2x, -1, 3)
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {2, -1, 3, 0.5f}), (*out)[0]));
}

// Before opset 11 Clip's bounds default to the float's lowest and largest, so an infinite input comes out
// finite; fused, they defaulted to infinity and the infinities went through.
TEST(ConvFusionTest, ClipBeforeOpset11WithoutBoundsMakesInfinitiesFinite) {
  constexpr float kInf = std::numeric_limits<float>::infinity(), kMax = std::numeric_limits<float>::max();
  const GraphBuilder builder = GraphBuilder(10)
                                   .Input("x", {1, 1, 2, 2})
                                   .Initializer("w", Tensor::FromVector<float>({1, 1, 1, 1}, {1.f}))
                                   .Node("Conv", {"x", "w"}, "conv")
                                   .Node("Clip", {"conv"}, "y");
  auto session = Compile(GraphBuilder(builder).Output("y"));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), std::vector<std::string>{"FusedConv"});
  auto out = session->Run({{"x", Tensor::FromVector<float>({1, 1, 2, 2}, {kInf, -kInf, 3, 0.25f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {kMax, -kMax, 3, 0.25f}), (*out)[0]));
}

// From opset 11 an omitted bound is numeric_limits<float>::lowest() or max() too, fused or not.
TEST(ConvFusionTest, ClipWithAnOmittedBoundMakesInfinitiesFinite) {
  constexpr float kInf = std::numeric_limits<float>::infinity(), kMax = std::numeric_limits<float>::max();
  const GraphBuilder builder = GraphBuilder(13)
                                   .Input("x", {1, 1, 2, 2})
                                   .Initializer("w", Tensor::FromVector<float>({1, 1, 1, 1}, {1.f}))
                                   .Initializer("lo", Tensor::Scalar(-1.0f))
                                   .Node("Conv", {"x", "w"}, "conv")
                                   .NodeWith("Clip", {"conv", "lo"}, {"y"});
  auto session = Compile(GraphBuilder(builder).Output("y"));
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->plan().StepOps(), std::vector<std::string>{"FusedConv"});
  auto out = session->Run({{"x", Tensor::FromVector<float>({1, 1, 2, 2}, {kInf, -kInf, 3, 0.25f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 2}, {kMax, -1, 3, 0.25f}), (*out)[0]));
}

TEST(ConvFusionTest, NothingFusesAfterTheActivation) {
  auto model = GraphBuilder(20)
                   .Input("x", {1, 1, 2, 2})
                   .Initializer("w", Tensor::FromVector<float>({1, 1, 1, 1}, {2.f}))
                   .Node("Conv", {"x", "w"}, "conv")
                   .Node("HardSwish", {"conv"}, "h")
                   .Node("Sigmoid", {"h"}, "y")
                   .Output("y")
                   .Load();
  auto result = RunPass(*model, *passes::MakeConvFusion());
  EXPECT_EQ(result.ops, (std::vector<std::string>{"FusedConv", "Sigmoid"}));
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

// A convolution of no maps (W [0, C, k, k]) is valid and gives an empty map; folding a BatchNormalization of
// no channels into it, and packing the Conv's W (fused or not), divided W's element count by its zero maps:
// a SIGFPE that ended the loading process.
TEST(ConvFusionTest, ABatchNormAfterAConvOfNoMapsLoadsAndGivesTheEmptyResult) {
  const Tensor none(DataType::kFloat, {0});
  auto model = GraphBuilder(13)
                   .Input("x", {1, 2, 4, 4})
                   .Initializer("w", Tensor(DataType::kFloat, {0, 2, 3, 3}))
                   .Initializer("scale", none)
                   .Initializer("shift", none)
                   .Initializer("mean", none)
                   .Initializer("var", none)
                   .Node("Conv", {"x", "w"}, "conv")
                   .Node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, "y")
                   .Output("y")
                   .Load();
  for (bool optimize : {true, false}) {
    SCOPED_TRACE(optimize);
    SessionOptions options;
    options.optimize = optimize;
    auto session = Session::Create(model, options);
    ASSERT_TRUE(session.ok()) << session.status();
    auto out = (*session)->Run({{"x", testing::RandomTensor({1, 2, 4, 4}, 1)}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), (Shape{1, 0, 2, 2}));
  }
}

}  // namespace
}  // namespace onnxserve
