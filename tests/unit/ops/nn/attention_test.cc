// Attention: the kernel against a plain loop-per-element reference written from the spec's formula
// (softmax(softcap(scale * Q K^T) + bias) V) on random shapes, plus hand-checked edge cases.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor Random(Shape shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::FromVector<float>(std::move(shape), v);
}

// The reference on 4-D [B,H,S,D] inputs; `bias(b, h, i, j)` is the additive mask (with causal folded in).
template <typename Bias>
Tensor Reference(const Tensor& q, const Tensor& k, const Tensor& v, float scale, float softcap, Bias bias) {
  const int64_t B = q.dim(0), Hq = q.dim(1), S = q.dim(2), D = q.dim(3);
  const int64_t Hkv = k.dim(1), T = k.dim(2), Dv = v.dim(3);
  Tensor y(DataType::kFloat, {B, Hq, S, Dv});
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / (Hq / Hkv);
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> p(T);
        double max = -kInf;
        for (int64_t j = 0; j < T; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d) {
            s += q.data<float>()[((b * Hq + h) * S + i) * D + d] *
                 k.data<float>()[((b * Hkv + kh) * T + j) * D + d];
          }
          s *= scale;
          if (softcap > 0) s = softcap * std::tanh(s / softcap);
          p[j] = s + bias(b, h, i, j);
          max = std::max(max, p[j]);
        }
        double sum = 0;
        for (double& x : p) sum += (x = max == -kInf ? 0 : std::exp(x - max));
        for (int64_t e = 0; e < Dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j)
            acc += p[j] / (sum == 0 ? 1 : sum) * v.data<float>()[((b * Hkv + kh) * T + j) * Dv + e];
          y.data<float>()[((b * Hq + h) * S + i) * Dv + e] = static_cast<float>(acc);
        }
      }
    }
  }
  return y;
}

TEST(AttentionTest, GqaMatchesReference) {
  std::mt19937 rng(1);
  const Tensor q = Random({2, 4, 3, 5}, rng), k = Random({2, 2, 6, 5}, rng), v = Random({2, 2, 6, 7}, rng);
  auto out = OpTest("Attention", 23).Input("q", q).Input("k", k).Input("v", v).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Reference(q, k, v, 1 / std::sqrt(5.0f), 0, [](auto...) { return 0.0; }), (*out)[0],
                           1e-4, 1e-5));
}

TEST(AttentionTest, CausalWithPastIsBottomRightAlignedAndConcatenatesTheCache) {
  std::mt19937 rng(2);
  const Tensor q = Random({1, 2, 2, 4}, rng), k = Random({1, 2, 2, 4}, rng), v = Random({1, 2, 2, 4}, rng);
  const Tensor past_k = Random({1, 2, 3, 4}, rng), past_v = Random({1, 2, 3, 4}, rng);
  auto out = OpTest("Attention", 23)
                 .Input("q", q)
                 .Input("k", k)
                 .Input("v", v)
                 .NoInput()
                 .Input("pk", past_k)
                 .Input("pv", past_v)
                 .Attr("is_causal", int64_t{1})
                 .Attr("scale", 0.3f)
                 .Output("y")
                 .Output("present_k")
                 .Output("present_v")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // present = concat(past, new) along the sequence axis.
  Tensor full_k(DataType::kFloat, {1, 2, 5, 4}), full_v(DataType::kFloat, {1, 2, 5, 4});
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t s = 0; s < 5; ++s) {
      for (int64_t d = 0; d < 4; ++d) {
        const bool past = s < 3;
        const int64_t src = (h * (past ? 3 : 2) + (past ? s : s - 3)) * 4 + d;
        full_k.data<float>()[(h * 5 + s) * 4 + d] = (past ? past_k : k).data<float>()[src];
        full_v.data<float>()[(h * 5 + s) * 4 + d] = (past ? past_v : v).data<float>()[src];
      }
    }
  }
  EXPECT_TRUE(TensorsClose(full_k, (*out)[1]));
  EXPECT_TRUE(TensorsClose(full_v, (*out)[2]));
  // Query i sees keys j <= i + past_len (3).
  auto causal = [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i + 3 ? 0.0 : -kInf; };
  EXPECT_TRUE(TensorsClose(Reference(q, full_k, full_v, 0.3f, 0, causal), (*out)[0], 1e-4, 1e-5));
}

TEST(AttentionTest, ThreeDimensionalInputsSplitHeadsAndApplyABoolMaskAndSoftcap) {
  std::mt19937 rng(3);
  // 3-D [B,S,H*D] with 2 heads of size 3, and a [S_q, S_kv] bool mask.
  const Tensor q3 = Random({1, 2, 6}, rng), k3 = Random({1, 3, 6}, rng), v3 = Random({1, 3, 4}, rng);
  const std::vector<uint8_t> keep = {1, 0, 1, 1, 1, 0};
  Tensor mask(DataType::kBool, {2, 3});
  for (int i = 0; i < 6; ++i) mask.data<bool>()[i] = keep[i] != 0;
  auto out = OpTest("Attention", 24)
                 .Input("q", q3)
                 .Input("k", k3)
                 .Input("v", v3)
                 .Input("m", mask)
                 .Attr("q_num_heads", int64_t{2})
                 .Attr("kv_num_heads", int64_t{2})
                 .Attr("softcap", 0.5f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // [B,S,H,D] -> [B,H,S,D]
  auto heads = [](const Tensor& t, int64_t h, int64_t d) {
    const int64_t s = t.dim(1);
    Tensor r(DataType::kFloat, {1, h, s, d});
    for (int64_t i = 0; i < s; ++i)
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t e = 0; e < d; ++e)
          r.data<float>()[(hh * s + i) * d + e] = t.data<float>()[(i * h + hh) * d + e];
    return r;
  };
  const Tensor y4 =
      Reference(heads(q3, 2, 3), heads(k3, 2, 3), heads(v3, 2, 2), 1 / std::sqrt(3.0f), 0.5f,
                [&](int64_t, int64_t, int64_t i, int64_t j) { return keep[i * 3 + j] ? 0.0 : -kInf; });
  Tensor expected(DataType::kFloat, {1, 2, 4});  // back to [B,S,H*Dv]
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t hh = 0; hh < 2; ++hh)
      for (int64_t e = 0; e < 2; ++e)
        expected.data<float>()[(i * 2 + hh) * 2 + e] = y4.data<float>()[(hh * 2 + i) * 2 + e];
  EXPECT_TRUE(TensorsClose(expected, (*out)[0], 1e-4, 1e-5));
}

TEST(AttentionTest, FullyMaskedRowsGiveZerosNotNan) {
  std::mt19937 rng(4);
  Tensor mask(DataType::kBool, {2, 2});
  for (int i = 0; i < 4; ++i) mask.data<bool>()[i] = i >= 2;  // query 0 sees nothing
  auto out = OpTest("Attention", 23)
                 .Input("q", Random({1, 1, 2, 2}, rng))
                 .Input("k", Random({1, 1, 2, 2}, rng))
                 .Input("v", Random({1, 1, 2, 2}, rng))
                 .Input("m", mask)
                 .Attr("qk_matmul_output_mode", int64_t{3})
                 .Output("y")
                 .NoOutput()
                 .NoOutput()
                 .Output("p")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0];
  const Tensor& p = (*out)[1];
  EXPECT_EQ(y.data<float>()[0], 0.0f);
  EXPECT_EQ(y.data<float>()[1], 0.0f);
  EXPECT_EQ(p.data<float>()[0], 0.0f);
  EXPECT_EQ(p.data<float>()[1], 0.0f);
  EXPECT_NEAR(p.data<float>()[2] + p.data<float>()[3], 1.0f, 1e-6);  // mode 3 is the softmax
}

// Attention-24 over an external cache whose valid lengths per batch are `nonpad`.
absl::StatusOr<std::vector<Tensor>> RunWithNonpad(const Tensor& q, const Tensor& k, const Tensor& v,
                                                  const std::vector<int64_t>& nonpad, int64_t is_causal) {
  return OpTest("Attention", 24)
      .Input("q", q)
      .Input("k", k)
      .Input("v", v)
      .NoInput()
      .NoInput()
      .NoInput()
      .Input("n", Tensor::FromVector<int64_t>({static_cast<int64_t>(nonpad.size())}, nonpad))
      .Attr("is_causal", is_causal)
      .Output("y")
      .Run();
}

TEST(AttentionTest, NonpadLengthsMaskThePaddingOfAnExternalCache) {
  std::mt19937 rng(5);
  const Tensor q = Random({2, 1, 1, 3}, rng), k = Random({2, 1, 4, 3}, rng), v = Random({2, 1, 4, 3}, rng);
  auto out = RunWithNonpad(q, k, v, {2, 4}, 0);
  ASSERT_TRUE(out.ok()) << out.status();
  auto padding = [](int64_t b, int64_t, int64_t, int64_t j) { return j < (b == 0 ? 2 : 4) ? 0.0 : -kInf; };
  EXPECT_TRUE(TensorsClose(Reference(q, k, v, 1 / std::sqrt(3.0f), 0, padding), (*out)[0], 1e-4, 1e-5));
}

TEST(AttentionTest, MismatchedHeadsAreRejected) {
  std::mt19937 rng(6);
  auto out = OpTest("Attention", 23)
                 .Input("q", Random({1, 3, 2, 4}, rng))
                 .Input("k", Random({1, 2, 2, 4}, rng))
                 .Input("v", Random({1, 2, 2, 4}, rng))
                 .Output("y")
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("multiple of kv_num_heads"), std::string::npos) << out.status();
}

// A causal run's offset was nonpad - q_len, which overflows for a length of INT64_MIN (undefined; checked
// here under the release build). A negative length masks every key: each row attends to nothing, which
// gives zeros.
TEST(AttentionTest, ANonpadLengthOfInt64MinMasksEveryKey) {
  std::mt19937 rng(7);
  const Tensor q = Random({1, 1, 2, 3}, rng), k = Random({1, 1, 4, 3}, rng), v = Random({1, 1, 4, 3}, rng);
  auto out = RunWithNonpad(q, k, v, {std::numeric_limits<int64_t>::min()}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 2, 3}, std::vector<float>(6, 0.0f)), (*out)[0]));
}

// Each head's scores are q_len x kv_len, a product of two request lengths, scratch for one head per thread:
// bounded like a tensor (and charged to the run's budget). 1024 queries by 512 keys of one element each are
// 2 MiB of scores from 6 KiB of inputs, refused past a 1 MiB limit; 128 queries, 256 KiB, are not.
TEST(AttentionTest, RefusesScoresPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  std::mt19937 rng(5);
  const auto attend = [&](int64_t queries) {
    return OpTest("Attention", 23)
        .Input("q", Random({1, 1, queries, 1}, rng))
        .Input("k", Random({1, 1, 512, 1}, rng))
        .Input("v", Random({1, 1, 512, 1}, rng))
        .Output("y")
        .Run();
  };
  auto wide = attend(1024);
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kResourceExhausted) << wide.status();
  auto narrow = attend(128);
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ((*narrow)[0].shape(), (Shape{1, 1, 128, 1}));
}

}  // namespace
}  // namespace onnxserve
