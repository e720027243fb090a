// The vector primitives of runtime/math/vector_kernels.h, run through each ISA's own table (not only the
// active one), so one machine tests every ISA it has; the others are skipped with a message. References
// are computed in double with <cmath>, or by plain scalar loops for the exact operations.
#include "runtime/math/vector_kernels.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/math/isa.h"

namespace onnxserve::vec {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kDenormal = 1e-40f;

// Distance in representable floats (0 for two NaNs, huge for a NaN against a number).
int64_t UlpDistance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : int64_t{1} << 40;
  const auto ordered = [](float v) {
    const int64_t bits = std::bit_cast<int32_t>(v);
    return bits < 0 ? int64_t{INT32_MIN} - bits : bits;
  };
  return std::abs(ordered(a) - ordered(b));
}

bool SameFloat(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (a != a && b != b); }

class VectorKernelsTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (DetectedIsa() < GetParam()) {
      GTEST_SKIP() << "this CPU lacks " << IsaName(GetParam()) << " (it has " << IsaName(DetectedIsa())
                   << "): its kernels are compiled but not run here";
    }
  }
  const VectorKernels& k() const { return KernelsFor(GetParam()); }
};

// Inputs spanning the interesting ranges: a dense sweep of [-lo, hi], magnitudes from denormal to huge of
// both signs, and the special values.
std::vector<float> SweepInputs(float lo, float hi) {
  std::vector<float> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(lo + (hi - lo) * static_cast<float>(i) / 200000.0f);
  for (float m = kDenormal; m < 1e30f; m *= 1.37f) {
    x.push_back(m);
    x.push_back(-m);
  }
  for (float v : {0.0f, -0.0f, kInf, -kInf, kNaN, kDenormal, -kDenormal, 88.7f, 88.8f, -87.3f, -103.9f, -104.5f,
                  1e10f, -1e10f, std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest()}) {
    x.push_back(v);
  }
  return x;
}

struct Accuracy {
  int64_t max_ulp = 0;
  float worst_x = 0;
};

// Runs `f` over the sweep and measures it against the double reference rounded to float. A result within
// abs_per_x * |x| of the reference counts as exact (for functions that cancel, as Gelu does for x << 0).
Accuracy Measure(void (*f)(const float*, float*, int64_t), const std::function<double(double)>& reference,
                 float lo, float hi, double abs_per_x = 0) {
  const std::vector<float> x = SweepInputs(lo, hi);
  std::vector<float> y(x.size());
  f(x.data(), y.data(), static_cast<int64_t>(x.size()));
  Accuracy acc;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = reference(static_cast<double>(x[i]));
    if (std::abs(static_cast<double>(y[i]) - exact) <= abs_per_x * std::abs(x[i])) continue;
    const int64_t ulp = UlpDistance(y[i], static_cast<float>(exact));
    if (ulp > acc.max_ulp) acc = {ulp, x[i]};
  }
  return acc;
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double GeluErf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double GeluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

TEST_P(VectorKernelsTest, ExpIsWithinTwoUlpsIncludingSubnormalResultsAndLimits) {
  const Accuracy a = Measure(k().exp, [](double x) { return std::exp(x); }, -110, 90);
  EXPECT_LE(a.max_ulp, 2) << "worst at x = " << a.worst_x;
}

TEST_P(VectorKernelsTest, TanhIsWithinThreeUlps) {
  const Accuracy a = Measure(k().tanh, [](double x) { return std::tanh(x); }, -12, 12);
  EXPECT_LE(a.max_ulp, 3) << "worst at x = " << a.worst_x;
}

TEST_P(VectorKernelsTest, SigmoidIsWithinThreeUlps) {
  const Accuracy a = Measure(k().sigmoid, Sigmoid, -110, 110);
  EXPECT_LE(a.max_ulp, 3) << "worst at x = " << a.worst_x;
}

TEST_P(VectorKernelsTest, ErfIsWithinTwoUlps) {
  const Accuracy a = Measure(k().erf, [](double x) { return std::erf(x); }, -5, 5);
  EXPECT_LE(a.max_ulp, 2) << "worst at x = " << a.worst_x;
}

// 1 + erf(x) and 1 + tanh(x) cancel for x << 0, in every float Gelu (the scalar std::erf one and ONNX
// Runtime's too): the error there is absolute, an ulp of 1 times |x| / 2 (allowed: two such ulps).
TEST_P(VectorKernelsTest, GeluIsWithinFourUlpsOrItsCancellationError) {
  constexpr double kCancellation = 1.2e-7;
  const Accuracy e = Measure(k().gelu_erf, GeluErf, -10, 10, kCancellation);
  EXPECT_LE(e.max_ulp, 4) << "erf form, worst at x = " << e.worst_x;
  const Accuracy t = Measure(k().gelu_tanh, GeluTanh, -10, 10, kCancellation);
  EXPECT_LE(t.max_ulp, 4) << "tanh form, worst at x = " << t.worst_x;
}

TEST_P(VectorKernelsTest, TranscendentalsKeepSpecialValues) {
  const std::vector<float> x = {kNaN, kInf, -kInf, 0.0f, -0.0f, 1e3f, -1e3f, kDenormal, -kDenormal};
  std::vector<float> y(x.size());
  const auto run = [&](void (*f)(const float*, float*, int64_t)) {
    f(x.data(), y.data(), static_cast<int64_t>(x.size()));
    return y;
  };
  const std::vector<float> e = run(k().exp);
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_EQ(e[1], kInf);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(e[3], 1.0f);
  EXPECT_EQ(e[5], kInf);
  EXPECT_EQ(e[6], 0.0f);
  EXPECT_EQ(e[7], 1.0f);
  const std::vector<float> t = run(k().tanh);
  EXPECT_TRUE(std::isnan(t[0]));
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_EQ(t[2], -1.0f);
  EXPECT_TRUE(SameFloat(t[4], -0.0f));
  EXPECT_EQ(t[7], kDenormal);
  EXPECT_EQ(t[8], -kDenormal);
  const std::vector<float> s = run(k().sigmoid);
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_EQ(s[2], 0.0f);
  EXPECT_EQ(s[3], 0.5f);
  EXPECT_EQ(s[6], 0.0f);
  const std::vector<float> r = run(k().erf);
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 1.0f);
  EXPECT_EQ(r[2], -1.0f);
  EXPECT_TRUE(SameFloat(r[4], -0.0f));
  EXPECT_GT(r[7], 0.0f);
  const std::vector<float> g = run(k().gelu_erf);
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_EQ(g[1], kInf);
  EXPECT_EQ(g[5], 1e3f);
  EXPECT_EQ(g[6], -0.0f);
}

// The exact maps against their scalar definitions, bit for bit (NaN, -0 and infinities included).
TEST_P(VectorKernelsTest, SimpleMapsMatchTheirScalarDefinitions) {
  std::vector<float> x = SweepInputs(-8, 8);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(x.size());
  const auto check = [&](const char* name, const std::function<float(float)>& reference) {
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(SameFloat(y[i], reference(x[i]))) << name << "(" << x[i] << ") = " << y[i];
    }
  };
  k().relu(x.data(), y.data(), n);
  check("relu", [](float v) { return v < 0 ? 0.0f : v; });
  k().leaky_relu(x.data(), y.data(), n, 0.1f);
  check("leaky_relu", [](float v) { return v < 0 ? 0.1f * v : v; });
  k().clip(x.data(), y.data(), n, -1.5f, 2.0f);
  check("clip", [](float v) { return v < -1.5f ? -1.5f : 2.0f < v ? 2.0f : v; });
  k().sqrt(x.data(), y.data(), n);
  check("sqrt", [](float v) { return std::sqrt(v); });
}

// Maps with one multiply-add: within the rounding of the two operations of the plain formula.
TEST_P(VectorKernelsTest, AffineMapsAreWithinTheirRoundingBound) {
  const std::vector<float> x = SweepInputs(-8, 8);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(x.size());
  const auto check = [&](const char* name, const std::function<double(double)>& reference, double scale) {
    for (size_t i = 0; i < x.size(); ++i) {
      const double exact = reference(x[i]);
      if (std::isnan(exact)) {
        ASSERT_TRUE(std::isnan(y[i])) << name << "(" << x[i] << ")";
      } else if (std::isinf(exact)) {
        ASSERT_EQ(y[i], exact) << name << "(" << x[i] << ")";
      } else {
        ASSERT_LE(std::abs(y[i] - exact), 3e-7 * (std::abs(exact) + scale * std::abs(x[i]) + 1e-30))
            << name << "(" << x[i] << ") = " << y[i];
      }
    }
  };
  k().affine(x.data(), y.data(), n, 0.75f, -2.0f);
  check("affine", [](double v) { return v * 0.75 - 2; }, 1);
  k().hard_sigmoid(x.data(), y.data(), n, 0.2f, 0.5f);
  check("hard_sigmoid", [](double v) { return std::clamp(0.2f * v + 0.5, 0.0, 1.0); }, 1);
  k().hard_swish(x.data(), y.data(), n);
  check("hard_swish", [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }, 1);
}

// Every length 0..70 at every offset within a vector: each element equals the same function applied to
// that element alone (so the tail and the full vectors compute alike), and nothing past n is written.
TEST_P(VectorKernelsTest, MapsTreatEveryPositionAlikeForAllTailsAndOffsets) {
  using Map = void (*)(const float*, float*, int64_t);
  const std::vector<std::pair<const char*, Map>> maps = {
      {"exp", k().exp},   {"tanh", k().tanh}, {"sigmoid", k().sigmoid},     {"erf", k().erf},
      {"gelu_erf", k().gelu_erf},            {"gelu_tanh", k().gelu_tanh}, {"sqrt", k().sqrt},
      {"relu", k().relu}, {"hard_swish", k().hard_swish}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-6, 6);
  constexpr float kGuard = 12345.0f;
  for (const auto& [name, f] : maps) {
    for (int64_t n = 0; n <= 70; ++n) {
      for (int64_t offset = 0; offset < 4; ++offset) {
        std::vector<float> in(static_cast<size_t>(n + offset + 20)), out(in.size(), kGuard);
        for (float& v : in) v = dist(rng);
        f(in.data() + offset, out.data() + offset, n);
        for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
          if (i < offset || i >= offset + n) {
            ASSERT_EQ(out[i], kGuard) << name << " wrote outside [" << offset << ", " << offset + n << ")";
            continue;
          }
          float alone = 0;
          f(&in[i], &alone, 1);
          ASSERT_TRUE(SameFloat(out[i], alone)) << name << " n=" << n << " i=" << i - offset;
        }
      }
    }
  }
}

TEST_P(VectorKernelsTest, MapsWorkInPlace) {
  std::vector<float> x = {-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::vector<float> original = x;
  k().exp(x.data(), x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(UlpDistance(x[i], std::exp(original[i])), 2);
}

TEST_P(VectorKernelsTest, BinaryOpsGiveTheScalarResultsForEveryStridePattern) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-4, 4);
  const std::vector<std::pair<BinaryOp, std::function<float(float, float)>>> ops = {
      {BinaryOp::kAdd, [](float a, float b) { return a + b; }},
      {BinaryOp::kSub, [](float a, float b) { return a - b; }},
      {BinaryOp::kMul, [](float a, float b) { return a * b; }},
      {BinaryOp::kDiv, [](float a, float b) { return a / b; }},
      {BinaryOp::kMax, [](float a, float b) { return a > b ? a : b; }}};
  for (const auto& [op, reference] : ops) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      const bool a_steps = pattern & 1, b_steps = pattern & 2;
      for (int64_t n = 0; n <= 70; ++n) {
        std::vector<float> a(static_cast<size_t>(n + 1)), b(a.size()), y(a.size() + 1, -7.0f);
        for (float& v : a) v = dist(rng);
        for (float& v : b) v = dist(rng);
        if (n > 3) a[2] = kNaN;
        k().binary(op, a.data() + 1, a_steps, b.data() + 1, b_steps, y.data() + 1, n);
        for (int64_t i = 0; i < n; ++i) {
          const float expected = reference(a[a_steps ? i + 1 : 1], b[b_steps ? i + 1 : 1]);
          ASSERT_TRUE(SameFloat(y[i + 1], expected))
              << "op " << static_cast<int>(op) << " pattern " << pattern << " n=" << n << " i=" << i;
        }
        EXPECT_EQ(y[0], -7.0f);
        EXPECT_EQ(y[n + 1], -7.0f);
      }
    }
  }
}

TEST_P(VectorKernelsTest, ReductionsOverEveryLength) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-3, 5);
  for (int64_t n = 0; n <= 1100; n += (n < 70 ? 1 : 97)) {
    std::vector<float> x(static_cast<size_t>(n + 1));
    for (float& v : x) v = dist(rng);
    const float* p = x.data() + 1;  // unaligned
    float best = -kInf;
    double sum = 0, magnitude = 0;
    for (int64_t i = 0; i < n; ++i) {
      best = std::max(best, p[i]);
      sum += p[i];
      magnitude += std::abs(p[i]);
    }
    EXPECT_EQ(k().max(p, n), best) << "n=" << n;
    EXPECT_NEAR(k().sum(p, n), sum, 1e-6 * magnitude + 1e-12) << "n=" << n;
    const double mean = n > 0 ? sum / static_cast<double>(n) : 0;
    double squares = 0;
    for (int64_t i = 0; i < n; ++i) squares += (p[i] - static_cast<float>(mean)) * (p[i] - static_cast<double>(static_cast<float>(mean)));
    EXPECT_NEAR(k().sum_squared_deviations(p, n, static_cast<float>(mean)), squares, 1e-6 * squares + 1e-12) << "n=" << n;

    std::vector<float> y(static_cast<size_t>(n) + 1, -7.0f);
    const float shift = n > 0 ? best : 0.0f;
    double exp_sum = 0;
    for (int64_t i = 0; i < n; ++i) exp_sum += std::exp(static_cast<double>(p[i]) - shift);
    EXPECT_NEAR(k().exp_shifted_sum(p, y.data(), n, shift), exp_sum, 1e-6 * exp_sum + 1e-12) << "n=" << n;
    for (int64_t i = 0; i < n; ++i) ASSERT_LE(UlpDistance(y[i], std::exp(p[i] - shift)), 2) << "n=" << n;
    EXPECT_EQ(y[n], -7.0f);
  }
}

TEST_P(VectorKernelsTest, MaxIgnoresNaNAndIsMinusInfinityWhenEmpty) {
  EXPECT_EQ(k().max(nullptr, 0), -kInf);
  std::vector<float> x(37, -1.0f);
  x[3] = kNaN;
  x[30] = 2.5f;
  x[36] = kNaN;
  EXPECT_EQ(k().max(x.data(), static_cast<int64_t>(x.size())), 2.5f);
  const std::vector<float> all_nan(19, kNaN);
  EXPECT_EQ(k().max(all_nan.data(), 19), -kInf);
}

TEST_P(VectorKernelsTest, SumsOfLongArraysKeepDoubleAccuracy) {
  // 1 + 1e-4 repeated 2^20 times: a float running sum would be off by ~1% (it stops growing by the
  // addend's low bits); the blocked sum stays within 32 float epsilons.
  const std::vector<float> x(1 << 20, 1.0001f);
  const double exact = static_cast<double>(1.0001f) * static_cast<double>(x.size());
  EXPECT_NEAR(k().sum(x.data(), static_cast<int64_t>(x.size())), exact, 32 * 0x1p-24 * exact);
  const double squares = static_cast<double>(x.size()) * 0.5 * 0.5;
  EXPECT_NEAR(k().sum_squared_deviations(x.data(), static_cast<int64_t>(x.size()), 1.0001f - 0.5f), squares,
              32 * 0x1p-24 * squares);
}

TEST_P(VectorKernelsTest, NormalizeAndAccumulateSquares) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-3, 3);
  for (int64_t n = 0; n <= 70; ++n) {
    std::vector<float> x(static_cast<size_t>(n)), scale(x.size()), bias(x.size()), y(x.size()), z(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = dist(rng), scale[i] = dist(rng), bias[i] = dist(rng);
    k().normalize(x.data(), y.data(), n, 0.25f, 1.5f, scale.data(), bias.data());
    k().normalize(x.data(), z.data(), n, 0.25f, 1.5f, scale.data(), nullptr);
    std::vector<float> acc = bias;
    k().accumulate_squares(x.data(), acc.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double t = (x[i] - 0.25) * 1.5 * scale[i];
      EXPECT_NEAR(y[i], t + bias[i], 1e-6 * (std::abs(t) + std::abs(bias[i])));
      EXPECT_NEAR(z[i], t, 1e-6 * std::abs(t));
      EXPECT_NEAR(acc[i], bias[i] + static_cast<double>(x[i]) * x[i], 1e-6 * (std::abs(bias[i]) + x[i] * x[i]));
    }
  }
}

// The window rows against the plain loop (taps in k order, so sums agree to the bit too).
TEST_P(VectorKernelsTest, WindowRowsMatchThePlainLoopForEveryStrideKernelAndWidth) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-5, 5);
  for (int64_t stride = 1; stride <= 3; ++stride) {
    for (int64_t kernel = 1; kernel <= 4; ++kernel) {
      for (int64_t out_width = 0; out_width <= 40; ++out_width) {
        const int64_t len = out_width == 0 ? 0 : (out_width - 1) * stride + kernel;
        std::vector<float> padded(static_cast<size_t>(len) + 1);  // +1: start unaligned
        for (float& v : padded) v = dist(rng);
        if (len > 5) padded[5] = kNaN;
        const float* p = padded.data() + 1;
        std::vector<float> max_out(static_cast<size_t>(out_width) + 1, -7.0f), sum_out(max_out);
        k().window_max(p, out_width, kernel, stride, max_out.data());
        k().window_sum(p, out_width, kernel, stride, sum_out.data());
        for (int64_t o = 0; o < out_width; ++o) {
          float best = -kInf, sum = 0;
          for (int64_t t = 0; t < kernel; ++t) {
            const float v = p[o * stride + t];
            best = v > best ? v : best;
            sum += v;
          }
          ASSERT_TRUE(SameFloat(max_out[o], best)) << "stride " << stride << " kernel " << kernel << " o " << o;
          ASSERT_TRUE(SameFloat(sum_out[o], sum)) << "stride " << stride << " kernel " << kernel << " o " << o;
        }
        EXPECT_EQ(max_out[out_width], -7.0f);
        EXPECT_EQ(sum_out[out_width], -7.0f);
      }
    }
  }
}

TEST(VectorKernelsDispatchTest, KernelsForGivesEachIsasTableUpToTheDetectedOne) {
  EXPECT_EQ(&KernelsFor(Isa::kBaseline), &kBaselineKernels);
  EXPECT_EQ(&KernelsFor(Isa::kAvx2), DetectedIsa() >= Isa::kAvx2 ? &kAvx2Kernels : &kBaselineKernels);
  const VectorKernels* avx512 = DetectedIsa() == Isa::kAvx512 ? &kAvx512Kernels : &KernelsFor(DetectedIsa());
  EXPECT_EQ(&KernelsFor(Isa::kAvx512), avx512);
}

TEST(VectorKernelsDispatchTest, KernelsIsTheActiveIsasTable) {
  const VectorKernels* expected = ActiveIsa() == Isa::kAvx512 ? &kAvx512Kernels
                                  : ActiveIsa() == Isa::kAvx2 ? &kAvx2Kernels
                                                              : &kBaselineKernels;
  EXPECT_EQ(&Kernels(), expected);
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, VectorKernelsTest, ::testing::Values(Isa::kBaseline, Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(IsaName(info.param)); });

}  // namespace
}  // namespace onnxserve::vec
