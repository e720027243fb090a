// The attention fusion pass (runtime/passes/attention_fusion.cc) and the FusedAttention kernel it makes:
// each exporter spelling becomes one node whose result matches the unfused graph, over random shapes with
// and without a mask, a Mul or Div scale, K transposed by a node or given as [.., D, T], batch and head
// dims, one query row and odd lengths.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::ExpectSameResultWithAndWithoutPasses;
using testing::GraphBuilder;
using testing::IntAttr;
using testing::IntsAttr;
using testing::RandomTensor;
using testing::RunPass;
using testing::ScopedSizeLimits;

struct Case {
  Shape batch;  // leading dims of Q, K, V (and of the output)
  int64_t s, t, d, dv;
  bool transpose_k;  // K given as [.., T, D] and transposed by a node
  enum Scale { kNone, kMul, kDiv } scale;
  Shape mask;  // empty: no mask
};

Shape With(Shape batch, std::initializer_list<int64_t> dims) {
  batch.insert(batch.end(), dims);
  return batch;
}

// The graph as exporters write it, and random feeds for it.
std::pair<GraphBuilder, std::vector<std::pair<std::string, Tensor>>> AttentionGraph(const Case& c) {
  GraphBuilder b(13);
  const Shape q = With(c.batch, {c.s, c.d});
  const Shape k = c.transpose_k ? With(c.batch, {c.t, c.d}) : With(c.batch, {c.d, c.t});
  const Shape v = With(c.batch, {c.t, c.dv});
  std::vector<std::pair<std::string, Tensor>> feeds = {{"q", RandomTensor(q, 1)}, {"k", RandomTensor(k, 2)}, {"v", RandomTensor(v, 3)}};
  b.Input("q", q).Input("k", k).Input("v", v);
  std::string keys = "k";
  if (c.transpose_k) {
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < static_cast<int64_t>(k.size()); ++i) perm.push_back(i);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    b.NodeWith("Transpose", {"k"}, {"kt"}, {IntsAttr("perm", perm)});
    keys = "kt";
  }
  b.Node("MatMul", {"q", keys}, "qk");
  std::string scores = "qk";
  if (c.scale != Case::kNone) {
    b.Initializer("s", Tensor::Scalar(c.scale == Case::kMul ? 0.125f : 2.8284271f));
    b.Node(c.scale == Case::kMul ? "Mul" : "Div", c.scale == Case::kMul ? std::vector<std::string>{"s", "qk"}
                                                                        : std::vector<std::string>{"qk", "s"},
           "scaled");
    scores = "scaled";
  }
  if (!c.mask.empty()) {
    b.Input("mask", c.mask).Node("Add", {scores, "mask"}, "masked");
    feeds.emplace_back("mask", RandomTensor(c.mask, 4));
    scores = "masked";
  }
  b.NodeWith("Softmax", {scores}, {"p"}, {IntAttr("axis", -1)}).Node("MatMul", {"p", "v"}, "y").Output("y");
  return {b, feeds};
}

void ExpectFusedAndEqual(const Case& c) {
  auto [builder, feeds] = AttentionGraph(c);
  auto model = builder.Load();
  auto result = RunPass(*model, *passes::MakeAttentionFusion());
  EXPECT_EQ(result.ops, std::vector<std::string>{"FusedAttention"});
  ExpectSameResultWithAndWithoutPasses(model, feeds);
}

TEST(AttentionFusionTest, EachSpellingFusesAndMatchesTheUnfusedGraph) {
  const std::vector<Case> cases = {
      {{2, 3}, 5, 7, 8, 4, false, Case::kDiv, {}},          // the transformer's: K as [.., D, T]
      {{2, 3}, 5, 7, 8, 4, true, Case::kMul, {}},           // K transposed by a node
      {{2, 3}, 33, 37, 16, 16, true, Case::kDiv, {2, 1, 1, 37}},  // padding mask, two row blocks
      {{1, 2}, 40, 40, 8, 8, false, Case::kMul, {40, 40}},  // a causal-style mask over every head
      {{3}, 1, 9, 4, 5, false, Case::kNone, {3, 1, 9}},     // one query row, no scale
      {{}, 1, 1, 3, 2, true, Case::kMul, {}},               // 2-D, one key
      {{2, 1}, 65, 3, 5, 7, false, Case::kDiv, {1}},        // odd sizes, a scalar mask
      {{2}, 1, 6, 4, 3, false, Case::kMul, {2, 5, 6}},      // the mask's 5 rows broadcast one query row
      {{2}, 3, 1, 4, 3, true, Case::kDiv, {3, 1}},          // one key against a mask of 1 column
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.batch) + " S=" + std::to_string(c.s) + " T=" + std::to_string(c.t));
    ExpectFusedAndEqual(c);
  }
}

// Softmax(scores, axis) x v as the graph's output "y".
GraphBuilder& AttendTo(GraphBuilder& b, const std::string& scores, int64_t axis = -1) {
  return b.NodeWith("Softmax", {scores}, {"p"}, {IntAttr("axis", axis)}).Node("MatMul", {"p", "v"}, "y").Output("y");
}

// Softmax(MatMul(q, k) [+ mask], axis) x v with no scale, for shapes that the Case graphs do not make.
GraphBuilder Unscaled(const Shape& q, const Shape& k, const Shape& v, const Shape& mask, int64_t axis = -1) {
  GraphBuilder b(13);
  b.Input("q", q).Input("k", k).Input("v", v).Node("MatMul", {"q", "k"}, "qk");
  std::string scores = "qk";
  if (!mask.empty()) {
    b.Input("mask", mask).Node("Add", {"mask", "qk"}, "masked");
    scores = "masked";
  }
  AttendTo(b, scores, axis);
  return b;
}

void ExpectUnscaledFusedAndEqual(const Shape& q, const Shape& k, const Shape& v, const Shape& mask) {
  auto model = Unscaled(q, k, v, mask).Load();
  EXPECT_EQ(RunPass(*model, *passes::MakeAttentionFusion()).ops, std::vector<std::string>{"FusedAttention"});
  std::vector<std::pair<std::string, Tensor>> feeds = {{"q", RandomTensor(q, 5)}, {"k", RandomTensor(k, 6)}, {"v", RandomTensor(v, 7)}};
  if (!mask.empty()) feeds.emplace_back("mask", RandomTensor(mask, 8));
  ExpectSameResultWithAndWithoutPasses(model, feeds);
}

TEST(AttentionFusionTest, BroadcastBatchDimsMatch) {
  // K and V shared over heads ([B, 1, ..]) while Q has them: MatMul's batch broadcasting.
  ExpectUnscaledFusedAndEqual({2, 3, 4, 8}, {2, 1, 8, 6}, {2, 1, 6, 5}, {});
}

TEST(AttentionFusionTest, AMaskOfManyColumnsBroadcastsOneKey) {
  // [2,3,1] scores + a [3,5] mask are [2,3,5]: V then has 5 rows.
  ExpectUnscaledFusedAndEqual({2, 3, 4}, {2, 4, 1}, {2, 5, 3}, {3, 5});
}

// Q, K, V [B, S, H, D] transposed into heads as exporters do, Y merged back. A Q whose Transpose moves its
// last axis (rows not contiguous) keeps that Transpose.
TEST(AttentionFusionTest, HeadSplitAndMergeTransposesAreReadInPlace) {
  for (bool q_moves_last_axis : {false, true}) {
    SCOPED_TRACE(q_moves_last_axis);
    const Shape q = q_moves_last_axis ? Shape{2, 3, 4, 5} : Shape{2, 5, 3, 4};
    GraphBuilder b(13);
    b.Input("q", q).Input("k", {2, 6, 3, 4}).Input("v", {2, 6, 3, 7})
        .Initializer("s", Tensor::Scalar(2.0f))
        .NodeWith("Transpose", {"q"}, {"qh"},
                  {IntsAttr("perm", q_moves_last_axis ? std::vector<int64_t>{0, 1, 3, 2}
                                                      : std::vector<int64_t>{0, 2, 1, 3})})
        .NodeWith("Transpose", {"k"}, {"kh"}, {IntsAttr("perm", {0, 2, 3, 1})})
        .NodeWith("Transpose", {"v"}, {"vh"}, {IntsAttr("perm", {0, 2, 1, 3})})
        .Node("MatMul", {"qh", "kh"}, "qk")
        .Node("Div", {"qk", "s"}, "scaled")
        .NodeWith("Softmax", {"scaled"}, {"p"}, {IntAttr("axis", -1)})
        .Node("MatMul", {"p", "vh"}, "context")
        .NodeWith("Transpose", {"context"}, {"merged"}, {IntsAttr("perm", {0, 2, 1, 3})})
        .Node("Relu", {"merged"}, "y")
        .Output("y");
    auto model = b.Load();
    EXPECT_EQ(RunPass(*model, *passes::MakeAttentionFusion()).ops,
              q_moves_last_axis ? (std::vector<std::string>{"Transpose", "FusedAttention", "Relu"})
                                : (std::vector<std::string>{"FusedAttention", "Relu"}));
    ExpectSameResultWithAndWithoutPasses(
        model, {{"q", RandomTensor(q, 12)}, {"k", RandomTensor({2, 6, 3, 4}, 13)}, {"v", RandomTensor({2, 6, 3, 7}, 14)}});
  }
}

TEST(AttentionFusionTest, SoftmaxOverAnotherAxisOrSharedScoresStayUnfused) {
  EXPECT_TRUE(RunPass(*Unscaled({2, 4, 8}, {2, 8, 4}, {2, 4, 3}, {}, 1).Load(), *passes::MakeAttentionFusion())
                  .changes.empty());

  GraphBuilder shared = Unscaled({2, 4, 8}, {2, 8, 4}, {2, 4, 3}, {});
  shared.Output("qk");  // the scores are wanted too
  EXPECT_TRUE(RunPass(*shared.Load(), *passes::MakeAttentionFusion()).changes.empty());
}

// MatMul takes vectors; FusedAttention multiplies matrices. With K a vector the scores are one row per
// query and Softmax normalizes across the queries: fused, the model failed to run.
TEST(AttentionFusionTest, VectorOperandsOrUndeclaredRanksStayUnfused) {
  GraphBuilder vector_k = Unscaled({3, 4}, {4}, {3, 2}, {});
  auto model = vector_k.Load();
  EXPECT_TRUE(RunPass(*model, *passes::MakeAttentionFusion()).changes.empty());
  ExpectSameResultWithAndWithoutPasses(model, {{"q", RandomTensor({3, 4}, 1)}, {"k", RandomTensor({4}, 2)}, {"v", RandomTensor({3, 2}, 3)}});

  GraphBuilder undeclared(13);
  undeclared.Input("q", {2, 4}).Input("k", {4, 3}).Input("v", {3, 2})
      .Node("Identity", {"q"}, "q_any")  // an intermediate: no declared shape, so no known rank
      .Node("MatMul", {"q_any", "k"}, "qk")
      .NodeWith("Softmax", {"qk"}, {"p"}, {IntAttr("axis", -1)})
      .Node("MatMul", {"p", "v"}, "y")
      .Output("y");
  EXPECT_TRUE(RunPass(*undeclared.Load(), *passes::MakeAttentionFusion()).changes.empty());
}

// Fused, the [S, T] scores never exist whole, but the limits that refuse them unfused must still refuse
// them: 256 queries against 1024 keys are 262144 scores, past a limit of 2^17 elements and bytes that Q, K,
// V, Y and the packed K and V each fit. Fused, the kernel ran where the unfused graph failed.
TEST(AttentionFusionTest, ScoresPastTheTensorLimitsFailAsTheyDoUnfused) {
  auto model = Unscaled({256, 16}, {16, 1024}, {1024, 16}, {}).Load();
  ASSERT_EQ(RunPass(*model, *passes::MakeAttentionFusion()).ops, std::vector<std::string>{"FusedAttention"});
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"q", RandomTensor({256, 16}, 1)}, {"k", RandomTensor({16, 1024}, 2)}, {"v", RandomTensor({1024, 16}, 3)}};
  SessionOptions unoptimized;
  unoptimized.optimize = false;
  for (const SessionOptions& options : {SessionOptions{}, unoptimized}) {
    SCOPED_TRACE(options.optimize ? "fused" : "unfused");
    auto session = Session::Create(model, options);
    ASSERT_TRUE(session.ok()) << session.status();
    {
      ScopedSizeLimits limits(int64_t{1} << 17);
      auto out = (*session)->Run(feeds);
      EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
      EXPECT_NE(out.status().message().find(options.optimize ? "scores" : "MatMul"), std::string::npos) << out.status();
    }
    EXPECT_TRUE((*session)->Run(feeds).ok());  // under the default limits the same run succeeds
  }
}

// A value's declared shape (value_info) is not checked when the model runs: a model declaring its vector Q a
// matrix ran unfused and failed every request fused. Graph inputs' shapes are checked, and Reshape's
// constant shape gives the rank.
TEST(AttentionFusionTest, AnIntermediateDeclaredAMatrixIsNotTrustedToBeOne) {
  auto declare = [](onnx::ModelProto& proto, const std::string& name, const std::vector<int64_t>& dims) {
    auto* info = proto.mutable_graph()->add_value_info();
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  };
  onnx::ModelProto proto = GraphBuilder(13)
                               .Input("x", {4})
                               .Input("k", {4, 3})
                               .Input("v", {3, 2})
                               .Node("Relu", {"x"}, "q")
                               .Node("MatMul", {"q", "k"}, "qk")
                               .NodeWith("Softmax", {"qk"}, {"p"}, {IntAttr("axis", -1)})
                               .Node("MatMul", {"p", "v"}, "y")
                               .Output("y")
                               .proto();
  declare(proto, "q", {3, 4});
  auto model = Model::FromProto(proto, "");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(RunPass(**model, *passes::MakeAttentionFusion()).changes.empty());
  ExpectSameResultWithAndWithoutPasses(
      *model, {{"x", RandomTensor({4}, 1)}, {"k", RandomTensor({4, 3}, 2)}, {"v", RandomTensor({3, 2}, 3)}});

  GraphBuilder reshaped(13);
  reshaped.Input("x", {12})
      .Input("k", {4, 3})
      .Input("v", {3, 2})
      .Initializer("shape", Tensor::FromVector<int64_t>({2}, {3, 4}))
      .Node("Reshape", {"x", "shape"}, "q")
      .Node("MatMul", {"q", "k"}, "qk");
  EXPECT_EQ(RunPass(*AttendTo(reshaped, "qk").Load(), *passes::MakeAttentionFusion()).ops,
            (std::vector<std::string>{"Reshape", "FusedAttention"}));
}

// Div by a divisor whose reciprocal overflows the float (1e-45, a denormal): the kernel multiplies by the
// reciprocal, infinity, and 0 * infinity made the zero scores NaN where 0 / 1e-45 is 0.
TEST(AttentionFusionTest, ADivisorWhoseReciprocalOverflowsStaysUnfused) {
  GraphBuilder b(13);
  b.Input("q", {2, 3})
      .Input("k", {3, 4})
      .Input("v", {4, 2})
      .Initializer("tiny", Tensor::Scalar(1e-45f))
      .Node("MatMul", {"q", "k"}, "qk")
      .Node("Div", {"qk", "tiny"}, "scaled");
  auto model = AttendTo(b, "scaled").Load();
  EXPECT_TRUE(RunPass(*model, *passes::MakeAttentionFusion()).changes.empty());
  // Zero queries: every score is 0, every weight 1/4, each output row the mean of V's rows.
  const Tensor v = RandomTensor({4, 2}, 3);
  std::vector<float> mean(2, 0.f);
  for (int t = 0; t < 4; ++t) {
    for (int j = 0; j < 2; ++j) mean[j] += v.data<float>()[t * 2 + j] / 4;
  }
  auto session = Session::Create(model);
  ASSERT_TRUE(session.ok()) << session.status();
  const Tensor zero_queries = Tensor::FromVector<float>({2, 3}, std::vector<float>(6, 0.f));
  auto out = (*session)->Run({{"q", zero_queries}, {"k", RandomTensor({3, 4}, 2)}, {"v", v}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(testing::TensorsClose(Tensor::FromVector<float>({2, 2}, {mean[0], mean[1], mean[0], mean[1]}), (*out)[0],
                                    1e-5, 1e-6));
}

}  // namespace
}  // namespace onnxserve
