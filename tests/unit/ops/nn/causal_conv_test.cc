// CausalConvWithState-27: taps over the carried positions and the input, the carry left for the next call,
// SiLU, decoding one position at a time giving what the whole sequence gives, and the shape errors.
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

TEST(CausalConvWithStateTest, TapsReadThePastStateThenTheInput) {
  // k = 3 over [past 1, 2 | input 3, 4]: y0 = 1 + 10*2 + 100*3 + 0.5, y1 = 2 + 10*3 + 100*4 + 0.5.
  auto out = OpTest("CausalConvWithState", 27)
                 .Input("input", Floats({1, 1, 2}, {3, 4}))
                 .Input("weight", Floats({1, 1, 3}, {1, 10, 100}))
                 .Input("bias", Floats({1}, {0.5f}))
                 .Input("past_state", Floats({1, 1, 2}, {1, 2}))
                 .Output("output")
                 .Output("present_state")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2}, {321.5f, 432.5f}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2}, {3, 4}), (*out)[1]));
}

TEST(CausalConvWithStateTest, AnInputShorterThanTheCarryKeepsZeroPaddingInTheState) {
  // k = 4, no past: [0, 0, 0 | 5] gives y = 2 * 5 and a carry of [0, 0, 5]; channel 1 has its own taps.
  auto out = OpTest("CausalConvWithState", 27)
                 .Input("input", Floats({1, 2, 1}, {5, 1}))
                 .Input("weight", Floats({2, 1, 4}, {9, 9, 9, 2, 9, 9, 9, -3}))
                 .Output("output")
                 .Output("present_state")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 2, 1}, {10, -3}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1, 2, 3}, {0, 0, 5, 0, 0, 1}), (*out)[1]));
}

TEST(CausalConvWithStateTest, SiluAndSwishApplyXTimesSigmoidX) {
  for (const char* activation : {"silu", "swish"}) {
    auto out = OpTest("CausalConvWithState", 27)
                   .Attr("activation", std::string(activation))
                   .Input("input", Floats({1, 1, 2}, {1, -1}))
                   .Input("weight", Floats({1, 1, 1}, {1}))
                   .Output("output")
                   .Output("present_state")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    const float s = 1.0f / (1.0f + std::exp(-1.0f));
    EXPECT_TRUE(TensorsClose(Floats({1, 1, 2}, {s, -(1 - s)}), (*out)[0])) << activation;
    EXPECT_EQ((*out)[1].shape(), (Shape{1, 1, 0})) << activation;
  }
}

TEST(CausalConvWithStateTest, DecodingOnePositionAtATimeMatchesTheWholeSequence) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t b = 2, c = 3, len = 6, k = 4;
  std::vector<float> x(b * c * len), w(c * k), bias(c);
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  auto conv = [&](const Tensor& input, const Tensor& past) {
    return OpTest("CausalConvWithState", 27)
        .Attr("activation", std::string("silu"))
        .Input("input", input)
        .Input("weight", Floats({c, 1, k}, w))
        .Input("bias", Floats({c}, bias))
        .Input("past_state", past)
        .Output("output")
        .Output("present_state")
        .Run();
  };
  // A zero carry, so the whole sequence starts where the first decoding step does.
  Tensor state = Floats({b, c, k - 1}, std::vector<float>(b * c * (k - 1), 0.0f));
  auto whole = conv(Floats({b, c, len}, x), state);
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (int64_t t = 0; t < len; ++t) {
    std::vector<float> column(b * c), expected(b * c);
    for (int64_t r = 0; r < b * c; ++r) {
      column[r] = x[r * len + t];
      expected[r] = (*whole)[0].data<float>()[r * len + t];
    }
    auto step = conv(Floats({b, c, 1}, column), state);
    ASSERT_TRUE(step.ok()) << step.status();
    EXPECT_TRUE(TensorsClose(Floats({b, c, 1}, expected), (*step)[0], 1e-5, 1e-6)) << "position " << t;
    state = (*step)[1];
  }
  EXPECT_TRUE(TensorsClose((*whole)[1], state, 1e-5, 1e-6));
}

TEST(CausalConvWithStateTest, ShapesAndActivationAreChecked) {
  const Tensor x = Floats({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = OpTest("CausalConvWithState", 27)
                 .Input("input", x).Input("weight", Floats({2, 2, 1}, {1, 1, 1, 1})).Output("y").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("weight must be [2, 1, k]"), std::string::npos) << out.status();

  out = OpTest("CausalConvWithState", 27)
            .Input("input", x).Input("weight", Floats({2, 1, 3}, {1, 1, 1, 1, 1, 1}))
            .NoInput().Input("past_state", Floats({1, 2, 1}, {0, 0})).Output("y").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("past_state must be [1,2,2]"), std::string::npos) << out.status();

  out = OpTest("CausalConvWithState", 27)
            .Attr("activation", std::string("relu"))
            .Input("input", x).Input("weight", Floats({2, 1, 1}, {1, 1})).Output("y").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("got \"relu\""), std::string::npos) << out.status();
}

}  // namespace
}  // namespace onnxserve
