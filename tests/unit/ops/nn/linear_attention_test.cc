// LinearAttention-27: each update rule on cases small enough to follow by hand, query heads sharing a KV
// head's state, decoding token by token through present_state giving what one prefill gives, and the
// shape and attribute errors.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, std::vector<float> v) { return Tensor::FromVector<float>(std::move(shape), v); }

OpTest LinearAttention(const std::string& rule, int64_t q_heads, int64_t kv_heads) {
  OpTest test("LinearAttention", 27);
  test.Attr("update_rule", rule).Attr("q_num_heads", q_heads).Attr("kv_num_heads", kv_heads);
  return test;
}

TEST(LinearAttentionTest, LinearRuleAccumulatesOuterProductsAndScalesByOneOverSqrtDk) {
  // d_k = 2, d_v = 1. S1 = k1 v1^T = [2, 0]; o1 = q1.S1 = 2. S2 = S1 + [0, 3] = [2, 3]; o2 = [1, 2].S2 = 8.
  // No scale given: 1/sqrt(d_k).
  auto out = LinearAttention("linear", 1, 1)
                 .Input("query", Floats({1, 2, 2}, {1, 1, 1, 2}))
                 .Input("key", Floats({1, 2, 2}, {1, 0, 0, 1}))
                 .Input("value", Floats({1, 2, 1}, {2, 3}))
                 .Output("output")
                 .Output("present_state")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const float scale = 1.0f / std::sqrt(2.0f);
  EXPECT_TRUE(TensorsClose(Floats({1, 2, 1}, {2 * scale, 8 * scale}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2, 1}, {2, 3}), (*out)[1]));
}

TEST(LinearAttentionTest, GatedDeltaDecaysThePastStateThenCorrectsTowardsV) {
  // d_k = d_v = 1, S0 = 4, decay log(0.5): S' = 2; beta 0.5, k = 1, v = 5: S = 2 + 0.5 * (5 - 2) = 3.5.
  auto out = LinearAttention("gated_delta", 1, 1)
                 .Attr("scale", 1.0f)
                 .Input("query", Floats({1, 1, 1}, {2}))
                 .Input("key", Floats({1, 1, 1}, {1}))
                 .Input("value", Floats({1, 1, 1}, {5}))
                 .Input("past_state", Floats({1, 1, 1, 1}, {4}))
                 .Input("decay", Floats({1, 1, 1}, {std::log(0.5f)}))
                 .Input("beta", Floats({1, 1, 1}, {0.5f}))
                 .Output("output")
                 .Output("present_state")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1}, {7}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 1}, {3.5f}), (*out)[1]));
}

TEST(LinearAttentionTest, PerKeyDimensionDecayScalesTheStateRows) {
  // d_k = 2, d_v = 1, S0 = [4, 4], decay per key dimension: S' = [4 * 0.5, 4 * 0.25] = [2, 1]; the gated rule
  // then adds k v^T = [1, 1] * 1: S = [3, 2]; o = q.S = [1, 1].S = 5.
  auto out = LinearAttention("gated", 1, 1)
                 .Attr("scale", 1.0f)
                 .Input("query", Floats({1, 1, 2}, {1, 1}))
                 .Input("key", Floats({1, 1, 2}, {1, 1}))
                 .Input("value", Floats({1, 1, 1}, {1}))
                 .Input("past_state", Floats({1, 1, 2, 1}, {4, 4}))
                 .Input("decay", Floats({1, 1, 2}, {std::log(0.5f), std::log(0.25f)}))
                 .Output("output")
                 .Output("present_state")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1}, {5}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2, 1}, {3, 2}), (*out)[1]));
}

TEST(LinearAttentionTest, QueryHeadsOfAGroupReadTheirKvHeadsState) {
  // Two query heads, one KV head (multi-query): S = k v^T = [1, 0]^T [3]; head 0 reads q = [1, 0] -> 3,
  // head 1 reads q = [2, 5] -> 6.
  auto out = LinearAttention("linear", 2, 1)
                 .Attr("scale", 1.0f)
                 .Input("query", Floats({1, 1, 4}, {1, 0, 2, 5}))
                 .Input("key", Floats({1, 1, 2}, {1, 0}))
                 .Input("value", Floats({1, 1, 1}, {3}))
                 .Output("output")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2}, {3, 6}), (*out)[0]));
}

Tensor Random(Shape shape, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::FromVector<float>(std::move(shape), v);
}

// Token t of a [B, T, W] tensor as [B, 1, W].
Tensor TokenOf(const Tensor& t, int64_t token) {
  const int64_t b = t.dim(0), n = t.dim(1), w = t.dim(2);
  Tensor out(DataType::kFloat, {b, 1, w});
  for (int64_t i = 0; i < b; ++i) {
    std::copy_n(t.data<float>() + (i * n + token) * w, w, out.data<float>() + i * w);
  }
  return out;
}

TEST(LinearAttentionTest, DecodingTokenByTokenMatchesOnePrefill) {
  std::mt19937 rng(7);
  const int64_t b = 2, t = 5, hq = 4, hkv = 2, dk = 3, dv = 2;
  const Tensor q = Random({b, t, hq * dk}, rng, -1, 1), k = Random({b, t, hkv * dk}, rng, -0.5f, 0.5f);
  const Tensor v = Random({b, t, hkv * dv}, rng, -1, 1), decay = Random({b, t, hkv * dk}, rng, -0.3f, 0);
  const Tensor beta = Random({b, t, hkv}, rng, 0, 1);
  auto step = [&](const Tensor& qi, const Tensor& ki, const Tensor& vi, const Tensor& past, const Tensor& gi,
                  const Tensor& bi) {
    OpTest test = LinearAttention("gated_delta", hq, hkv);
    test.Input("query", qi).Input("key", ki).Input("value", vi);
    if (past.defined()) test.Input("past_state", past); else test.NoInput();
    return test.Input("decay", gi).Input("beta", bi).Output("output").Output("present_state").Run();
  };
  auto prefill = step(q, k, v, Tensor(), decay, beta);
  ASSERT_TRUE(prefill.ok()) << prefill.status();
  Tensor state;
  for (int64_t i = 0; i < t; ++i) {
    auto out = step(TokenOf(q, i), TokenOf(k, i), TokenOf(v, i), state, TokenOf(decay, i), TokenOf(beta, i));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(TokenOf((*prefill)[0], i), (*out)[0], 1e-5, 1e-6)) << "token " << i;
    state = (*out)[1];
  }
  EXPECT_TRUE(TensorsClose((*prefill)[1], state, 1e-5, 1e-6));
}

TEST(LinearAttentionTest, BadHeadsRulesAndShapesAreNamed) {
  const Tensor x = Floats({1, 1, 2}, {1, 1});
  auto out = LinearAttention("linear", 3, 2).Input("query", x).Input("key", x).Input("value", x).Output("o").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("q_num_heads (3) must be a positive multiple of kv_num_heads (2)"),
            std::string::npos) << out.status();

  out = LinearAttention("delta", 1, 1).Input("query", x).Input("key", x).Input("value", x).Output("o").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("needs the beta input"), std::string::npos) << out.status();

  out = LinearAttention("softmax", 1, 1).Input("query", x).Input("key", x).Input("value", x).Output("o").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("got \"softmax\""), std::string::npos) << out.status();

  out = LinearAttention("linear", 1, 1)
            .Input("query", x).Input("key", Floats({1, 1, 3}, {1, 1, 1})).Input("value", x).Output("o").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("key must be [1, 1, 2]"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace onnxserve
