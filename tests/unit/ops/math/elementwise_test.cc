// Elementwise op families (unary.cc, activation.cc, binary.cc, logical.cc, variadic.cc): broadcasting
// against a plain reference, version differences and integer semantics.
#include <cmath>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/common.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor RandomFloats(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> values(static_cast<size_t>(NumElements(shape)));
  for (float& v : values) v = dist(rng);
  return Tensor::FromVector<float>(shape, values);
}

// Reference numpy broadcasting: walks every output index and maps it into each input by hand.
Tensor ReferenceBinary(const Tensor& a, const Tensor& b, float (*f)(float, float)) {
  const Shape out_shape = BroadcastShapes(a.shape(), b.shape()).value();
  Tensor out(DataType::kFloat, out_shape);
  const size_t rank = out_shape.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    int64_t rem = i;
    for (size_t d = rank; d-- > 0;) {
      index[d] = rem % out_shape[d];
      rem /= out_shape[d];
    }
    auto offset = [&](const Tensor& t) {
      int64_t off = 0;
      const size_t lead = rank - t.shape().size();
      for (size_t d = 0; d < t.shape().size(); ++d) {
        off = off * t.shape()[d] + (t.shape()[d] == 1 ? 0 : index[lead + d]);
      }
      return off;
    };
    out.data<float>()[i] = f(a.data<float>()[offset(a)], b.data<float>()[offset(b)]);
  }
  return out;
}

Tensor RunOne(OpTest test) {
  auto result = test.Output("out").Run();
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? (*result)[0] : Tensor();
}

absl::Status RunStatus(OpTest test) { return test.Output("out").Run().status(); }

TEST(BroadcastTest, MatchesReferenceOnShapePairs) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{}, {}},              {{}, {3, 4}},         {{3, 4}, {}},          {{4}, {3, 4}},
      {{3, 4}, {4}},         {{3, 1}, {1, 4}},     {{2, 3, 4}, {3, 1}},   {{2, 1, 4}, {1, 3, 1}},
      {{1}, {5}},            {{5, 1, 1}, {1, 1}},  {{2, 3, 1, 5}, {3, 4, 1}}, {{0, 3}, {3}},
      {{300, 257}, {257}},   {{257, 300}, {257, 1}}, {{64, 1024}, {64, 1024}},
      {{2, 3, 7, 7}, {3, 1, 1}}, {{3, 1, 1}, {1, 3, 5, 13}}};  // NCHW per-channel bias and scale
  const std::vector<std::pair<const char*, float (*)(float, float)>> ops = {
      {"Add", [](float x, float y) { return x + y; }},
      {"Sub", [](float x, float y) { return x - y; }},
      {"Mul", [](float x, float y) { return x * y; }},
      {"Div", [](float x, float y) { return x / y; }}};
  std::mt19937 rng(7);
  for (const auto& [op, f] : ops) {
    for (const auto& [sa, sb] : cases) {
      const Tensor a = RandomFloats(sa, rng);
      const Tensor b = RandomFloats(sb, rng);
      const Tensor expected = ReferenceBinary(a, b, f);
      const Tensor actual = RunOne(OpTest(op, 14).Input("a", a).Input("b", b));
      EXPECT_TRUE(TensorsClose(expected, actual, 0, 0)) << op << " " << ShapeToString(sa) << ", " << ShapeToString(sb);
    }
  }
}

// The float activations (vectorized per ISA) against their formulas evaluated in double, over values
// from -12 to 12 and an odd length (a partial last vector), with a float-accuracy tolerance.
TEST(ActivationTest, FloatActivationsMatchTheirFormulasInDouble) {
  std::vector<float> values;
  for (int i = 0; i < 4801; ++i) values.push_back(-12.0f + 0.005f * static_cast<float>(i));
  const Tensor x = Tensor::FromVector<float>({static_cast<int64_t>(values.size())}, values);
  const double k = std::sqrt(2 / 3.14159265358979323846);
  struct Case {
    OpTest test;  // X is added as the node's first input
    std::function<double(double)> reference;
    // For formulas that cancel in float: Gelu for x << 0 (1 + erf(x) ~ 0), alpha x + beta near 0.
    double atol;
  };
  const std::vector<Case> cases = {
      {OpTest("Relu", 14), [](double v) { return v < 0 ? 0 : v; }, 0},
      {OpTest("LeakyRelu", 16).Attr("alpha", 0.1f), [](double v) { return v < 0 ? 0.1f * v : v; }, 0},
      {OpTest("Sigmoid", 13), [](double v) { return 1 / (1 + std::exp(-v)); }, 0},
      {OpTest("Tanh", 13), [](double v) { return std::tanh(v); }, 0},
      {OpTest("Exp", 13), [](double v) { return std::exp(v); }, 0},
      {OpTest("Erf", 13), [](double v) { return std::erf(v); }, 0},
      {OpTest("Sqrt", 13), [](double v) { return std::sqrt(v); }, 0},
      {OpTest("HardSigmoid", 22).Attr("alpha", 0.3f).Attr("beta", 0.4f),
       [](double v) { return std::clamp(0.3f * v + 0.4f, 0.0, 1.0); }, 3e-7},
      // x / 6 + 1/2 cancels near x = -3 in any float evaluation: an absolute error of a few 1e-8 * |x|.
      {OpTest("HardSwish", 22), [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }, 3e-7},
      {OpTest("Gelu", 20), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, 2e-6},
      {OpTest("Gelu", 20).Attr("approximate", std::string("tanh")),
       [k](double v) { return 0.5 * v * (1 + std::tanh(k * (v + 0.044715 * v * v * v))); }, 2e-6},
      {OpTest("Clip", 6).Attr("min", -1.5f).Attr("max", 2.5f), [](double v) { return std::clamp(v, -1.5, 2.5); }, 0},
  };
  for (const Case& c : cases) {
    Tensor expected(DataType::kFloat, x.shape());
    for (size_t i = 0; i < values.size(); ++i) expected.data<float>()[i] = static_cast<float>(c.reference(values[i]));
    const Tensor actual = RunOne(OpTest(c.test).Input("x", x));
    EXPECT_TRUE(TensorsClose(expected, actual, 2e-6, c.atol)) << c.test.BuildModel().graph().node(0).op_type();
  }
}

TEST(BroadcastTest, IncompatibleShapesAreRejected) {
  const absl::Status status = RunStatus(OpTest("Add", 14)
                                            .Input("a", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
                                            .Input("b", Tensor::FromVector<float>({2}, {1, 2})));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

TEST(BroadcastTest, MixedElementTypesAreRejected) {
  const absl::Status status =
      RunStatus(OpTest("Mul", 14).Input("a", Tensor::Scalar(1.0f)).Input("b", Tensor::Scalar(int32_t{2})));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

// Add-6 and older: B lines up with A at `axis` when broadcast=1, and must equal A's shape otherwise.
TEST(LegacyBroadcastTest, AxisAlignsBWithA) {
  const Tensor a = Tensor::FromVector<float>({2, 3}, {0, 0, 0, 10, 10, 10});
  const Tensor actual = RunOne(OpTest("Add", 6)
                                   .Input("a", a)
                                   .Input("b", Tensor::FromVector<float>({2}, {1, 2}))
                                   .Attr("broadcast", int64_t{1})
                                   .Attr("axis", int64_t{0}));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {1, 1, 1, 12, 12, 12}), actual));
}

TEST(LegacyBroadcastTest, DefaultAlignsTrailingDims) {
  const Tensor actual = RunOne(OpTest("Mul", 1)
                                   .Input("a", Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}))
                                   .Input("b", Tensor::FromVector<float>({2}, {10, 100}))
                                   .Attr("broadcast", int64_t{1}));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {10, 200, 30, 400}), actual));
}

TEST(LegacyBroadcastTest, WithoutBroadcastShapesMustMatch) {
  const OpTest test = OpTest("Add", 6)
                          .Input("a", Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}))
                          .Input("b", Tensor::FromVector<float>({2}, {1, 2}));
  EXPECT_EQ(RunStatus(test).code(), absl::StatusCode::kInvalidArgument);
  // The same model at opset 7 broadcasts numpy-style.
  const Tensor actual = RunOne(OpTest("Add", 7)
                                   .Input("a", Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}))
                                   .Input("b", Tensor::FromVector<float>({2}, {1, 2})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {2, 4, 4, 6}), actual));
}

TEST(IntegerArithmeticTest, DivTruncatesTowardZero) {
  const Tensor actual = RunOne(OpTest("Div", 14)
                                   .Input("a", Tensor::FromVector<int32_t>({4}, {7, -7, 7, -7}))
                                   .Input("b", Tensor::FromVector<int32_t>({4}, {2, 2, -2, -2})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({4}, {3, -3, -3, 3}), actual));
}

TEST(IntegerArithmeticTest, DivByZeroIsAnErrorAndMinOverMinusOneWraps) {
  EXPECT_EQ(RunStatus(OpTest("Div", 14)
                          .Input("a", Tensor::FromVector<int64_t>({2}, {1, 2}))
                          .Input("b", Tensor::FromVector<int64_t>({2}, {1, 0})))
                .code(),
            absl::StatusCode::kInvalidArgument);
  const int32_t min = std::numeric_limits<int32_t>::min();
  const Tensor actual =
      RunOne(OpTest("Div", 14).Input("a", Tensor::Scalar(min)).Input("b", Tensor::Scalar(int32_t{-1})));
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(min), actual));
}

TEST(IntegerArithmeticTest, AddWrapsAround) {
  const Tensor actual = RunOne(OpTest("Add", 14)
                                   .Input("a", Tensor::FromVector<int8_t>({2}, {127, -128}))
                                   .Input("b", Tensor::FromVector<int8_t>({2}, {1, -1})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({2}, {-128, 127}), actual));
}

TEST(ModTest, IntegerModFollowsTheDivisorsSign) {
  const Tensor actual = RunOne(OpTest("Mod", 13)
                                   .Input("a", Tensor::FromVector<int32_t>({4}, {-7, 7, -7, 6}))
                                   .Input("b", Tensor::FromVector<int32_t>({4}, {3, -3, -3, 3})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({4}, {2, -2, -1, 0}), actual));
}

TEST(ModTest, FmodFollowsTheDividendsSign) {
  const Tensor ints = RunOne(OpTest("Mod", 13)
                                 .Input("a", Tensor::FromVector<int32_t>({2}, {-7, 7}))
                                 .Input("b", Tensor::FromVector<int32_t>({2}, {3, -3}))
                                 .Attr("fmod", int64_t{1}));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2}, {-1, 1}), ints));
  const Tensor floats = RunOne(OpTest("Mod", 13)
                                   .Input("a", Tensor::FromVector<float>({2}, {-7.5f, 7.5f}))
                                   .Input("b", Tensor::Scalar(2.0f))
                                   .Attr("fmod", int64_t{1}));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {-1.5f, 1.5f}), floats));
}

TEST(ModTest, FloatsRequireFmodAndIntegersANonzeroDivisor) {
  EXPECT_EQ(RunStatus(OpTest("Mod", 13).Input("a", Tensor::Scalar(1.0f)).Input("b", Tensor::Scalar(2.0f)))
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunStatus(OpTest("Mod", 13)
                          .Input("a", Tensor::Scalar(uint8_t{1}))
                          .Input("b", Tensor::Scalar(uint8_t{0})))
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PowTest, ExponentTypeMayDifferFromTheBase) {
  const Tensor float_base = RunOne(OpTest("Pow", 15)
                                       .Input("x", Tensor::FromVector<float>({3}, {2, 3, 0.5f}))
                                       .Input("y", Tensor::FromVector<int64_t>({3}, {3, 2, -1})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {8, 9, 2}), float_base));
  // numpy: power(int, float) then astype(int) truncates.
  const Tensor int_base = RunOne(OpTest("Pow", 15)
                                     .Input("x", Tensor::FromVector<int32_t>({2}, {2, 10}))
                                     .Input("y", Tensor::Scalar(0.5f)));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2}, {1, 3}), int_base));
}

// Found by the model fuzzer (UBSan): an integer base with a float exponent converted an infinite or NaN
// power to int. Out of range saturates, NaN (a negative base to a fractional power) becomes 0.
TEST(PowTest, FloatPowersOutOfAnIntegerBaseRangeSaturate) {
  const Tensor actual = RunOne(OpTest("Pow", 15)
                                   .Input("x", Tensor::FromVector<int32_t>({4}, {10, -10, -8, 0}))
                                   .Input("y", Tensor::FromVector<float>({4}, {30.0f, 31.0f, 0.5f, -1.0f})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({4}, {std::numeric_limits<int32_t>::max(),
                                                             std::numeric_limits<int32_t>::min(), 0,
                                                             std::numeric_limits<int32_t>::max()}),
                           actual));
}

TEST(PowTest, IntegerPowersAreExact) {
  const Tensor actual = RunOne(OpTest("Pow", 15)
                                   .Input("x", Tensor::FromVector<int64_t>({4}, {3, -2, 2, -1}))
                                   .Input("y", Tensor::FromVector<int64_t>({4}, {39, 3, -1, -3})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({4}, {4052555153018976267LL, -8, 0, -1}), actual));
}

TEST(PowTest, SquareOfABroadcastScalar) {
  const Tensor actual = RunOne(OpTest("Pow", 15)
                                   .Input("x", Tensor::FromVector<float>({3}, {-3, 0.5f, kInf}))
                                   .Input("y", Tensor::FromVector<float>({1}, {2})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {9, 0.25f, kInf}), actual));
}

TEST(BitShiftTest, ShiftsBothWaysAndPastTheWidthGivesZero) {
  const Tensor left = RunOne(OpTest("BitShift", 11)
                                 .Input("x", Tensor::FromVector<uint8_t>({3}, {1, 3, 255}))
                                 .Input("y", Tensor::FromVector<uint8_t>({3}, {7, 1, 8}))
                                 .Attr("direction", std::string("LEFT")));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint8_t>({3}, {128, 6, 0}), left));
  const Tensor right = RunOne(OpTest("BitShift", 11)
                                  .Input("x", Tensor::FromVector<uint32_t>({2}, {16, 0xffffffffu}))
                                  .Input("y", Tensor::Scalar(uint32_t{4}))
                                  .Attr("direction", std::string("RIGHT")));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint32_t>({2}, {1, 0x0fffffffu}), right));
  EXPECT_EQ(RunStatus(OpTest("BitShift", 11)
                          .Input("x", Tensor::Scalar(uint8_t{1}))
                          .Input("y", Tensor::Scalar(uint8_t{1}))
                          .Attr("direction", std::string("UP")))
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LogicalTest, ComparisonsYieldBoolAndBroadcast) {
  const Tensor actual = RunOne(OpTest("LessOrEqual", 16)
                                   .Input("a", Tensor::FromVector<int32_t>({2, 2}, {1, 2, 3, 4}))
                                   .Input("b", Tensor::FromVector<int32_t>({2, 1}, {2, 3})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({2, 2}, {true, true, true, false}), actual));
}

TEST(LogicalTest, EqualComparesStrings) {
  const Tensor actual = RunOne(OpTest("Equal", 19)
                                   .Input("a", Tensor::FromVector<std::string>({3}, {"a", "bc", ""}))
                                   .Input("b", Tensor::Scalar(std::string("bc"))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({3}, {false, true, false}), actual));
}

TEST(LogicalTest, XorAndNot) {
  const Tensor x = RunOne(OpTest("Xor", 7)
                              .Input("a", Tensor::FromVector<bool>({4}, {false, false, true, true}))
                              .Input("b", Tensor::FromVector<bool>({4}, {false, true, false, true})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({4}, {false, true, true, false}), x));
  const Tensor n = RunOne(OpTest("Not", 1).Input("x", Tensor::FromVector<bool>({2}, {false, true})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({2}, {true, false}), n));
}

TEST(LogicalTest, BitwiseOpsOnSignedIntegers) {
  const Tensor actual = RunOne(OpTest("BitwiseAnd", 18)
                                   .Input("a", Tensor::FromVector<int16_t>({2}, {-1, 12}))
                                   .Input("b", Tensor::Scalar(int16_t{10})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int16_t>({2}, {10, 8}), actual));
  const Tensor inverted = RunOne(OpTest("BitwiseNot", 18).Input("x", Tensor::FromVector<int8_t>({2}, {0, -1})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({2}, {-1, 0}), inverted));
}

TEST(UnaryTest, RoundsHalfToEven) {
  const Tensor actual =
      RunOne(OpTest("Round", 22).Input("x", Tensor::FromVector<float>({5}, {0.5f, 1.5f, 2.5f, -2.5f, 2.6f})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({5}, {0, 2, 2, -2, 3}), actual));
}

TEST(UnaryTest, SignAbsNegOnIntegers) {
  const int32_t min = std::numeric_limits<int32_t>::min();
  const Tensor x = Tensor::FromVector<int32_t>({3}, {-5, 0, min});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({3}, {-1, 0, -1}), RunOne(OpTest("Sign", 13).Input("x", x))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({3}, {5, 0, min}), RunOne(OpTest("Abs", 13).Input("x", x))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({3}, {5, 0, min}), RunOne(OpTest("Neg", 13).Input("x", x))));
}

TEST(UnaryTest, IsInfHonoursDetectFlagsAndIsNaN) {
  const Tensor x = Tensor::FromVector<float>({4}, {kInf, -kInf, kNaN, 1});
  const Tensor negative_only =
      RunOne(OpTest("IsInf", 20).Input("x", x).Attr("detect_positive", int64_t{0}));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({4}, {false, true, false, false}), negative_only));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({4}, {false, false, true, false}),
                           RunOne(OpTest("IsNaN", 20).Input("x", x))));
}

TEST(UnaryTest, HalfTypesComputeInFloat) {
  const Tensor x = Tensor::FromVector<Float16>({2}, {Float16(1.0f), Float16(-2.0f)});
  const Tensor actual = RunOne(OpTest("Exp", 13).Input("x", x));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<Float16>({2}, {Float16(std::exp(1.0f)), Float16(std::exp(-2.0f))}),
                           actual));
}

TEST(ActivationTest, ReluAcceptsIntegersFromVersion14Only) {
  const Tensor x = Tensor::FromVector<int32_t>({3}, {-3, 0, 4});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({3}, {0, 0, 4}), RunOne(OpTest("Relu", 14).Input("x", x))));
  EXPECT_EQ(RunStatus(OpTest("Relu", 13).Input("x", x)).code(), absl::StatusCode::kUnimplemented);
}

TEST(ActivationTest, AttributesAndDefaults) {
  const Tensor x = Tensor::FromVector<float>({3}, {-2, 0, 3});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {-0.02f, 0, 3}), RunOne(OpTest("LeakyRelu", 16).Input("x", x))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {0.1f, 0.5f, 1}),
                           RunOne(OpTest("HardSigmoid", 6).Input("x", x))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {0, 0, 3}),
                           RunOne(OpTest("ThresholdedRelu", 10).Input("x", x).Attr("alpha", 2.0f))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {2 * std::expm1(-2.0f), 0, 3}),
                           RunOne(OpTest("Elu", 6).Input("x", x).Attr("alpha", 2.0f))));
}

TEST(ActivationTest, SigmoidAndSoftplusStayFiniteAtExtremes) {
  const Tensor x = Tensor::FromVector<float>({3}, {-1000, 0, 1000});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {0, 0.5f, 1}), RunOne(OpTest("Sigmoid", 13).Input("x", x))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {0, std::log(2.0f), 1000}),
                           RunOne(OpTest("Softplus", 22).Input("x", x))));
}

TEST(ActivationTest, GeluExactAndTanhApproximation) {
  const Tensor x = Tensor::FromVector<float>({2}, {-1, 1});
  // 0.5 x (1 + erf(x / sqrt 2)) and 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) at x = +/-1.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {-0.15865525f, 0.84134475f}),
                           RunOne(OpTest("Gelu", 20).Input("x", x)), 1e-5));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {-0.15880801f, 0.84119199f}),
                           RunOne(OpTest("Gelu", 20).Input("x", x).Attr("approximate", std::string("tanh"))), 1e-5));
  EXPECT_EQ(RunStatus(OpTest("Gelu", 20).Input("x", x).Attr("approximate", std::string("fast"))).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ActivationTest, PReluBroadcastsTheSlopeOntoXOnly) {
  const Tensor x = Tensor::FromVector<float>({2, 2}, {-1, 2, -3, 4});
  const Tensor actual = RunOne(OpTest("PRelu", 16).Input("x", x).Input("slope", Tensor::FromVector<float>({2}, {0.5f, 2})));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {-0.5f, 2, -1.5f, 4}), actual));
  EXPECT_EQ(RunStatus(OpTest("PRelu", 16).Input("x", Tensor::FromVector<float>({2}, {1, 2})).Input("slope", x)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(VariadicTest, FoldsManyInputsWithBroadcasting) {
  const Tensor a = Tensor::FromVector<float>({2, 1}, {1, 2});
  const Tensor b = Tensor::FromVector<float>({3}, {10, 20, 30});
  const Tensor c = Tensor::Scalar(100.0f);
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {111, 121, 131, 112, 122, 132}),
                           RunOne(OpTest("Sum", 13).Input("a", a).Input("b", b).Input("c", c))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {37, 121.0f / 3, 131.0f / 3, 112.0f / 3, 122.0f / 3, 44}),
                           RunOne(OpTest("Mean", 13).Input("a", a).Input("b", b).Input("c", c))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {1, 1, 1, 2, 2, 2}),
                           RunOne(OpTest("Min", 13).Input("a", a).Input("b", b).Input("c", c))));
}

TEST(VariadicTest, MaxPropagatesNaNAndTakesIntegers) {
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {kNaN, kNaN}),
                           RunOne(OpTest("Max", 13)
                                      .Input("a", Tensor::FromVector<float>({2}, {kNaN, 1}))
                                      .Input("b", Tensor::FromVector<float>({2}, {1, kNaN})))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<uint64_t>({2}, {5, 9}),
                           RunOne(OpTest("Max", 12)
                                      .Input("a", Tensor::FromVector<uint64_t>({2}, {5, 1}))
                                      .Input("b", Tensor::Scalar(uint64_t{2}))
                                      .Input("c", Tensor::FromVector<uint64_t>({2}, {0, 9})))));
}

TEST(WhereTest, BroadcastsConditionAndBranchesOfAnyType) {
  const Tensor actual = RunOne(OpTest("Where", 16)
                                   .Input("c", Tensor::FromVector<bool>({2, 1}, {true, false}))
                                   .Input("x", Tensor::FromVector<std::string>({2}, {"a", "b"}))
                                   .Input("y", Tensor::Scalar(std::string("-"))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2, 2}, {"a", "b", "-", "-"}), actual));
}

TEST(ClipTest, Version6TakesAttributes) {
  const Tensor x = Tensor::FromVector<float>({4}, {-5, 0, 5, kInf});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({4}, {-1, 0, 2, 2}),
                           RunOne(OpTest("Clip", 6).Input("x", x).Attr("min", -1.0f).Attr("max", 2.0f))));
  // Clip-6's documented default max is 3.402823e+38, so +inf is clipped to it.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({4}, {-1, 0, 5, std::numeric_limits<float>::max()}),
                           RunOne(OpTest("Clip", 6).Input("x", x).Attr("min", -1.0f))));
}

TEST(ClipTest, Version11TakesOptionalInputs) {
  const Tensor x = Tensor::FromVector<float>({3}, {-5, 0, 5});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {-5, 0, 1}),
                           RunOne(OpTest("Clip", 11).Input("x", x).NoInput().Input("max", Tensor::Scalar(1.0f)))));
  // min > max: every element becomes max.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {1, 1, 1}),
                           RunOne(OpTest("Clip", 13).Input("x", x).Input("min", Tensor::Scalar(2.0f))
                                      .Input("max", Tensor::Scalar(1.0f)))));
  // Attributes are not read from Clip-11 on.
  EXPECT_TRUE(TensorsClose(x, RunOne(OpTest("Clip", 11).Input("x", x).Attr("min", 1.0f))));
}

// Clip-11+ documents omitted bounds as numeric_limits<T>::lowest() and max(): infinities come out finite.
TEST(ClipTest, OmittedBoundsAreTheTypesLowestAndMax) {
  const Tensor x = Tensor::FromVector<float>({3}, {-kInf, 1.5f, kInf});
  constexpr float kMax = std::numeric_limits<float>::max();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {-kMax, 1.5f, kMax}),
                           RunOne(OpTest("Clip", 13).Input("x", x))));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {-kMax, 1, 1}),
                           RunOne(OpTest("Clip", 11).Input("x", x).NoInput().Input("max", Tensor::Scalar(1.0f)))));
  constexpr double kInfD = std::numeric_limits<double>::infinity(), kMaxD = std::numeric_limits<double>::max();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({2}, {-kMaxD, kMaxD}),
                           RunOne(OpTest("Clip", 13).Input("x", Tensor::FromVector<double>({2}, {-kInfD, kInfD})))));
  // float16's largest finite value is 65504 (bits 0x7BFF).
  const Tensor half = Tensor::FromVector<Float16>({2}, {Float16(-kInf), Float16(kInf)});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<Float16>({2}, {Float16(-65504.0f), Float16(65504.0f)}),
                           RunOne(OpTest("Clip", 13).Input("x", half))));
}

TEST(ClipTest, IntegersFromVersion12) {
  const Tensor x = Tensor::FromVector<int8_t>({3}, {-128, 0, 127});
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int8_t>({3}, {-10, 0, 127}),
                           RunOne(OpTest("Clip", 12).Input("x", x).Input("min", Tensor::Scalar(int8_t{-10})))));
  EXPECT_EQ(RunStatus(OpTest("Clip", 12).Input("x", x).Input("min", Tensor::Scalar(1.0f))).code(),
            absl::StatusCode::kInvalidArgument);
}

// A string's characters are not in a tensor's byte size: one 4 KiB string broadcast to 512 elements is 2 MiB
// of characters, past the 1 MiB limit.
TEST(WhereTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("Where", 16)
                 .Input("c", Tensor::FromVector<bool>({512}, std::vector<bool>(512, true)))
                 .Input("x", Tensor::Scalar(std::string(4096, 'a')))
                 .Input("y", Tensor::Scalar(std::string()))
                 .Output("z")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve
