// The channels-last pass (runtime/passes/channels_last.cc): which nodes it moves to NHWC, where it changes
// the layout, and that a rewritten model computes what the unoptimized graph computes, at one and two
// threads. Where NhwcConv does not run (no oneDNN, no AVX2) the pass must leave graphs alone.
#include <functional>
#include <limits>
#include <utility>

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/math/nhwc_conv.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::CountOps;
using testing::GraphBuilder;
using testing::IntAttr;
using testing::IntsAttr;
using testing::OpTest;
using testing::RandomTensor;
using testing::RunPass;
using testing::TensorsClose;

// A MobileNetV3 block on an image of `side` x `side`: a 3x3 stem, an expanding 1x1, a depthwise 3x3 at stride 2, a
// squeeze-excite scale (global pool, two 1x1s on one pixel, Mul), a projecting 1x1, and a residual 1x1 whose
// Add reads the projection; then the pooled result leaves as [1, 24].
GraphBuilder MobileNetBlock(int64_t side) {
  return GraphBuilder(14)
      .Input("x", {1, 3, side, side})
      .Initializer("w_stem", RandomTensor({16, 3, 3, 3}, 1))
      .Initializer("w_expand", RandomTensor({48, 16, 1, 1}, 2))
      .Initializer("b_expand", RandomTensor({48}, 3))
      .Initializer("w_dw", RandomTensor({48, 1, 3, 3}, 4))
      .Initializer("w_squeeze", RandomTensor({12, 48, 1, 1}, 5))
      .Initializer("w_excite", RandomTensor({48, 12, 1, 1}, 6))
      .Initializer("w_project", RandomTensor({24, 48, 1, 1}, 7))
      .Initializer("w_residual", RandomTensor({24, 24, 1, 1}, 8))
      .NodeWith("Conv", {"x", "w_stem"}, {"stem"}, {IntsAttr("pads", {1, 1, 1, 1})})
      .Node("HardSwish", {"stem"}, "stem_act")
      .Node("Conv", {"stem_act", "w_expand", "b_expand"}, "expand")
      .Node("Relu", {"expand"}, "expand_act")
      .NodeWith("Conv", {"expand_act", "w_dw"}, {"dw"},
                {IntAttr("group", 48), IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 1, 1, 1})})
      .Node("HardSwish", {"dw"}, "dw_act")
      .Node("GlobalAveragePool", {"dw_act"}, "pooled")
      .Node("Conv", {"pooled", "w_squeeze"}, "squeeze")
      .Node("Relu", {"squeeze"}, "squeeze_act")
      .Node("Conv", {"squeeze_act", "w_excite"}, "excite")
      .Node("HardSigmoid", {"excite"}, "scale")
      .Node("Mul", {"dw_act", "scale"}, "scaled")
      .Node("Conv", {"scaled", "w_project"}, "project")
      .Node("Conv", {"project", "w_residual"}, "residual")
      .Node("Add", {"residual", "project"}, "sum")
      .Node("GlobalAveragePool", {"sum"}, "head")
      .Node("Flatten", {"head"}, "y")
      .Output("y");
}

// Sums of a few hundred products of numbers in [-1, 1] are rounded differently by oneDNN's and our
// summation orders: equal to 1e-4.
void ExpectSameAsUnoptimized(const std::shared_ptr<const Model>& model, const Tensor& x, int threads = 1) {
  testing::ExpectSameResultWithAndWithoutPasses(model, {{"x", x}}, threads, 1e-4, 1e-4);
}

// The graphs below start with a depthwise convolution: a group of dense ones only stays NCHW on AVX2
// (DenseGroupsMoveOnlyWhereOneDnnWins), and these must move on every ISA.
class ChannelsLastTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NhwcConvAvailable()) GTEST_SKIP() << "built without oneDNN, or the CPU has no AVX2: the pass does nothing";
  }
};

TEST_F(ChannelsLastTest, AMobileNetBlockRunsInNhwcBetweenOneChangeInAndOneOut) {
  auto session = Session::Create(MobileNetBlock(128).Load());
  ASSERT_TRUE(session.ok()) << session.status();
  const std::vector<std::string> ops = (*session)->plan().StepOps();
  // Five convolutions in NHWC, four nodes (the expansion is the depthwise one's prologue,
  // nhwc_prologue_fusion_test.cc); the squeeze-excite pair on one pixel stays ours, between changes of C
  // numbers.
  EXPECT_EQ(CountOps(ops, "NhwcConv"), 4) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOps(ops, "FusedConv"), 2) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOps(ops, "NhwcGlobalAveragePool"), 2) << ::testing::PrintToString(ops);
  // In: the image; out: the pooled map for the squeeze, the head for Flatten; back in: the scale.
  EXPECT_EQ(CountOps(ops, "ToNhwc"), 2) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOps(ops, "FromNhwc"), 2) << ::testing::PrintToString(ops);
}

TEST_F(ChannelsLastTest, AMobileNetBlockComputesWhatTheUnoptimizedGraphComputes) {
  // Two threads cut every convolution into bands of rows.
  const Tensor x = RandomTensor({1, 3, 128, 128}, 9);
  ExpectSameAsUnoptimized(MobileNetBlock(128).Load(), x, 1);
  ExpectSameAsUnoptimized(MobileNetBlock(128).Load(), x, 2);
}

// A node's oneDNN plans are kept per image size, not per batch: a session serving requests of one image size
// and several batch sizes computes each request's every image (the plans once ran the first request's batch).
TEST_F(ChannelsLastTest, RequestsOfOtherBatchesOnOneSessionComputeEveryImage) {
  onnx::ModelProto proto = MobileNetBlock(128).proto();
  proto.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_param("N");
  auto model = Model::FromProto(proto, "");
  ASSERT_TRUE(model.ok()) << model.status();
  SessionOptions plain_options;
  plain_options.optimize = false;
  auto optimized = Session::Create(*model);
  auto plain = Session::Create(*model, plain_options);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_GT(CountOps((*optimized)->plan().StepOps(), "NhwcConv"), 0);
  for (const int64_t batch : {1, 3, 1, 2}) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch);
    const Tensor x = RandomTensor({batch, 3, 128, 128}, static_cast<int>(10 + batch));
    auto got = (*optimized)->Run({{"x", x}});
    auto want = (*plain)->Run({{"x", x}});
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_TRUE(TensorsClose((*want)[0], (*got)[0], 1e-4, 1e-4));
  }
}

TEST_F(ChannelsLastTest, SmallMapsStayInNchw) {
  // At 8 x 8 the block's convolutions average far below a call of oneDNN's worth.
  auto session = Session::Create(MobileNetBlock(8).Load());
  ASSERT_TRUE(session.ok()) << session.status();
  const std::vector<std::string> ops = (*session)->plan().StepOps();
  EXPECT_EQ(CountOps(ops, "NhwcConv"), 0) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOps(ops, "ToNhwc") + CountOps(ops, "FromNhwc"), 0) << ::testing::PrintToString(ops);
}

TEST_F(ChannelsLastTest, DenseGroupsMoveOnlyWhereOneDnnWins) {
  // Two dense convolutions of a 48 x 48 map: NHWC on AVX-512 (brgconv beats our GEMM), NCHW on AVX2 (its
  // jit kernels only tie ours).
  auto model = GraphBuilder()
                   .Input("x", {1, 32, 48, 48})
                   .Initializer("w_a", RandomTensor({32, 32, 3, 3}, 1))
                   .Initializer("w_b", RandomTensor({32, 32, 1, 1}, 2))
                   .NodeWith("Conv", {"x", "w_a"}, {"a"}, {IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("Conv", {"a", "w_b"}, "b")
                   .Node("Relu", {"b"}, "y")
                   .Output("y")
                   .Load();
  const auto pass = passes::MakeChannelsLast();
  const testing::PassResult result = RunPass(*model, *pass);
  EXPECT_EQ(CountOps(result.ops, "NhwcConv"), NhwcDenseConvsWin() ? 2 : 0) << ::testing::PrintToString(result.ops);
  ExpectSameAsUnoptimized(model, RandomTensor({1, 32, 48, 48}, 3));
}

TEST_F(ChannelsLastTest, ALoneConvolutionAndOnesReadByTheGraphStayInNchw) {
  // conv_a's map is a graph output, so it stays NCHW, and conv_b alone has no partner.
  auto model = GraphBuilder()
                   .Input("x", {1, 32, 48, 48})
                   .Initializer("w_a", RandomTensor({32, 32, 1, 1}, 1))
                   .Initializer("w_b", RandomTensor({32, 32, 3, 3}, 2))
                   .Node("Conv", {"x", "w_a"}, "conv_a")
                   .NodeWith("Conv", {"conv_a", "w_b"}, {"y"}, {IntsAttr("pads", {1, 1, 1, 1})})
                   .Output("conv_a")
                   .Output("y")
                   .Load();
  const auto pass = passes::MakeChannelsLast();
  const testing::PassResult result = RunPass(*model, *pass);
  EXPECT_TRUE(result.changes.empty()) << ::testing::PrintToString(result.changes);
  EXPECT_EQ(result.ops, (std::vector<std::string>{"Conv", "Conv"}));
}

TEST_F(ChannelsLastTest, AMulOfMapsOfOtherChannelsKeepsItsOperandsInNchw) {
  // [1,1,H,W] * [1,32,H,W] broadcasts over channels in NCHW; in NHWC the same dims would not: the Mul stays
  // out, and what it reads changes back.
  auto model = GraphBuilder()
                   .Input("x", {1, 32, 128, 128})
                   .Initializer("w_a", RandomTensor({32, 1, 3, 3}, 1))
                   .Initializer("w_b", RandomTensor({1, 32, 1, 1}, 2))
                   .Initializer("w_c", RandomTensor({32, 32, 1, 1}, 3))
                   .NodeWith("Conv", {"x", "w_a"}, {"a"}, {IntAttr("group", 32), IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("Conv", {"a", "w_b"}, "b")
                   .Node("Conv", {"a", "w_c"}, "c")
                   .Node("Mul", {"b", "c"}, "y")
                   .Output("y")
                   .Load();
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::vector<std::string> ops = (*session)->plan().StepOps();
  EXPECT_EQ(CountOps(ops, "NhwcConv"), 3) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOps(ops, "FromNhwc"), 2) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOps(ops, "Mul"), 1) << ::testing::PrintToString(ops);
  ExpectSameAsUnoptimized(model, RandomTensor({1, 32, 128, 128}, 4));
}

TEST_F(ChannelsLastTest, AShapeOneDnnRefusesRunsOnTheFallbackWithTheSameResult) {
  // A 1x1 with pads reads only zeros at its border, which oneDNN does not take: that node converts the
  // maps back, runs FusedConv's kernel, and converts its result. (The last convolution's map is the graph's
  // output, so it stays in NCHW.)
  auto model = GraphBuilder()
                   .Input("x", {1, 32, 128, 128})
                   .Initializer("w_a", RandomTensor({32, 1, 3, 3}, 1))
                   .Initializer("w_b", RandomTensor({32, 32, 1, 1}, 2))
                   .Initializer("w_c", RandomTensor({16, 32, 3, 3}, 3))
                   .NodeWith("Conv", {"x", "w_a"}, {"a"}, {IntAttr("group", 32), IntsAttr("pads", {1, 1, 1, 1})})
                   .NodeWith("Conv", {"a", "w_b"}, {"b"}, {IntsAttr("pads", {2, 2, 2, 2})})
                   .NodeWith("Conv", {"b", "w_c"}, {"y"}, {IntsAttr("pads", {1, 1, 1, 1})})
                   .Output("y")
                   .Load();
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ((*session)->plan().StepOps(), (std::vector<std::string>{"ToNhwc", "NhwcConv", "NhwcConv", "FromNhwc", "Conv"}));
  ExpectSameAsUnoptimized(model, RandomTensor({1, 32, 128, 128}, 4));
}

TEST_F(ChannelsLastTest, AResidualThatBroadcastsRunsOnTheFallbackWithTheSameResult) {
  // Add(conv_b, pooled) fuses pooled as conv_b's Z, of [1,32,1,1] where Y is [1,32,128,128]: in NHWC too the
  // node must compute what the Add computes. (The last convolution's map is the graph's output: NCHW.)
  auto model = GraphBuilder()
                   .Input("x", {1, 32, 128, 128})
                   .Initializer("w_a", RandomTensor({32, 1, 3, 3}, 1))
                   .Initializer("w_b", RandomTensor({32, 32, 1, 1}, 2))
                   .Initializer("w_c", RandomTensor({16, 32, 3, 3}, 3))
                   .NodeWith("Conv", {"x", "w_a"}, {"a"}, {IntAttr("group", 32), IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("GlobalAveragePool", {"a"}, "pooled")
                   .Node("Conv", {"a", "w_b"}, "b")
                   .Node("Add", {"b", "pooled"}, "sum")
                   .NodeWith("Conv", {"sum", "w_c"}, {"c"}, {IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("Relu", {"c"}, "y")
                   .Output("y")
                   .Load();
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ((*session)->plan().StepOps(), (std::vector<std::string>{"ToNhwc", "NhwcConv", "NhwcGlobalAveragePool",
                                                                     "NhwcConv", "FromNhwc", "FusedConv"}));
  ExpectSameAsUnoptimized(model, RandomTensor({1, 32, 128, 128}, 4));
}

// Two convolutions NhwcConv runs on every ISA (a depthwise one first), then `tail` reading the second's
// map "b" and writing "y".
GraphBuilder TwoConvolutionsThen(const std::function<void(GraphBuilder&)>& tail) {
  GraphBuilder builder;
  builder.Input("x", {1, 32, 128, 128})
      .Initializer("w_a", RandomTensor({32, 1, 3, 3}, 1))
      .Initializer("w_b", RandomTensor({32, 32, 3, 3}, 2))
      .NodeWith("Conv", {"x", "w_a"}, {"a"}, {IntAttr("group", 32), IntsAttr("pads", {1, 1, 1, 1})})
      .NodeWith("Conv", {"a", "w_b"}, {"b"}, {IntsAttr("pads", {1, 1, 1, 1})});
  tail(builder);
  return builder.Output("y");
}

// The plan's ops when TwoConvolutionsThen's two run in NHWC and the rest computes what the unoptimized graph
// computes.
std::vector<std::string> ExpectTwoNhwcConvsAndTheUnoptimizedResult(const std::shared_ptr<const Model>& model) {
  auto session = Session::Create(model);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  const std::vector<std::string> ops = (*session)->plan().StepOps();
  EXPECT_EQ(CountOps(ops, "NhwcConv"), 2) << ::testing::PrintToString(ops);
  ExpectSameAsUnoptimized(model, RandomTensor({1, 32, 128, 128}, 4));
  return ops;
}

// A depthwise 3x3 of 32 maps, a MaxPool with `pool_attrs` and a 1x1 to 64 maps, pooled to [1, 64, 1, 1].
GraphBuilder PooledBlock(int opset, int64_t side, std::vector<onnx::AttributeProto> pool_attrs) {
  return GraphBuilder(opset)
      .Input("x", {1, 32, side, side})
      .Initializer("w_dw", RandomTensor({32, 1, 3, 3}, 1))
      .Initializer("w_pw", RandomTensor({64, 32, 1, 1}, 2))
      .NodeWith("Conv", {"x", "w_dw"}, {"dw"}, {IntAttr("group", 32), IntsAttr("pads", {1, 1, 1, 1})})
      .NodeWith("MaxPool", {"dw"}, {"pooled"}, std::move(pool_attrs))
      .Node("Conv", {"pooled", "w_pw"}, "pw")
      .Node("GlobalAveragePool", {"pw"}, "y")
      .Output("y");
}

// ResNet's stem pool, windows past the image at its end (ceil_mode, an odd size), dilated windows,
// asymmetric pads: the windows are MaxPool's own, only read from NHWC maps.
TEST_F(ChannelsLastTest, AMaxPoolBetweenConvolutionsRunsInNhwcAndComputesWhatMaxPoolComputes) {
  const std::vector<std::vector<onnx::AttributeProto>> pools = {
      {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 1, 1, 1})},
      {IntsAttr("kernel_shape", {2, 2}), IntsAttr("strides", {2, 2})},
      {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}), IntAttr("ceil_mode", 1)},
      {IntsAttr("kernel_shape", {3, 3}), IntsAttr("dilations", {2, 2}), IntsAttr("pads", {2, 2, 2, 2})},
      {IntsAttr("kernel_shape", {5, 3}), IntsAttr("strides", {3, 1}), IntsAttr("pads", {2, 0, 1, 1})},
  };
  for (size_t i = 0; i < pools.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "pool " << i);
    const auto model = PooledBlock(14, 127, pools[i]).Load();
    auto session = Session::Create(model);
    ASSERT_TRUE(session.ok()) << session.status();
    const std::vector<std::string> ops = (*session)->plan().StepOps();
    EXPECT_EQ(CountOps(ops, "NhwcMaxPool"), 1) << ::testing::PrintToString(ops);
    EXPECT_EQ(CountOps(ops, "ToNhwc"), 1) << ::testing::PrintToString(ops);
    const Tensor x = RandomTensor({1, 32, 127, 127}, 3);
    ExpectSameAsUnoptimized(model, x, 1);
    ExpectSameAsUnoptimized(model, x, 2);
  }
}

// Before opset 10 MaxPool has no ceil_mode: its kernel ignores one a model sets, which NhwcMaxPool would not.
TEST_F(ChannelsLastTest, AMaxPoolOfAnOpsetBeforeCeilModeThatSetsItStaysInNchw) {
  const auto model = PooledBlock(8, 127, {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}),
                                          IntAttr("ceil_mode", 1)})
                         .Load();
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::vector<std::string> ops = (*session)->plan().StepOps();
  EXPECT_EQ(CountOps(ops, "NhwcMaxPool"), 0) << ::testing::PrintToString(ops);
  EXPECT_EQ(CountOps(ops, "MaxPool"), 1) << ::testing::PrintToString(ops);
}

TEST_F(ChannelsLastTest, AMulByOneNumberOfRankFiveStaysInNchw) {
  // One number of shape [1,1,1,1,1] makes the map [1,1,32,128,128]: a layout of four dims cannot hold it, and
  // FromNhwc refused it on every request.
  auto model = TwoConvolutionsThen([](GraphBuilder& b) {
                 b.Initializer("two", Tensor::FromVector<float>({1, 1, 1, 1, 1}, {2.f}))
                     .Node("Mul", {"b", "two"}, "scaled")
                     .Node("Neg", {"scaled"}, "y");
               }).Load();
  EXPECT_EQ(CountOps(ExpectTwoNhwcConvsAndTheUnoptimizedResult(model), "Mul"), 1);
}

TEST_F(ChannelsLastTest, AConvolutionOfNoMapsStaysInNchw) {
  // W [0, 32, 3, 3] is a valid convolution of an empty map, which NhwcConv refused at load.
  auto model = TwoConvolutionsThen([](GraphBuilder& b) {
                 b.Initializer("w_none", Tensor(DataType::kFloat, {0, 32, 3, 3}))
                     .NodeWith("Conv", {"b", "w_none"}, {"none"}, {IntsAttr("pads", {1, 1, 1, 1})})
                     .Node("Relu", {"none"}, "relu")
                     .Node("Neg", {"relu"}, "y");
               }).Load();
  ExpectTwoNhwcConvsAndTheUnoptimizedResult(model);
}

TEST_F(ChannelsLastTest, AMapOfAConvolutionOutsideWhoseResidualWidensItStaysInNchw) {
  // Conv -> Add of a [1,1,1,1,1] number fuses into one FusedConv whose result is [1,1,32,128,128]: the Add
  // reading it with b's map cannot take it in a layout of four dims (ToNhwc refused it on every request).
  auto model = TwoConvolutionsThen([](GraphBuilder& b) {
                 b.Initializer("w_c", RandomTensor({32, 32, 3, 3}, 3))
                     .Initializer("one", Tensor::FromVector<float>({1, 1, 1, 1, 1}, {1.f}))
                     .NodeWith("Conv", {"a", "w_c"}, {"c"}, {IntsAttr("pads", {1, 1, 1, 1})})
                     .Node("Add", {"c", "one"}, "c_plus_one")
                     .Node("Relu", {"b"}, "b_relu")  // fuses into b's convolution: the Add stays
                     .Node("Add", {"b_relu", "c_plus_one"}, "sum")
                     .Node("Neg", {"sum"}, "y");
               }).Load();
  ExpectTwoNhwcConvsAndTheUnoptimizedResult(model);
}

TEST_F(ChannelsLastTest, ItsNewValuesTakeNoNameOfTheModel) {
  // The model names a value as the pass would name x's NHWC copy: subgraphs read outer values by name, so
  // that name must keep meaning the model's value.
  auto model = GraphBuilder()
                   .Input("x", {1, 32, 128, 128})
                   .Initializer("w_a", RandomTensor({32, 1, 3, 3}, 1))
                   .Initializer("w_b", RandomTensor({32, 32, 1, 1}, 2))
                   .NodeWith("Conv", {"x", "w_a"}, {"a"}, {IntAttr("group", 32), IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("Conv", {"a", "w_b"}, "b")
                   .Node("Relu", {"b"}, "y")
                   .Node("Neg", {"x"}, "x/onnxserve_nhwc")
                   .Output("y")
                   .Output("x/onnxserve_nhwc")
                   .Load();
  const auto pass = passes::MakeChannelsLast();
  const testing::PassResult result = RunPass(*model, *pass);
  ASSERT_EQ(CountOps(result.ops, "ToNhwc"), 1) << ::testing::PrintToString(result.ops);
  const ir::Value* named = result.graph->FindValue("x/onnxserve_nhwc");
  ASSERT_NE(named, nullptr);
  ASSERT_NE(named->producer(), nullptr);
  EXPECT_EQ(named->producer()->op_type(), "Neg");
}

// GlobalAveragePool sums each plane in double; the pass's NHWC pool must give the same means, however large
// the map a request sends. Summed in float pixel by pixel, 2^22 pixels of 0.7 came to a mean of 0.729 (4%
// off), of 1.1 to 1.053: past 2^24 / 0.7 the sum stops growing by each pixel as it should.
TEST(ChannelsLastOpsTest, TheNhwcPoolsMeanOfAHugeMapIsGlobalAveragePools) {
  for (const float v : {0.7f, 1.1f}) {
    Tensor x(DataType::kFloat, {1, 2048, 2048, 2});
    for (float& e : x.mutable_values<float>()) e = v;
    auto result = OpTest("NhwcGlobalAveragePool", 1, "ai.onnxserve").Input("x", x).Output("y").Run();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1, 2}, {v, v}), (*result)[0], 1e-6, 0)) << v;
  }
}

// The NHWC pool sums each image in two halves of its rows, which two threads share: the means must not
// depend on how many threads there are, and must be GlobalAveragePool's (of the NCHW map) to float
// rounding. Odd pixel counts, a half that ends inside a block of 64 pixels, channels past one run of 64.
TEST(ChannelsLastOpsTest, TheNhwcPoolsMeansAreTheSameOnOneOrTwoThreads) {
  for (const Shape& shape : {Shape{1, 30, 30, 70}, Shape{3, 9, 13, 130}, Shape{2, 1, 1, 5}, Shape{1, 0, 4, 3}}) {
    Tensor nhwc(DataType::kFloat, shape);
    Tensor nchw(DataType::kFloat, {shape[0], shape[3], shape[1], shape[2]});
    for (int64_t i = 0; i < nhwc.NumElements(); ++i) {
      const int64_t c = i % shape[3], pixel = i / shape[3] % (shape[1] * shape[2]), n = i / (shape[3] * shape[1] * shape[2]);
      const float v = static_cast<float>((i * 7919) % 1000) / 997.0f - 0.4f;
      nhwc.data<float>()[i] = v;
      nchw.data<float>()[(n * shape[3] + c) * shape[1] * shape[2] + pixel] = v;
    }
    auto one = OpTest("NhwcGlobalAveragePool", 1, "ai.onnxserve").Threads(1).Input("x", nhwc).Output("y").Run();
    auto two = OpTest("NhwcGlobalAveragePool", 1, "ai.onnxserve").Threads(2).Input("x", nhwc).Output("y").Run();
    auto plain = OpTest("GlobalAveragePool", 1).Input("x", nchw).Output("y").Run();
    ASSERT_TRUE(one.ok() && two.ok() && plain.ok()) << one.status() << two.status() << plain.status();
    EXPECT_TRUE(TensorsClose((*one)[0], (*two)[0], 0, 0)) << ShapeToString(shape);
    EXPECT_TRUE(TensorsClose((*plain)[0].Reshaped({shape[0], 1, 1, shape[3]}), (*one)[0], 1e-6, 1e-7))
        << ShapeToString(shape);
  }
}

// A 3x3 at stride 1 on maps this large runs on AVX-512 through oneDNN's Winograd kernel, whose input
// transform adds and scales neighbouring pixels before the weights scale them down: inputs of 1e38 came out
// inf and of 3e38 NaN everywhere, where the definition's sums of products by 1e-3 are at most 4.32e37 and
// 1.44e37. NhwcConv must give the definition's numbers however a request fills its maps.
// 64 x 64 maps of 16 channels: bands of 32 rows or more, Winograd's, on one or two threads; 32 x 32 maps of
// 32 on two threads: too few rows a thread, so Winograd's bands of all rows and 16 maps each.
TEST(ChannelsLastOpsTest, AThreeByThreeOfHugeInputsGivesTheDefinitionsNumbers) {
  struct Case {
    int64_t side, channels;
    float v;
    int threads;
  };
  for (const Case& c : {Case{64, 16, 1e38f, 1}, Case{64, 16, 3e38f, 1}, Case{64, 16, 3e38f, 2}, Case{32, 32, 3e38f, 2}}) {
    const Tensor w = Tensor::FromVector<float>({c.channels, c.channels, 3, 3},
                                               std::vector<float>(c.channels * c.channels * 9, 1e-3f));
    Tensor x(DataType::kFloat, {1, c.side, c.side, c.channels});
    for (float& e : x.mutable_values<float>()) e = c.v;
    // Each output: v * 1e-3 for each channel of each tap inside the image.
    Tensor want(DataType::kFloat, {1, c.side, c.side, c.channels});
    auto inside = [&](int64_t at) { return 3 - (at == 0) - (at == c.side - 1); };
    for (int64_t h = 0; h < c.side; ++h) {
      for (int64_t w = 0; w < c.side; ++w) {
        for (int64_t m = 0; m < c.channels; ++m) {
          want.data<float>()[(h * c.side + w) * c.channels + m] =
              static_cast<float>(static_cast<double>(c.v) * 1e-3 * c.channels * inside(h) * inside(w));
        }
      }
    }
    auto got = OpTest("NhwcConv", 1, "ai.onnxserve").Threads(c.threads).Input("x", x).Constant("w", w)
                   .Attr("pads", std::vector<int64_t>{1, 1, 1, 1}).Output("y").Run();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(TensorsClose(want, (*got)[0], 1e-5, 0))
        << "inputs of " << c.v << ", " << c.side << " x " << c.side << " x " << c.channels << " on " << c.threads
        << " threads";
  }
}

// `builder`'s model with its first node in ai.onnxserve: the internal ops are reachable by any model that
// names their domain.
absl::StatusOr<std::shared_ptr<const Model>> WithInternalFirstNode(const GraphBuilder& builder) {
  onnx::ModelProto model = builder.proto();
  model.mutable_graph()->mutable_node(0)->set_domain("ai.onnxserve");
  auto* opset = model.add_opset_import();
  opset->set_domain("ai.onnxserve");
  opset->set_version(1);
  return Model::FromProto(model, "");
}

TEST(ChannelsLastOpsTest, HostileShapesAreErrorsNotCrashes) {
  // X of the wrong channels or rank.
  auto loaded = WithInternalFirstNode(GraphBuilder()
                                          .Input("x", {1, 2, 2, 5})
                                          .Initializer("w", RandomTensor({8, 4, 1, 1}, 1))
                                          .NodeWith("NhwcConv", {"x", "w"}, {"y"}, {})
                                          .Output("y"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto session = Session::Create(*loaded);
  ASSERT_TRUE(session.ok()) << session.status();
  auto wrong_channels = (*session)->Run({{"x", RandomTensor({1, 2, 2, 5}, 2)}});
  EXPECT_EQ(wrong_channels.status().code(), absl::StatusCode::kInvalidArgument) << wrong_channels.status();
  auto wrong_rank = (*session)->Run({{"x", RandomTensor({1, 2, 4}, 2)}});
  EXPECT_FALSE(wrong_rank.ok());
}

TEST(ChannelsLastOpsTest, APrologueOfTheWrongShapeIsALoadErrorAndXOfTheWrongChannelsARunError) {
  const auto depthwise_with_prologue = [](const Shape& w_pre) {
    return WithInternalFirstNode(GraphBuilder()
                                     .Input("x", {1, 8, 8, 4})
                                     .Initializer("w", RandomTensor({16, 1, 3, 3}, 1))
                                     .Initializer("w_pre", RandomTensor(w_pre, 2))
                                     .NodeWith("NhwcConv", {"x", "w", "", "", "w_pre"}, {"y"},
                                               {IntAttr("group", 16), IntsAttr("pads", {1, 1, 1, 1})})
                                     .Output("y"));
  };
  for (const Shape& wrong : std::vector<Shape>{{8, 4, 1, 1}, {16, 4, 3, 3}, {16, 0, 1, 1}, {16, 4}}) {
    auto loaded = depthwise_with_prologue(wrong);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_FALSE(Session::Create(*loaded).ok()) << "W' " << ::testing::PrintToString(wrong);
  }
  auto loaded = depthwise_with_prologue({16, 4, 1, 1});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto session = Session::Create(*loaded);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_TRUE((*session)->Run({{"x", RandomTensor({1, 8, 8, 4}, 3)}}).ok());
  auto wrong_channels = (*session)->Run({{"x", RandomTensor({1, 8, 8, 16}, 3)}});
  EXPECT_EQ(wrong_channels.status().code(), absl::StatusCode::kInvalidArgument) << wrong_channels.status();
}

TEST(ChannelsLastOpsTest, AMaxPoolOfHostileWindowsIsAnErrorNotACrash) {
  const auto max_pool = [](std::vector<onnx::AttributeProto> attrs) {
    return WithInternalFirstNode(
        GraphBuilder().Input("x", {1, 4, 4, 3}).NodeWith("NhwcMaxPool", {"x"}, {"y"}, std::move(attrs)).Output("y"));
  };
  // A kernel of three dims, none at all, or past the padded image.
  for (auto attrs : std::vector<std::vector<onnx::AttributeProto>>{{IntsAttr("kernel_shape", {2, 2, 2})}, {}}) {
    auto loaded = max_pool(attrs);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_FALSE(Session::Create(*loaded).ok());
  }
  auto loaded = max_pool({IntsAttr("kernel_shape", {9, 2})});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto session = Session::Create(*loaded);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ((*session)->Run({{"x", RandomTensor({1, 4, 4, 3}, 1)}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE((*session)->Run({{"x", RandomTensor({4, 4, 3}, 1)}}).ok());
}

// A request of no images (or of no channels) may declare an image of any height: nothing bounds the dims of an
// empty tensor but their product. Its output is empty too, and the kernel must make nothing per output row
// (PlanPool built its windows, 32 bytes a row: 32 GB for these 2^30 rows).
TEST(ChannelsLastOpsTest, AMaxPoolOfNoImagesOrNoChannelsMakesNothingForTheRowsItDeclares) {
  for (const Shape& shape : std::vector<Shape>{{0, int64_t{1} << 30, 1, 1}, {1, int64_t{1} << 30, 1, 0}}) {
    auto got = OpTest("NhwcMaxPool", 1, "ai.onnxserve")
                   .Input("x", Tensor(DataType::kFloat, shape))
                   .Attr("kernel_shape", std::vector<int64_t>{1, 1})
                   .Output("y")
                   .Run();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].shape(), shape);
  }
}

// MaxPool's value is the largest of its window's: a window of -inf and NaN only (NaN loses to any number) is
// -inf, as MaxPool's kernels give it. NhwcMaxPool started from the lowest float and gave -3.4e38 there.
TEST(ChannelsLastOpsTest, AMaxPoolOfWindowsOfMinusInfinityIsMinusInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const float fill : {-inf, std::numeric_limits<float>::quiet_NaN()}) {
    Tensor x(DataType::kFloat, {1, 3, 3, 2});
    for (float& e : x.mutable_values<float>()) e = fill;
    x.data<float>()[1] = 5;  // channel 1 of pixel (0, 0): in the first window only
    auto got = OpTest("NhwcMaxPool", 1, "ai.onnxserve")
                   .Input("x", x)
                   .Attr("kernel_shape", std::vector<int64_t>{2, 2})
                   .Output("y")
                   .Run();
    ASSERT_TRUE(got.ok()) << got.status();
    const Tensor want = Tensor::FromVector<float>({1, 2, 2, 2}, {-inf, 5, -inf, -inf, -inf, -inf, -inf, -inf});
    EXPECT_TRUE(TensorsClose(want, (*got)[0], 0, 0)) << "windows of " << fill;
  }
}

}  // namespace
}  // namespace onnxserve
