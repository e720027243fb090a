// RNN, GRU and LSTM against scalar references (hidden size 1, input size 1) written from the spec's
// equations, plus the layout, direction and sequence_lens plumbing.
#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

float Sigmoid(float x) { return 1 / (1 + std::exp(-x)); }

Tensor W1(float v) { return Tensor::FromVector<float>({1, 1, 1}, {v}); }

// A float tensor of `shape`, uniform in [-range, range).
Tensor RandomTensor(std::mt19937& rng, Shape shape, float range) {
  std::uniform_real_distribution<float> uniform(-range, range);
  Tensor t(DataType::kFloat, std::move(shape));
  for (float& v : t.mutable_values<float>()) v = uniform(rng);
  return t;
}

// Found by tests/fuzz/model_fuzz.cc: a B (or initial state) smaller than its spec shape was read past its end.
TEST(RnnTest, OptionalInputsOfTheWrongShapeAreErrors) {
  auto short_bias = OpTest("RNN", 14)
                        .Input("X", Tensor::FromVector<float>({1, 1, 1}, {1.f})).Input("W", W1(0.5f)).Input("R", W1(0.25f))
                        .Input("B", Tensor::FromVector<float>({1, 1}, {0.1f}))
                        .Attr("hidden_size", int64_t{1}).Output("Y").Run();
  EXPECT_EQ(short_bias.status().code(), absl::StatusCode::kInvalidArgument);
  auto short_state = OpTest("RNN", 14)
                         .Input("X", Tensor::FromVector<float>({1, 2, 1}, {1.f, 2.f})).Input("W", W1(0.5f))
                         .Input("R", W1(0.25f)).NoInput().NoInput()
                         .Input("initial_h", Tensor::FromVector<float>({1, 1, 1}, {0.f}))
                         .Attr("hidden_size", int64_t{1}).Output("Y").Run();
  EXPECT_EQ(short_state.status().code(), absl::StatusCode::kInvalidArgument);
}

// Found by the model fuzzer: a uint8 B of the right shape was read as floats, past its end.
TEST(RnnTest, OptionalInputsOfAnotherElementTypeAreErrors) {
  auto byte_bias = OpTest("GRU", 14)
                       .Input("X", Tensor::FromVector<float>({1, 1, 1}, {1.f}))
                       .Input("W", Tensor::FromVector<float>({1, 3, 1}, {0.5f, 0.5f, 0.5f}))
                       .Input("R", Tensor::FromVector<float>({1, 3, 1}, {0.25f, 0.25f, 0.25f}))
                       .Input("B", Tensor::FromVector<uint8_t>({1, 6}, {1, 2, 3, 4, 5, 6}))
                       .Attr("hidden_size", int64_t{1}).Output("Y").Run();
  EXPECT_EQ(byte_bias.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(byte_bias.status().message(), ::testing::HasSubstr("input 3 is uint8"));
}

TEST(RnnTest, ForwardMatchesTheRecurrence) {
  // Ht = tanh(0.5 * xt + 0.25 * Ht-1 + (0.1 + 0.2)), H0 = 0.
  const std::vector<float> xs = {1, -2, 3};
  auto out = OpTest("RNN", 14)
                 .Input("X", Tensor::FromVector<float>({3, 1, 1}, xs)).Input("W", W1(0.5f)).Input("R", W1(0.25f))
                 .Input("B", Tensor::FromVector<float>({1, 2}, {0.1f, 0.2f}))
                 .Attr("hidden_size", int64_t{1}).Output("Y").Output("Y_h").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> expected;
  float h = 0;
  for (float x : xs) expected.push_back(h = std::tanh(0.5f * x + 0.25f * h + 0.3f));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3, 1, 1, 1}, expected), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {h}), (*out)[1]));
}

TEST(RnnTest, ReverseWithSequenceLensStartsAtEachRowsLastStep) {
  // Batch row 0 has 2 steps, row 1 has 1: row 1's Y is zero at t = 1 and its Y_h is tanh(x[0, 1]).
  auto out = OpTest("RNN", 7)
                 .Input("X", Tensor::FromVector<float>({2, 2, 1}, {1, 2, 3, 4})).Input("W", W1(1)).Input("R", W1(1))
                 .NoInput().Input("lens", Tensor::FromVector<int32_t>({2}, {2, 1}))
                 .Attr("hidden_size", int64_t{1}).Attr("direction", std::string("reverse"))
                 .Output("Y").Output("Y_h").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const float row0_t1 = std::tanh(3.0f), row0_t0 = std::tanh(1.0f + row0_t1), row1_t0 = std::tanh(2.0f);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 1, 2, 1}, {row0_t0, row1_t0, row0_t1, 0}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 1}, {row0_t0, row1_t0}), (*out)[1]));
}

TEST(RnnTest, BidirectionalStacksForwardAndReverseAndLayoutOneIsBatchMajor) {
  const Tensor x = Tensor::FromVector<float>({2, 1, 1}, {1, 2});
  auto run = [&](int64_t layout, const Tensor& input) {
    return OpTest("RNN", 14).Input("X", input).Input("W", Tensor::FromVector<float>({2, 1, 1}, {1, 1}))
        .Input("R", Tensor::FromVector<float>({2, 1, 1}, {1, 1})).Attr("hidden_size", int64_t{1})
        .Attr("direction", std::string("bidirectional")).Attr("layout", layout).Output("Y").Output("Y_h").Run();
  };
  auto out = run(0, x);
  ASSERT_TRUE(out.ok()) << out.status();
  const float f0 = std::tanh(1.0f), f1 = std::tanh(2.0f + f0);  // forward
  const float r1 = std::tanh(2.0f), r0 = std::tanh(1.0f + r1);  // reverse
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2, 1, 1}, {f0, r0, f1, r1}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 1, 1}, {f1, r0}), (*out)[1]));
  auto batch_major = run(1, x.Reshaped({1, 2, 1}));
  ASSERT_TRUE(batch_major.ok()) << batch_major.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 2, 1}, {f0, r0, f1, r1}), (*batch_major)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2, 1}, {f1, r0}), (*batch_major)[1]));
}

TEST(RnnTest, ActivationsWithAlphaAndClip) {
  // LeakyRelu(alpha 0.5) of clip(-3 * x, -2, 2) with R = 0: x = 1 -> -2 -> -1.
  auto out = OpTest("RNN", 14).Input("X", Tensor::FromVector<float>({1, 1, 1}, {1})).Input("W", W1(-3))
                 .Input("R", W1(0)).Attr("hidden_size", int64_t{1}).Attr("clip", 2.0f)
                 .Attr("activations", std::vector<std::string>{"LeakyRelu"})
                 .Attr("activation_alpha", std::vector<float>{0.5f}).NoOutput().Output("Y_h").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {-1}), (*out)[0]));
}

TEST(RnnTest, Float16ComputesInFloatAndNarrows) {
  // Ht = tanh(xt + Ht-1) over x = {0.5, -1}, in float16.
  auto out = OpTest("RNN", 14)
                 .Input("X", Tensor::FromVector<Float16>({2, 1, 1}, {Float16(0.5f), Float16(-1.0f)}))
                 .Input("W", Tensor::FromVector<Float16>({1, 1, 1}, {Float16(1.0f)}))
                 .Input("R", Tensor::FromVector<Float16>({1, 1, 1}, {Float16(1.0f)}))
                 .Attr("hidden_size", int64_t{1}).NoOutput().Output("Y_h").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const float h = std::tanh(-1.0f + std::tanh(0.5f));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<Float16>({1, 1, 1}, {Float16(h)}), (*out)[0], 1e-3, 1e-3));
}

// GRU, hidden 1: gates z, r, h with weights w = {wz, wr, wh}, r = {rz, rr, rh}, biases Wb then Rb.
float GruReference(const std::vector<float>& xs, bool linear_before_reset) {
  const float wz = 0.3f, wr = -0.4f, wh = 0.8f, rz = 0.5f, rr = 0.6f, rh = -0.7f;
  const float wbz = 0.1f, wbr = 0.2f, wbh = 0.3f, rbz = -0.1f, rbr = 0.4f, rbh = 0.5f;
  float h = 0.2f;  // initial_h
  for (float x : xs) {
    const float z = Sigmoid(wz * x + rz * h + wbz + rbz);
    const float r = Sigmoid(wr * x + rr * h + wbr + rbr);
    const float cand = linear_before_reset ? std::tanh(wh * x + r * (rh * h + rbh) + wbh)
                                           : std::tanh(wh * x + rh * (r * h) + rbh + wbh);
    h = (1 - z) * cand + z * h;
  }
  return h;
}

TEST(GruTest, MatchesTheEquationsWithAndWithoutLinearBeforeReset) {
  const std::vector<float> xs = {1, -1, 2};
  for (int64_t lbr : {0, 1}) {
    auto out = OpTest("GRU", 14)
                   .Input("X", Tensor::FromVector<float>({3, 1, 1}, xs))
                   .Input("W", Tensor::FromVector<float>({1, 3, 1}, {0.3f, -0.4f, 0.8f}))
                   .Input("R", Tensor::FromVector<float>({1, 3, 1}, {0.5f, 0.6f, -0.7f}))
                   .Input("B", Tensor::FromVector<float>({1, 6}, {0.1f, 0.2f, 0.3f, -0.1f, 0.4f, 0.5f}))
                   .NoInput().Input("h0", Tensor::FromVector<float>({1, 1, 1}, {0.2f}))
                   .Attr("hidden_size", int64_t{1}).Attr("linear_before_reset", lbr).NoOutput().Output("Y_h")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {GruReference(xs, lbr != 0)}), (*out)[0]))
        << "linear_before_reset " << lbr;
  }
}

TEST(LstmTest, PeepholesAndInitialStatesMatchTheEquations) {
  // Gates i, o, f, c; peepholes i, o, f.
  const float wi = 0.1f, wo = 0.2f, wf = 0.3f, wc = 0.4f, ri = -0.5f, ro = 0.6f, rf = -0.7f, rc = 0.8f;
  const float pi = 0.9f, po = -0.3f, pf = 0.2f, bias = 0.05f;  // every Wb and Rb is `bias`
  const std::vector<float> xs = {1, 2};
  float h = 0.1f, c = -0.2f;
  for (float x : xs) {
    const float i = Sigmoid(wi * x + ri * h + pi * c + 2 * bias);
    const float f = Sigmoid(wf * x + rf * h + pf * c + 2 * bias);
    const float g = std::tanh(wc * x + rc * h + 2 * bias);
    c = f * c + i * g;
    const float o = Sigmoid(wo * x + ro * h + po * c + 2 * bias);
    h = o * std::tanh(c);
  }
  auto out = OpTest("LSTM", 22)
                 .Input("X", Tensor::FromVector<float>({2, 1, 1}, xs))
                 .Input("W", Tensor::FromVector<float>({1, 4, 1}, {wi, wo, wf, wc}))
                 .Input("R", Tensor::FromVector<float>({1, 4, 1}, {ri, ro, rf, rc}))
                 .Input("B", Tensor::FromVector<float>({1, 8}, std::vector<float>(8, bias)))
                 .NoInput().Input("h0", Tensor::FromVector<float>({1, 1, 1}, {0.1f}))
                 .Input("c0", Tensor::FromVector<float>({1, 1, 1}, {-0.2f}))
                 .Input("P", Tensor::FromVector<float>({1, 3}, {pi, po, pf}))
                 .Attr("hidden_size", int64_t{1}).NoOutput().Output("Y_h").Output("Y_c").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {h}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1}, {c}), (*out)[1]));
}

// Constant float W and R are packed at load for the packed GEMM (runtime/math/packed_gemm.h); fed ones go
// through OpenBLAS, whose results the tests above check against the equations. Sizes that fill no vector
// evenly, several rows, both directions, every cell and GRU's two forms: the two paths must agree.
TEST(RecurrentTest, ConstantWeightsGiveTheResultsOfFedWeights) {
  const int64_t seq = 5, batch = 3, input = 19, hidden = 37;
  struct Case { const char* op; int64_t gates; int64_t linear_before_reset; };
  for (const Case& c : {Case{"RNN", 1, 0}, Case{"GRU", 3, 0}, Case{"GRU", 3, 1}, Case{"LSTM", 4, 0}}) {
    std::mt19937 rng(7);
    auto random = [&](Shape shape) { return RandomTensor(rng, std::move(shape), 0.5f); };
    const Tensor x = random({seq, batch, input});
    const Tensor w = random({2, c.gates * hidden, input});
    const Tensor r = random({2, c.gates * hidden, hidden});
    const Tensor b = random({2, 2 * c.gates * hidden});
    auto run = [&](bool constant) {
      OpTest test(c.op, 14);
      test.Input("X", x);
      if (constant) {
        test.Constant("W", w).Constant("R", r);
      } else {
        test.Input("W", w).Input("R", r);
      }
      test.Input("B", b).Attr("hidden_size", hidden).Attr("direction", std::string("bidirectional"));
      if (c.linear_before_reset != 0) test.Attr("linear_before_reset", c.linear_before_reset);
      return test.Output("Y").Output("Y_h").Run();
    };
    auto fed = run(false);
    auto packed = run(true);
    ASSERT_TRUE(fed.ok()) << c.op << ": " << fed.status();
    ASSERT_TRUE(packed.ok()) << c.op << ": " << packed.status();
    EXPECT_TRUE(TensorsClose((*fed)[0], (*packed)[0], 1e-5, 1e-6)) << c.op << " lbr " << c.linear_before_reset;
    EXPECT_TRUE(TensorsClose((*fed)[1], (*packed)[1], 1e-5, 1e-6)) << c.op << " lbr " << c.linear_before_reset;
  }
}

// A step's recurrent product runs on the calling thread while its weights fit in a core's L2 and the step
// is short (hidden 128 at batch 1 and 16), and over the pool otherwise (hidden 384, or hidden 128 at batch
// 17): either way every output is what one thread computes, to the bit.
TEST(RecurrentTest, ThreadCountNeverChangesTheResult) {
  struct Case { const char* op; int64_t gates, linear_before_reset, hidden, batch; };
  for (const Case& c : {Case{"LSTM", 4, 0, 128, 1}, Case{"LSTM", 4, 0, 128, 16}, Case{"LSTM", 4, 0, 128, 17},
                        Case{"LSTM", 4, 0, 384, 1}, Case{"GRU", 3, 0, 384, 2}, Case{"GRU", 3, 1, 384, 2},
                        Case{"GRU", 3, 1, 128, 1}}) {
    const int64_t seq = 3, input = 24;
    std::mt19937 rng(11);
    auto random = [&](Shape shape) { return RandomTensor(rng, std::move(shape), 0.2f); };
    const Tensor x = random({seq, c.batch, input});
    const Tensor w = random({1, c.gates * c.hidden, input});
    const Tensor r = random({1, c.gates * c.hidden, c.hidden});
    auto run = [&](int threads) {
      OpTest test(c.op, 14);
      test.Input("X", x).Constant("W", w).Constant("R", r).Attr("hidden_size", c.hidden).Threads(threads);
      if (c.linear_before_reset != 0) test.Attr("linear_before_reset", c.linear_before_reset);
      return test.Output("Y").Run();
    };
    auto one = run(1);
    auto two = run(2);
    ASSERT_TRUE(one.ok()) << c.op << ": " << one.status();
    ASSERT_TRUE(two.ok()) << c.op << ": " << two.status();
    const auto a = (*one)[0].values<float>();
    const auto b = (*two)[0].values<float>();
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << c.op << " hidden " << c.hidden << " batch " << c.batch << " lbr " << c.linear_before_reset;
  }
}

// The input projections of every step are computed before the recurrence: seq x batch x 4H for an LSTM, a
// request's length times a model's width, however small the outputs asked for. They are bounded like a
// tensor (and charged to the run's budget): 2048 steps of one input into 64 units are 2 MiB of projections
// from an 8 KiB X and a [1,1,64] Y_h, refused past a 1 MiB limit; 256 steps, 256 KiB, are not.
TEST(LstmTest, RefusesInputProjectionsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  const auto lstm = [](int64_t steps) {
    return OpTest("LSTM", 14)
        .Input("X", Tensor::FromVector<float>({steps, 1, 1}, std::vector<float>(steps, 0.5f)))
        .Input("W", Tensor::FromVector<float>({1, 256, 1}, std::vector<float>(256, 0.1f)))
        .Input("R", Tensor::FromVector<float>({1, 256, 64}, std::vector<float>(256 * 64, 0.01f)))
        .Attr("hidden_size", int64_t{64})
        .NoOutput()
        .Output("Y_h")
        .Run();
  };
  auto long_one = lstm(2048);
  EXPECT_EQ(long_one.status().code(), absl::StatusCode::kResourceExhausted) << long_one.status();
  auto short_one = lstm(256);
  ASSERT_TRUE(short_one.ok()) << short_one.status();
  EXPECT_EQ((*short_one)[0].shape(), (Shape{1, 1, 64}));
}

// The states, gates and outputs of a recurrent node are a request's batch times a model's width, however
// small its X: 4096 rows of one input into 64 units are 16 KiB of X and, for an LSTM, 1 MiB each of Y_h, Y_c
// and the two states, 4 MiB of gates and 4 of input projections, 12 MiB at once. Kept in std::vector, all but
// the projections and the outputs' final copies were taken outside the run's budget (a peak of 4 MiB
// charged), so an 8 MiB budget let the run take all 12.
TEST(LstmTest, ChargesItsStatesGatesAndOutputsToTheRun) {
  constexpr int64_t kBatch = 4096, kHidden = 64, kMiB = int64_t{1} << 20;
  const auto lstm = [&](int64_t budget) {
    return OpTest("LSTM", 14)
        .Input("X", Tensor::FromVector<float>({1, kBatch, 1}, std::vector<float>(kBatch, 0.5f)))
        .Input("W", Tensor::FromVector<float>({1, 4 * kHidden, 1}, std::vector<float>(4 * kHidden, 0.1f)))
        .Input("R",
               Tensor::FromVector<float>({1, 4 * kHidden, kHidden}, std::vector<float>(4 * kHidden * kHidden, 0.01f)))
        .Attr("hidden_size", kHidden)
        .NoOutput()
        .Output("Y_h")
        .Output("Y_c")
        .MemoryBudget(budget)
        .Run();
  };
  auto refused = lstm(8 * kMiB);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  auto answered = lstm(16 * kMiB);
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ((*answered)[1].shape(), (Shape{1, kBatch, kHidden}));
}

}  // namespace
}  // namespace onnxserve
