// The random ops (runtime/ops/random/): seeded values equal numpy's legacy RandomState(seed) stream (the
// expected values below were printed by numpy 1.24, not by onnxserve), a seed repeats on every run and
// thread count, no seed draws afresh, and large samples follow the distribution.
//
// The distribution checks run at a fixed seed, so they are deterministic; their thresholds are the 0.1%
// critical values of each statistic (or 4 standard errors for means and variances), so a correct generator
// passes at all but one seed in a thousand, while a wrong parameter (a scale off by 2%, a mean off by 0.02)
// moves the statistic far past them at these sample sizes.
#include <algorithm>
#include <memory>
#include <utility>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"
#include "tests/support/resident_memory.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

constexpr int64_t kSamples = 100000;
// sqrt(n) * D_n of the Kolmogorov-Smirnov test at significance 0.001.
constexpr double kKsCritical = 1.949;

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.NumElements()));
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double Variance(const std::vector<double>& v) {
  const double mean = Mean(v);
  double sum = 0;
  for (double x : v) sum += (x - mean) * (x - mean);
  return sum / static_cast<double>(v.size() - 1);
}

// sqrt(n) times the Kolmogorov-Smirnov distance between the sample and `cdf`.
template <typename Cdf>
double KsStatistic(std::vector<double> v, Cdf cdf) {
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  double d = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double f = cdf(v[i]);
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  return std::sqrt(n) * d;
}

OpTest Normal(int opset, Shape shape) { return OpTest("RandomNormal", opset).Attr("shape", shape).Output("y"); }
OpTest Uniform(int opset, Shape shape) { return OpTest("RandomUniform", opset).Attr("shape", shape).Output("y"); }

TEST(RandomNormalTest, SeededValuesAreNumpysRandn) {
  // np.random.RandomState(5).randn(6)
  auto out = Normal(1, {2, 3}).Attr("seed", 5.0f).Attr("dtype", int64_t{11}).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({2, 3}, {0.44122748688504143, -0.33087015189408764,
                                                               2.43077118700778, -0.2520921296030769,
                                                               0.10960984157818278, 1.5824811170615634}),
                           (*out)[0], 1e-15, 0));
}

TEST(RandomNormalTest, MeanAndScaleShiftAndStretchInFloat) {
  // (np.random.RandomState(11).randn(2, 3) * 3 + 2).astype(np.float32)
  auto out = Normal(22, {2, 3}).Attr("seed", 11.0f).Attr("mean", 2.0f).Attr("scale", 3.0f).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {7.248364448547363f, 1.141780972480774f,
                                                              0.5463045835494995f, -5.95995569229126f,
                                                              1.9751460552215576f, 1.04110586643219f}),
                           (*out)[0], 1e-6, 0));
}

TEST(RandomUniformTest, SeededValuesAreNumpysRand) {
  // np.random.RandomState(7).rand(5)
  auto out = Uniform(1, {5}).Attr("seed", 7.0f).Attr("dtype", int64_t{11}).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({5}, {0.07630828937395717, 0.7799187922401146,
                                                            0.4384092314408935, 0.7234651778309412,
                                                            0.9779895119966027}),
                           (*out)[0], 1e-15, 0));
}

TEST(RandomUniformTest, LowAndHighBoundTheRange) {
  // np.random.RandomState(11).rand(4) * 4 - 1
  auto out = Uniform(22, {4}).Attr("seed", 11.0f).Attr("low", -1.0f).Attr("high", 3.0f).Attr("dtype", int64_t{11}).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({4}, {-0.2789212444929232, -0.9220990340495017,
                                                            0.8528741059933784, 1.8997357167685913}),
                           (*out)[0], 1e-12, 0));
}

TEST(RandomOpsTest, ASeedRepeatsOnEveryRunAndThreadCount) {
  for (const char* op : {"RandomNormal", "RandomUniform"}) {
    auto one = OpTest(op, 22).Attr("shape", Shape{64, 33}).Attr("seed", 42.0f).Output("y").Threads(1).Run();
    auto again = OpTest(op, 22).Attr("shape", Shape{64, 33}).Attr("seed", 42.0f).Output("y").Threads(1).Run();
    auto two = OpTest(op, 22).Attr("shape", Shape{64, 33}).Attr("seed", 42.0f).Output("y").Threads(2).Run();
    ASSERT_TRUE(one.ok() && again.ok() && two.ok()) << op;
    EXPECT_TRUE(TensorsClose((*one)[0], (*again)[0], 0, 0)) << op;
    EXPECT_TRUE(TensorsClose((*one)[0], (*two)[0], 0, 0)) << op;
    auto other = OpTest(op, 22).Attr("shape", Shape{64, 33}).Attr("seed", 43.0f).Output("y").Run();
    ASSERT_TRUE(other.ok()) << op;
    EXPECT_FALSE(TensorsClose((*one)[0], (*other)[0], 0, 0)) << op << ": seeds 42 and 43 gave the same values";
  }
}

// The outputs of two runs of one session of `model` (empty where a step failed, with the failure reported).
std::pair<std::vector<Tensor>, std::vector<Tensor>> RunTwice(std::shared_ptr<const Model> model) {
  auto session = Session::Create(std::move(model));
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  auto first = (*session)->Run({});
  auto second = (*session)->Run({});
  EXPECT_TRUE(first.ok() && second.ok());
  if (!first.ok() || !second.ok()) return {};
  return {*first, *second};
}

TEST(RandomOpsTest, WithoutASeedEachRunOfOneSessionDrawsAfresh) {
  // The inputs are constants and RandomNormal has none: the nodes must neither be folded at load nor keep
  // their first values.
  auto model = testing::GraphBuilder()
                   .Initializer("c", Tensor::FromVector<float>({256}, std::vector<float>(256)))
                   .Node("RandomUniformLike", {"c"}, "uniform")
                   .NodeWith("RandomNormal", {}, {"normal"}, {testing::IntsAttr("shape", {256})})
                   .Output("uniform")
                   .Output("normal")
                   .Load();
  const auto [first, second] = RunTwice(model);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_FALSE(TensorsClose(first[0], second[0], 0, 0));
  EXPECT_FALSE(TensorsClose(first[1], second[1], 0, 0));
}

TEST(RandomOpsTest, ASeedRepeatsOnEveryRunOfOneSession) {
  auto model = testing::GraphBuilder()
                   .NodeWith("RandomNormal", {}, {"normal"},
                             {testing::IntsAttr("shape", {64}), testing::FloatAttr("seed", 3.0f)})
                   .Output("normal")
                   .Load();
  const auto [first, second] = RunTwice(model);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_TRUE(TensorsClose(first[0], second[0], 0, 0));
}

TEST(RandomNormalTest, LargeSampleHasTheMeanVarianceAndShape) {
  const double mean = 1.5, scale = 2.0;
  auto out = Normal(22, {kSamples}).Attr("seed", 2024.0f).Attr("mean", 1.5f).Attr("scale", 2.0f)
                 .Attr("dtype", int64_t{11}).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> v = Values((*out)[0]);
  const double n = static_cast<double>(kSamples);
  EXPECT_NEAR(Mean(v), mean, 4 * scale / std::sqrt(n));
  // The sample variance of a normal has standard error sigma^2 * sqrt(2 / (n - 1)).
  EXPECT_NEAR(Variance(v), scale * scale, 4 * scale * scale * std::sqrt(2 / (n - 1)));
  EXPECT_LT(KsStatistic(v, [&](double x) { return 0.5 * std::erfc(-(x - mean) / (scale * std::sqrt(2.0))); }),
            kKsCritical);
}

TEST(RandomUniformTest, LargeSampleIsUniformOnLowHigh) {
  const double low = -2, high = 6;
  auto out = Uniform(22, {kSamples}).Attr("seed", 99.0f).Attr("low", -2.0f).Attr("high", 6.0f).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> v = Values((*out)[0]);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), low);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), high);
  // Uniform on [low, high): mean (low + high) / 2, variance (high - low)^2 / 12.
  const double sd = (high - low) / std::sqrt(12.0);
  EXPECT_NEAR(Mean(v), (low + high) / 2, 4 * sd / std::sqrt(static_cast<double>(kSamples)));
  EXPECT_LT(KsStatistic(v, [&](double x) { return std::clamp((x - low) / (high - low), 0.0, 1.0); }), kKsCritical);
}

TEST(RandomOpsTest, DtypeChoosesTheOutputType) {
  auto half = Normal(1, {3}).Attr("dtype", int64_t{10}).Run();
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ((*half)[0].dtype(), DataType::kFloat16);
  auto fallback = Uniform(1, {3}).Run();
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ((*fallback)[0].dtype(), DataType::kFloat);
  auto bf16 = Uniform(22, {3}).Attr("dtype", int64_t{16}).Run();
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ((*bf16)[0].dtype(), DataType::kBFloat16);
  // bfloat16 arrived in version 22; integers never.
  EXPECT_FALSE(Uniform(1, {3}).Attr("dtype", int64_t{16}).Run().ok());
  EXPECT_FALSE(Normal(22, {3}).Attr("dtype", int64_t{6}).Run().ok());
}

TEST(RandomOpsTest, LikeOpsTakeTheInputsShapeAndTypeUnlessDtypeSays) {
  const Tensor x = Tensor::FromVector<double>({2, 0, 3}, {});
  auto same = OpTest("RandomNormalLike", 1).Input("x", x).Output("y").Run();
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ((*same)[0].dtype(), DataType::kDouble);
  EXPECT_EQ((*same)[0].shape(), (Shape{2, 0, 3}));
  const Tensor ints = Tensor::FromVector<int32_t>({4, 2}, std::vector<int32_t>(8, 7));
  auto converted = OpTest("RandomUniformLike", 22).Input("x", ints).Attr("dtype", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(converted.ok()) << converted.status();
  EXPECT_EQ((*converted)[0].dtype(), DataType::kFloat);
  EXPECT_EQ((*converted)[0].shape(), (Shape{4, 2}));
  // An int32 input without dtype would make an int32 output, which the ops cannot.
  EXPECT_FALSE(OpTest("RandomUniformLike", 22).Input("x", ints).Output("y").Run().ok());
}

TEST(RandomOpsTest, ShapeAttributeIsCheckedAtLoad) {
  auto empty = Normal(22, {0, 4}).Run();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].shape(), (Shape{0, 4}));
  EXPECT_FALSE(Normal(22, {-1, 4}).Run().ok());
  EXPECT_FALSE(Uniform(22, {int64_t{1} << 40, int64_t{1} << 40}).Run().ok());
  EXPECT_FALSE(OpTest("RandomNormal", 22).Output("y").Run().ok());  // shape is required
}

TEST(BernoulliTest, SeededDrawsAreNumpysBinomial) {
  // np.random.RandomState(3).binomial(1, p) = [0 1 0 1 1 1 0 0 1 0]; p = 0 and 1 are certain.
  const Tensor p = Tensor::FromVector<float>({10}, {0.0f, 1.0f, 0.3f, 0.7f, 0.5f, 0.9f, 0.1f, 0.0f, 1.0f, 0.45f});
  auto out = OpTest("Bernoulli", 15).Input("p", p).Attr("seed", 3.0f).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({10}, {0, 1, 0, 1, 1, 1, 0, 0, 1, 0}), (*out)[0]));
}

TEST(BernoulliTest, SeedZeroOnTheOnnxTestInput) {
  // The input of ONNX's test_bernoulli_seed; np.random.RandomState(0).binomial(1, x) = [1 0 0 1 0 0 0 0 0 0].
  const Tensor x = Tensor::FromVector<float>({10}, {0.5488135f, 0.71518934f, 0.60276335f, 0.5448832f, 0.4236548f,
                                                    0.6458941f, 0.4375872f, 0.891773f, 0.96366274f, 0.3834415f});
  auto out = OpTest("Bernoulli", 22).Input("x", x).Attr("seed", 0.0f).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({10}, {1, 0, 0, 1, 0, 0, 0, 0, 0, 0}), (*out)[0]));
}

TEST(BernoulliTest, DtypeSetsTheOutputTypeAndTheShapeIsTheInputs) {
  const Tensor p = Tensor::FromVector<double>({2, 2}, {0, 1, 1, 0});
  auto as_bool = OpTest("Bernoulli", 15).Input("p", p).Attr("dtype", int64_t{9}).Output("y").Run();
  ASSERT_TRUE(as_bool.ok()) << as_bool.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({2, 2}, {false, true, true, false}), (*as_bool)[0]));
  auto as_int = OpTest("Bernoulli", 22).Input("p", p).Attr("dtype", int64_t{7}).Output("y").Run();
  ASSERT_TRUE(as_int.ok()) << as_int.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2, 2}, {0, 1, 1, 0}), (*as_int)[0]));
  // Version 15's outputs already include bfloat16 (its inputs do from 22).
  auto as_bf16 = OpTest("Bernoulli", 15).Input("p", p).Attr("dtype", int64_t{16}).Output("y").Run();
  ASSERT_TRUE(as_bf16.ok()) << as_bf16.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<BFloat16>({2, 2}, {BFloat16(0.0f), BFloat16(1.0f), BFloat16(1.0f),
                                                                  BFloat16(0.0f)}),
                           (*as_bf16)[0]));
  EXPECT_FALSE(OpTest("Bernoulli", 22).Input("p", p).Attr("dtype", int64_t{8}).Output("y").Run().ok());  // string
}

TEST(BernoulliTest, ProbabilitiesOutsideZeroOneAreAnError) {
  for (float bad : {-0.1f, 1.5f, NAN}) {
    auto out = OpTest("Bernoulli", 22).Input("p", Tensor::FromVector<float>({2}, {0.5f, bad})).Output("y").Run();
    EXPECT_FALSE(out.ok()) << bad;
  }
}

TEST(BernoulliTest, LargeSampleHitsWithProbabilityP) {
  const double prob = 0.3;
  const Tensor p = Tensor::FromVector<float>({kSamples}, std::vector<float>(kSamples, 0.3f));
  auto out = OpTest("Bernoulli", 22).Input("p", p).Attr("seed", 17.0f).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> v = Values((*out)[0]);
  EXPECT_EQ(std::count_if(v.begin(), v.end(), [](double x) { return x != 0 && x != 1; }), 0);
  const double n = static_cast<double>(kSamples);
  // Binomial(n, p): a one-degree-of-freedom chi-square, (k - np)^2 / (np(1-p)), below 10.83 (0.1%).
  const double ones = Mean(v) * n;
  EXPECT_LT((ones - n * prob) * (ones - n * prob) / (n * prob * (1 - prob)), 10.83);
}

TEST(MultinomialTest, ShapeAndTypeFollowTheAttributes) {
  const Tensor logits = Tensor::FromVector<float>({2, 3}, {0, 0, 0, 1, 2, 3});
  auto out = OpTest("Multinomial", 7).Input("x", logits).Attr("sample_size", int64_t{5}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DataType::kInt32);
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 5}));
  auto wide = OpTest("Multinomial", 22).Input("x", logits).Attr("dtype", int64_t{7}).Output("y").Run();
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ((*wide)[0].dtype(), DataType::kInt64);
  EXPECT_EQ((*wide)[0].shape(), (Shape{2, 1}));
  EXPECT_FALSE(OpTest("Multinomial", 22).Input("x", logits).Attr("dtype", int64_t{1}).Output("y").Run().ok());
  EXPECT_FALSE(OpTest("Multinomial", 22).Input("x", Tensor::FromVector<float>({3}, {0, 0, 0})).Output("y").Run().ok());
}

TEST(MultinomialTest, ClassesOfMinusInfinityAreNeverDrawnAndASeedRepeats) {
  const Tensor logits = Tensor::FromVector<float>({2, 3}, {-INFINITY, 0, -INFINITY, 0, -INFINITY, 5});
  OpTest test = OpTest("Multinomial", 22).Input("x", logits).Attr("sample_size", int64_t{200}).Attr("seed", 1.0f)
                    .Output("y");
  auto out = test.Run();
  auto again = test.Run();
  ASSERT_TRUE(out.ok() && again.ok());
  EXPECT_TRUE(TensorsClose((*out)[0], (*again)[0]));
  const int32_t* k = (*out)[0].data<int32_t>();
  for (int s = 0; s < 200; ++s) EXPECT_EQ(k[s], 1);
  for (int s = 200; s < 400; ++s) EXPECT_TRUE(k[s] == 0 || k[s] == 2) << k[s];
}

TEST(MultinomialTest, LargeSampleFollowsTheSoftmax) {
  // log-probabilities log(0.1), log(0.2), log(0.3), log(0.4) plus a constant, which softmax ignores.
  const std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p) + 7));
  auto out = OpTest("Multinomial", 22).Input("x", Tensor::FromVector<float>({1, 4}, logits))
                 .Attr("sample_size", kSamples).Attr("seed", 5.0f).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> counts(4);
  for (int64_t i = 0; i < kSamples; ++i) counts.at(static_cast<size_t>((*out)[0].data<int32_t>()[i])) += 1;
  double chi2 = 0;
  for (size_t c = 0; c < 4; ++c) {
    const double expected = probs[c] * kSamples;
    chi2 += (counts[c] - expected) * (counts[c] - expected) / expected;
  }
  EXPECT_LT(chi2, 16.27);  // chi-square with 3 degrees of freedom at 0.1%
}

// No rows to sample, however many classes the empty logits' shape says: x [0, 2^25] made a vector of 2^25
// running sums (256 MiB, outside the run's budget) for none.
TEST(MultinomialTest, EmptyLogitsOfManyClassesTakeNoMemory) {
  const int64_t growth = testing::ResidentGrowth([] {
    auto out =
        OpTest("Multinomial", 7).Input("x", Tensor(DataType::kFloat, {0, int64_t{1} << 25})).Output("y").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].NumElements(), 0);
  });
  if (growth < 0) GTEST_SKIP() << "this kernel reports no resident-set high-water mark to reset";
  EXPECT_LT(growth, int64_t{64} << 20);
}

}  // namespace
}  // namespace onnxserve
