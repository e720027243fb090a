// Layer/Instance/Group normalization, MeanVarianceNormalization and LRN on small hand-worked inputs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"
#include "tests/support/resident_memory.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor F(Shape shape, std::vector<float> v) { return Tensor::FromVector<float>(std::move(shape), v); }

TEST(LayerNormalizationTest, NormalizesFromAxisAndReturnsStatistics) {
  // Rows [1, 3] and [2, 6]: means 2 and 4, std 1 and 2 (epsilon 0), so both normalize to [-1, 1].
  auto out = OpTest("LayerNormalization", 17)
                 .Input("x", F({2, 2}, {1, 3, 2, 6}))
                 .Input("scale", F({2}, {1, 2}))
                 .Input("b", F({2}, {0, 1}))
                 .Attr("epsilon", 0.0f)
                 .Output("y")
                 .Output("mean")
                 .Output("inv_std")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({2, 2}, {-1, 3, -1, 3}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(F({2, 1}, {2, 4}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(F({2, 1}, {1, 0.5f}), (*out)[2]));
}

TEST(LayerNormalizationTest, ScaleBroadcastsOverTheNormalizedDims) {
  // axis 0 normalizes all four values (mean 3, variance 2); the one-element scale 2 applies to each.
  auto out = OpTest("LayerNormalization", 17)
                 .Input("x", F({2, 2}, {1, 3, 3, 5}))
                 .Input("scale", F({1}, {2}))
                 .Attr("axis", int64_t{0})
                 .Attr("epsilon", 0.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const float k = 2 * 2 / std::sqrt(2.0f);
  EXPECT_TRUE(TensorsClose(F({2, 2}, {-k, 0, 0, k}), (*out)[0]));
}

TEST(InstanceNormalizationTest, PerInstancePerChannel) {
  // Planes [1, 3] and [0, 4]: both normalize to [-1, 1]; scale 2, 1 and bias 0, 5.
  auto out = OpTest("InstanceNormalization", 6)
                 .Input("x", F({1, 2, 2}, {1, 3, 0, 4}))
                 .Input("s", F({2}, {2, 1}))
                 .Input("b", F({2}, {0, 5}))
                 .Attr("epsilon", 0.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({1, 2, 2}, {-2, 2, 4, 6}), (*out)[0]));
}

// X [1, 4, 1]: two groups of two channels, [1, 3] and [0, 4], each normalizing to [-1, 1].
Tensor GroupX() { return F({1, 4, 1}, {1, 3, 0, 4}); }

TEST(GroupNormalizationTest, Version18ScalesPerGroup) {
  auto out = OpTest("GroupNormalization", 18)
                 .Input("x", GroupX())
                 .Input("scale", F({2}, {2, 1}))
                 .Input("bias", F({2}, {0, 5}))
                 .Attr("num_groups", int64_t{2})
                 .Attr("epsilon", 0.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({1, 4, 1}, {-2, 2, 4, 6}), (*out)[0]));
}

TEST(GroupNormalizationTest, Version21ScalesPerChannel) {
  auto out = OpTest("GroupNormalization", 21)
                 .Input("x", GroupX())
                 .Input("scale", F({4}, {1, 2, 3, 4}))
                 .Input("bias", F({4}, {0, 0, 1, 1}))
                 .Attr("num_groups", int64_t{2})
                 .Attr("epsilon", 0.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({1, 4, 1}, {-1, 2, -2, 5}), (*out)[0]));
  // A per-group scale is the wrong shape for version 21.
  auto wrong = OpTest("GroupNormalization", 21)
                   .Input("x", GroupX())
                   .Input("scale", F({2}, {2, 1}))
                   .Input("bias", F({2}, {0, 5}))
                   .Attr("num_groups", int64_t{2})
                   .Output("y")
                   .Run();
  EXPECT_FALSE(wrong.ok());
}

TEST(MeanVarianceNormalizationTest, StatisticsOverTheGivenAxes) {
  // axes [1]: rows [1, 3] and [2, 6] each become [-1, 1].
  auto out = OpTest("MeanVarianceNormalization", 13)
                 .Input("x", F({2, 2}, {1, 3, 2, 6}))
                 .Attr("axes", std::vector<int64_t>{1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({2, 2}, {-1, 1, -1, 1}), (*out)[0]));
}

TEST(MeanVarianceNormalizationTest, AScalarNormalizesToZeroWithoutWritingPastItsShape) {
  // axes [0] on a scalar: axis 0 passed the axis check and was written into an empty shape (found by the
  // model fuzzer). A scalar is its own mean, so it becomes 0.
  auto out = OpTest("MeanVarianceNormalization", 13)
                 .Input("x", Tensor::Scalar(5.0f))
                 .Attr("axes", std::vector<int64_t>{0})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(0.0f), (*out)[0]));
}

TEST(LRNTest, SumsSquaresOverTheChannelWindow) {
  // size 2: channel c sums channels c-0..c+1. x = [1, 2]: sums 5 and 4; alpha 2, beta 1, bias 1:
  // y0 = 1 / (1 + 2/2 * 5) = 1/6, y1 = 2 / (1 + 4) = 0.4.
  auto out = OpTest("LRN", 13)
                 .Input("x", F({1, 2, 1}, {1, 2}))
                 .Attr("size", int64_t{2})
                 .Attr("alpha", 2.0f)
                 .Attr("beta", 1.0f)
                 .Attr("bias", 1.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(F({1, 2, 1}, {1.0f / 6, 0.4f}), (*out)[0]));
}

std::vector<float> RandomValues(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Rows of several lengths (partial vectors, and one long enough for several summation blocks), with a
// mean far from 0, against the formula in double.
TEST(LayerNormalizationTest, FloatRowsMatchTheDoubleFormula) {
  std::mt19937 rng(23);
  for (int64_t len : {1, 5, 8, 13, 64, 70, 768, 3000}) {
    const std::vector<float> x = RandomValues(static_cast<size_t>(4 * len), 90, 110, rng);
    const std::vector<float> scale = RandomValues(static_cast<size_t>(len), -2, 2, rng);
    const std::vector<float> bias = RandomValues(static_cast<size_t>(len), -1, 1, rng);
    Tensor expected(DataType::kFloat, {4, len});
    for (int64_t r = 0; r < 4; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < len; ++i) mean += x[r * len + i];
      mean /= static_cast<double>(len);
      for (int64_t i = 0; i < len; ++i) var += (x[r * len + i] - mean) * (x[r * len + i] - mean);
      const double inv_std = 1 / std::sqrt(var / static_cast<double>(len) + 1e-5);
      for (int64_t i = 0; i < len; ++i) {
        expected.data<float>()[r * len + i] = static_cast<float>((x[r * len + i] - mean) * inv_std * scale[i] + bias[i]);
      }
    }
    auto out = OpTest("LayerNormalization", 17)
                   .Input("x", F({4, len}, x))
                   .Input("scale", F({len}, scale))
                   .Input("bias", F({len}, bias))
                   .Output("y")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(expected, (*out)[0], 1e-4, 1e-5)) << "len=" << len;
  }
}

// LRN over random planes for AlexNet's beta 0.75 (two square roots) and another beta (std::pow), against
// the formula in double.
TEST(LRNTest, FloatPlanesMatchTheDoubleFormula) {
  std::mt19937 rng(29);
  const int64_t n = 2, channels = 7, spatial = 37;
  const std::vector<float> x = RandomValues(static_cast<size_t>(n * channels * spatial), -30, 30, rng);
  for (float beta : {0.75f, 0.6f}) {
    const int64_t size = 5;
    const double alpha = 1e-3, bias = 2;
    Tensor expected(DataType::kFloat, {n, channels, spatial});
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t i = 0; i < spatial; ++i) {
          double sum = 0;
          for (int64_t w = std::max<int64_t>(0, c - 2); w <= std::min<int64_t>(channels - 1, c + 2); ++w) {
            const double v = x[(b * channels + w) * spatial + i];
            sum += v * v;
          }
          const int64_t at = (b * channels + c) * spatial + i;
          expected.data<float>()[at] = static_cast<float>(x[at] / std::pow(bias + alpha / size * sum, double{beta}));
        }
      }
    }
    auto out = OpTest("LRN", 13)
                   .Input("x", F({n, channels, spatial}, x))
                   .Attr("size", size)
                   .Attr("alpha", static_cast<float>(alpha))
                   .Attr("beta", beta)
                   .Attr("bias", static_cast<float>(bias))
                   .Output("y")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(expected, (*out)[0], 1e-5, 1e-7)) << "beta " << beta;
  }
}

// Zero channels made zero groups, and "channels % groups" divided by zero (SIGFPE, the process gone).
TEST(InstanceNormalizationTest, NoChannelsGiveAnEmptyOutput) {
  auto out = OpTest("InstanceNormalization", 6)
                 .Input("x", F({1, 0, 2}, {}))
                 .Input("s", F({0}, {}))
                 .Input("b", F({0}, {}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{1, 0, 2}));
}

// An empty X has nothing to normalize, however many groups or row positions its other dims make; each of
// these made 256 MiB or more of statistics or offsets outside the run's budget.
TEST(NormalizationTest, AnEmptyXOfHugeOtherDimsTakesNoMemory) {
  const int64_t growth = testing::ResidentGrowth([] {
    // MeanVarianceNormalization over axes [2, 3] of [2^22, 8, 0, 1]: 2^25 groups.
    auto mvn = OpTest("MeanVarianceNormalization", 13)
                   .Input("x", Tensor(DataType::kFloat, {int64_t{1} << 22, 8, 0, 1}))
                   .Attr("axes", std::vector<int64_t>{2, 3})
                   .Output("y")
                   .Run();
    ASSERT_TRUE(mvn.ok()) << mvn.status();
    EXPECT_EQ((*mvn)[0].NumElements(), 0);
    // LayerNormalization of [0, 2^25] with a Scale of [1]: no row, each 2^25 long.
    auto layer = OpTest("LayerNormalization", 17)
                     .Input("x", Tensor(DataType::kFloat, {0, int64_t{1} << 25}))
                     .Input("scale", Tensor::FromVector<float>({1}, {2.0f}))
                     .Attr("axis", int64_t{1})
                     .Output("y")
                     .Run();
    ASSERT_TRUE(layer.ok()) << layer.status();
    EXPECT_EQ((*layer)[0].shape(), (Shape{0, int64_t{1} << 25}));
  });
  if (growth < 0) GTEST_SKIP() << "this kernel reports no resident-set high-water mark to reset";
  EXPECT_LT(growth, int64_t{64} << 20);
}

// 2^22 empty rows still have statistics, 16 bytes each: 64 MiB, now charged to the run, so a 1 MiB budget
// refuses them.
TEST(LayerNormalizationTest, StatisticsOfManyEmptyRowsCountAgainstTheBudget) {
  auto out = OpTest("LayerNormalization", 17)
                 .Input("x", Tensor(DataType::kFloat, {int64_t{1} << 22, 0}))
                 .Input("scale", Tensor(DataType::kFloat, {0}))
                 .Attr("axis", int64_t{1})
                 .Output("y")
                 .MemoryBudget(int64_t{1} << 20)
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve
