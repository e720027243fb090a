// NHWC prologue fusion (runtime/passes/nhwc_prologue_fusion.cc): which expansions become the prologue of the
// depthwise convolution after them, and that the rewritten model computes what the unoptimized graph does,
// with X' computed band by band (large maps) or whole (small maps, and shapes past the node's plans), at one
// and two threads. Where NhwcConv does not run (no oneDNN, no AVX2) there is nothing to fuse.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/ir/builder.h"
#include "runtime/math/nhwc_conv.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::CountOps;
using testing::ExpectSameResultWithAndWithoutPasses;
using testing::GraphBuilder;
using testing::IntAttr;
using testing::IntsAttr;
using testing::RandomTensor;
using testing::TensorsClose;

constexpr int64_t kMaps = 48;

// A depthwise 3x3 stem (so the group moves to NHWC on every ISA), an expanding 1x1 of 16 -> 48 maps with
// its activation, a depthwise 3x3 at `dw_stride`, a projecting 1x1 to 32 and a global pool. `expand_attrs` go
// on the expansion. From 96 x 96 on, its convolutions average enough work to move to NHWC.
GraphBuilder ExpandBlock(int64_t side, const std::string& expand_activation, int64_t dw_stride,
                         std::vector<onnx::AttributeProto> expand_attrs = {}) {
  return GraphBuilder(14)
      .Input("x", {1, 16, side, side})
      .Initializer("w_stem", RandomTensor({16, 1, 3, 3}, 1))
      .Initializer("w_expand", RandomTensor({kMaps, 16, 1, 1}, 2))
      .Initializer("b_expand", RandomTensor({kMaps}, 3))
      .Initializer("w_dw", RandomTensor({kMaps, 1, 3, 3}, 4))
      .Initializer("w_project", RandomTensor({32, kMaps, 1, 1}, 5))
      .NodeWith("Conv", {"x", "w_stem"}, {"stem"}, {IntAttr("group", 16), IntsAttr("pads", {1, 1, 1, 1})})
      .NodeWith("Conv", {"stem", "w_expand", "b_expand"}, {"expand"}, expand_attrs)
      .Node(expand_activation, {"expand"}, "expand_act")
      .NodeWith("Conv", {"expand_act", "w_dw"}, {"dw"},
                {IntAttr("group", kMaps), IntsAttr("strides", {dw_stride, dw_stride}), IntsAttr("pads", {1, 1, 1, 1})})
      .Node("Relu", {"dw"}, "dw_act")
      .Node("Conv", {"dw_act", "w_project"}, "project")
      .Node("GlobalAveragePool", {"project"}, "y")
      .Output("y");
}

std::vector<std::string> Changes(const Model& model) {
  auto graph = ir::BuildGraph(model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto reports = passes::Optimize(**graph, passes::DefaultPasses(**graph));
  EXPECT_TRUE(reports.ok()) << reports.status();
  for (const passes::PassReport& report : *reports) {
    if (report.pass == "nhwc-prologue-fusion") return report.changes;
  }
  return {};
}

// Sums of a few dozen products of numbers in [-1, 1], rounded in oneDNN's order and in ours: equal to this.
constexpr double kTolerance = 1e-4;

class NhwcPrologueFusionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!NhwcConvAvailable()) GTEST_SKIP() << "no NhwcConv to fuse: built without oneDNN, or the CPU has no AVX2";
  }

  static void ExpectSameAsUnoptimized(const std::shared_ptr<const Model>& model, const Tensor& x, int threads) {
    ExpectSameResultWithAndWithoutPasses(model, {{"x", x}}, threads, kTolerance, kTolerance);
  }
};

TEST_F(NhwcPrologueFusionTest, AnExpansionBecomesThePrologueOfTheDepthwiseConvolutionAfterIt) {
  const auto model = ExpandBlock(96, "Relu", 1).Load();
  const std::vector<std::string> changes = Changes(*model);
  ASSERT_EQ(changes.size(), 1u) << ::testing::PrintToString(changes);
  EXPECT_NE(changes[0].find("runs as the prologue of"), std::string::npos) << changes[0];
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  // Stem, depthwise with its prologue, projection: three where there were four.
  EXPECT_EQ(CountOps((*session)->plan().StepOps(), "NhwcConv"), 3) << ::testing::PrintToString((*session)->plan().StepOps());
}

// 48 maps of 160 x 160 (4.9 MB) are computed band by band; of 96 x 96 (1.8 MB), whole. Relu runs in the
// expansion's primitive, HardSwish after it on each window.
TEST_F(NhwcPrologueFusionTest, TheFusedBlockComputesWhatTheUnoptimizedGraphComputes) {
  for (const int64_t side : {160, 96}) {
    for (const char* activation : {"Relu", "HardSwish"}) {
      for (const int64_t stride : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << side << " x " << side << ", " << activation << ", stride " << stride);
        const auto model = ExpandBlock(side, activation, stride).Load();
        const Tensor x = RandomTensor({1, 16, side, side}, 6);
        ExpectSameAsUnoptimized(model, x, 1);
        ExpectSameAsUnoptimized(model, x, 2);
      }
    }
  }
}

// A node keeps plans for four image shapes; past them the expansion runs as a product of X's pixels and
// W'^T, and must still compute what the graph says.
TEST_F(NhwcPrologueFusionTest, ImageSizesPastThePlansComputeWhatTheGraphSays) {
  auto model = GraphBuilder(14)
                   .Input("x", {1, 16, -1, -1})
                   .Initializer("w_stem", RandomTensor({16, 1, 3, 3}, 1))
                   .Initializer("w_expand", RandomTensor({kMaps, 16, 1, 1}, 2))
                   .Initializer("b_expand", RandomTensor({kMaps}, 3))
                   .Initializer("w_dw", RandomTensor({kMaps, 1, 3, 3}, 4))
                   .NodeWith("Conv", {"x", "w_stem"}, {"stem"}, {IntAttr("group", 16), IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("Conv", {"stem", "w_expand", "b_expand"}, "expand")
                   .Node("HardSwish", {"expand"}, "expand_act")
                   .NodeWith("Conv", {"expand_act", "w_dw"}, {"dw"}, {IntAttr("group", kMaps), IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("Relu", {"dw"}, "dw_act")
                   .Node("GlobalAveragePool", {"dw_act"}, "y")
                   .Output("y")
                   .Load();
  ASSERT_EQ(Changes(*model).size(), 1u);
  SessionOptions plain;
  plain.optimize = false;
  auto optimized = Session::Create(model);
  auto unoptimized = Session::Create(model, plain);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  ASSERT_TRUE(unoptimized.ok()) << unoptimized.status();
  for (int64_t side = 40; side < 47; ++side) {
    SCOPED_TRACE(::testing::Message() << side << " x " << side);
    const std::vector<std::pair<std::string, Tensor>> feeds = {
        {"x", RandomTensor({1, 16, side, side}, static_cast<uint32_t>(side))}};
    auto got = (*optimized)->Run(feeds);
    auto want = (*unoptimized)->Run(feeds);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_TRUE(TensorsClose((*want)[0], (*got)[0], kTolerance, kTolerance));
  }
}

TEST_F(NhwcPrologueFusionTest, ExpansionsThatAreNotPointwiseOrReadElsewhereStay) {
  // At stride 2 a 1x1 reads every other pixel: not a pixel-for-pixel prologue.
  EXPECT_TRUE(Changes(*ExpandBlock(96, "Relu", 1, {IntsAttr("strides", {2, 2})}).Load()).empty());
  // Pads: its border reads only zeros (oneDNN refuses it, so it is not even an NhwcConv that runs).
  EXPECT_TRUE(Changes(*ExpandBlock(96, "Relu", 1, {IntsAttr("pads", {1, 1, 1, 1})}).Load()).empty());
  // Expanded maps that a residual Add reads too must be written whole.
  auto read_twice = GraphBuilder(14)
                        .Input("x", {1, 16, 96, 96})
                        .Initializer("w_stem", RandomTensor({16, 1, 3, 3}, 1))
                        .Initializer("w_expand", RandomTensor({kMaps, 16, 1, 1}, 2))
                        .Initializer("w_dw", RandomTensor({kMaps, 1, 3, 3}, 4))
                        .NodeWith("Conv", {"x", "w_stem"}, {"stem"}, {IntAttr("group", 16), IntsAttr("pads", {1, 1, 1, 1})})
                        .Node("Conv", {"stem", "w_expand"}, "expand")
                        .NodeWith("Conv", {"expand", "w_dw"}, {"dw"}, {IntAttr("group", kMaps), IntsAttr("pads", {1, 1, 1, 1})})
                        .Node("Add", {"dw", "expand"}, "sum")
                        .Node("Relu", {"sum"}, "y")
                        .Output("y")
                        .Load();
  EXPECT_TRUE(Changes(*read_twice).empty());
  ExpectSameAsUnoptimized(read_twice, RandomTensor({1, 16, 96, 96}, 7), 1);
  // A dense 3x3 after the expansion is not a depthwise one.
  auto dense = GraphBuilder(14)
                   .Input("x", {1, 16, 96, 96})
                   .Initializer("w_stem", RandomTensor({16, 1, 3, 3}, 1))
                   .Initializer("w_expand", RandomTensor({kMaps, 16, 1, 1}, 2))
                   .Initializer("w_dense", RandomTensor({8, kMaps, 3, 3}, 4))
                   .NodeWith("Conv", {"x", "w_stem"}, {"stem"}, {IntAttr("group", 16), IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("Conv", {"stem", "w_expand"}, "expand")
                   .NodeWith("Conv", {"expand", "w_dense"}, {"dense"}, {IntsAttr("pads", {1, 1, 1, 1})})
                   .Node("Relu", {"dense"}, "y")
                   .Output("y")
                   .Load();
  EXPECT_TRUE(Changes(*dense).empty());
}

}  // namespace
}  // namespace onnxserve
