#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor Axes(const std::vector<int64_t>& axes) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(axes.size())}, axes);
}

// Runs a one-output reduction; axes go in as an attribute (opset < 18) unless `axes_input` is set.
absl::StatusOr<Tensor> Reduce(const std::string& op, int opset, const Tensor& x, const std::vector<int64_t>& axes,
                              int64_t keepdims = 1, bool axes_input = false) {
  OpTest test(op, opset);
  test.Input("x", x).Attr("keepdims", keepdims).Output("y");
  if (axes_input) {
    test.Input("axes", Axes(axes));
  } else if (!axes.empty()) {
    test.Attr("axes", axes);
  }
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// Plain reference: every input element adds to the output element with the reduced coordinates zeroed
// (keepdims layout), in double. `finish(acc, count)` turns the accumulated value into the result.
Tensor ReferenceReduce(const Tensor& x, const std::vector<bool>& reduced, double init,
                       const std::function<double(double, double)>& add,
                       const std::function<double(double, int64_t)>& finish) {
  Shape out_shape = x.shape();
  int64_t count = 1;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (reduced[d]) {
      count *= out_shape[d];
      out_shape[d] = 1;
    }
  }
  std::vector<double> acc(static_cast<size_t>(NumElements(out_shape)), init);
  const auto in_values = x.values<float>();
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    int64_t rest = i, out_index = 0, out_stride = 1;
    for (int64_t d = x.rank() - 1; d >= 0; --d) {
      const int64_t coord = rest % x.dim(d);
      rest /= x.dim(d);
      out_index += (reduced[d] ? 0 : coord) * out_stride;
      out_stride *= out_shape[d];
    }
    acc[out_index] = add(acc[out_index], in_values[i]);
  }
  std::vector<float> out;
  for (double a : acc) out.push_back(static_cast<float>(finish(a, count)));
  return Floats(out_shape, out);
}

Tensor RandomFloats(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(0.5f, 2.0f);  // positive so ReduceLogSum is defined
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (float& f : v) f = dist(rng);
  return Floats(shape, v);
}

struct ReferenceOp {
  std::string name;
  double init;
  std::function<double(double, double)> add;
  std::function<double(double, int64_t)> finish;
};

std::vector<ReferenceOp> ReferenceOps() {
  auto same = [](double a, int64_t) { return a; };
  auto sum = [](double a, double x) { return a + x; };
  return {
      {"ReduceSum", 0, sum, same},
      {"ReduceMean", 0, sum, [](double a, int64_t n) { return a / static_cast<double>(n); }},
      {"ReduceMax", -INFINITY, [](double a, double x) { return std::max(a, x); }, same},
      {"ReduceMin", INFINITY, [](double a, double x) { return std::min(a, x); }, same},
      {"ReduceProd", 1, [](double a, double x) { return a * x; }, same},
      {"ReduceL1", 0, [](double a, double x) { return a + std::abs(x); }, same},
      {"ReduceL2", 0, [](double a, double x) { return a + x * x; }, [](double a, int64_t) { return std::sqrt(a); }},
      {"ReduceSumSquare", 0, [](double a, double x) { return a + x * x; }, same},
      {"ReduceLogSum", 0, sum, [](double a, int64_t) { return std::log(a); }},
      {"ReduceLogSumExp", 0, [](double a, double x) { return a + std::exp(x); },
       [](double a, int64_t) { return std::log(a); }},
  };
}

// Every op (axes as the opset-18 input) over every subset of axes of rank-3 and rank-4 shapes (inner spans, outer rows, mixed).
TEST(ReduceTest, MatchesReferenceOnEveryAxisSubset) {
  std::mt19937 rng(7);
  for (const Shape& shape : {Shape{2, 3, 5, 7}, Shape{4, 1, 300}, Shape{3, 260, 2}}) {
    const Tensor x = RandomFloats(shape, rng);
    const int64_t rank = static_cast<int64_t>(shape.size());
    for (int64_t mask = 1; mask < (1 << rank); ++mask) {
      std::vector<int64_t> axes;
      std::vector<bool> reduced(rank);
      for (int64_t d = 0; d < rank; ++d) {
        reduced[d] = (mask >> d) & 1;
        if (reduced[d]) axes.push_back(d);
      }
      for (const ReferenceOp& op : ReferenceOps()) {
        const Tensor expected = ReferenceReduce(x, reduced, op.init, op.add, op.finish);
        auto y = Reduce(op.name, 18, x, axes, 1, /*axes_input=*/true);
        ASSERT_TRUE(y.ok()) << op.name << ": " << y.status();
        EXPECT_TRUE(TensorsClose(expected, *y, 1e-4, 1e-5)) << op.name << " over mask " << mask << " of "
                                                             << ShapeToString(shape);
      }
    }
  }
}

TEST(ReduceTest, ReduceMeanOverHeightAndWidthOfNchw) {
  // 1x2x2x2: channel 0 holds 1..4 (mean 2.5), channel 1 holds 10,20,30,40 (mean 25).
  const Tensor x = Floats({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  auto y = Reduce("ReduceMean", 13, x, {2, 3});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 2, 1, 1}, {2.5f, 25}), *y));
}

TEST(ReduceTest, KeepdimsZeroDropsTheReducedAxesAndNegativeAxesCountFromTheEnd) {
  const Tensor x = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  auto y = Reduce("ReduceSum", 11, x, {-1}, /*keepdims=*/0);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {6, 15}), *y));
}

TEST(ReduceTest, NoAxesReducesEverything) {
  auto y = Reduce("ReduceMax", 13, Floats({2, 2}, {1, 7, 3, 4}), {});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1}, {7}), *y));
}

TEST(ReduceTest, AxesComeFromTheInputInReduceSum13AndEveryReduce18) {
  const Tensor x = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  auto sum = Reduce("ReduceSum", 13, x, {0}, 1, /*axes_input=*/true);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 3}, {5, 7, 9}), *sum));
  auto prod = Reduce("ReduceProd", 18, x, {1}, 0, /*axes_input=*/true);
  ASSERT_TRUE(prod.ok()) << prod.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {6, 120}), *prod));
}

TEST(ReduceTest, NoopWithEmptyAxesKeepsTheNonReductionStep) {
  // The spec: ReduceSumSquare returns the square of the input, ReduceLogSum its log.
  const Tensor x = Floats({3}, {1, 2, 4});
  auto square = OpTest("ReduceSumSquare", 18).Input("x", x).Attr("noop_with_empty_axes", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(square.ok()) << square.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {1, 4, 16}), (*square)[0]));
  auto log = OpTest("ReduceLogSum", 18).Input("x", x).Input("axes", Axes({})).Attr("noop_with_empty_axes", int64_t{1})
                 .Output("y").Run();
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {0, std::log(2.0f), std::log(4.0f)}), (*log)[0]));
}

TEST(ReduceTest, EmptyInputsReduceToTheIdentityOfEachOp) {
  const Tensor empty = Floats({0, 2}, {});
  const std::vector<std::pair<std::string, float>> identities = {
      {"ReduceSum", 0},           {"ReduceProd", 1},      {"ReduceMax", -kInf}, {"ReduceMin", kInf},
      {"ReduceLogSumExp", -kInf}, {"ReduceLogSum", -kInf}, {"ReduceL1", 0},      {"ReduceL2", 0},
      {"ReduceSumSquare", 0}};
  for (const auto& [op, identity] : identities) {
    auto y = Reduce(op, 18, empty, {0}, 1, /*axes_input=*/true);
    ASSERT_TRUE(y.ok()) << op << ": " << y.status();
    EXPECT_TRUE(TensorsClose(Floats({1, 2}, {identity, identity}), *y)) << op;
  }
  auto ints = Reduce("ReduceMax", 13, Tensor::FromVector<int32_t>({0}, {}), {0}, 0);
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ(ints->values<int32_t>()[0], std::numeric_limits<int32_t>::lowest());
}

TEST(ReduceTest, EmptyOutputWhenAKeptAxisIsZero) {
  auto y = Reduce("ReduceSum", 13, Floats({0, 3}, {}), {1}, 1, /*axes_input=*/true);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0, 1}));
}

TEST(ReduceTest, LogSumExpDoesNotOverflowOnLargeInputs) {
  auto y = Reduce("ReduceLogSumExp", 13, Floats({2}, {1000, 1000}), {0}, 0);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(1000 + std::log(2.0f)), *y));
}

TEST(ReduceTest, MaxPropagatesNan) {
  auto y = Reduce("ReduceMax", 13, Floats({3}, {1, NAN, 2}), {0}, 0);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(std::isnan(y->values<float>()[0]));
}

TEST(ReduceTest, MaxAndMinTakeInt8From12AndBoolFrom20) {
  auto i8 = Reduce("ReduceMin", 12, Tensor::FromVector<int8_t>({3}, {5, -7, 3}), {0}, 0);
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_EQ(i8->values<int8_t>()[0], -7);
  const Tensor b = Tensor::FromVector<bool>({2, 2}, {true, false, true, true});
  auto any = Reduce("ReduceMax", 20, b, {1}, 0, /*axes_input=*/true);
  auto all = Reduce("ReduceMin", 20, b, {1}, 0, /*axes_input=*/true);
  ASSERT_TRUE(any.ok() && all.ok());
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({2}, {true, true}), *any));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<bool>({2}, {false, true}), *all));
}

TEST(ReduceTest, IntegerAndHalfTypes) {
  auto i64 = Reduce("ReduceSum", 13, Tensor::FromVector<int64_t>({2, 2}, {1, 2, 3, 4}), {0}, 0, true);
  ASSERT_TRUE(i64.ok()) << i64.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2}, {4, 6}), *i64));
  auto half = Reduce("ReduceMean", 13, Tensor::FromVector<Float16>({4}, {Float16(1), Float16(2), Float16(3), Float16(6)}),
                     {0}, 0);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(Float16(3)), *half));
}

TEST(ReduceTest, RejectsRepeatedAndOutOfRangeAxes) {
  const Tensor x = Floats({2, 2}, {1, 2, 3, 4});
  auto repeated = Reduce("ReduceSum", 11, x, {1, -1});
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.status().message().find("repeated"), std::string::npos) << repeated.status();
  EXPECT_FALSE(Reduce("ReduceMean", 11, x, {2}).ok());
}

}  // namespace
}  // namespace onnxserve

namespace onnxserve {
namespace {

// Found by the model fuzzer: ReduceLogSum of int64 values summing to a negative number took the log of
// it and converted the NaN to int64 (undefined behaviour). NaN now becomes 0 and -inf saturates.
TEST(ReduceTest, IntegerLogReductionsOfNegativeOrEmptySumsAreDefined) {
  auto negative = testing::OpTest("ReduceLogSum", 13)
                      .Input("x", Tensor::FromVector<int64_t>({2}, {-5, 2}))
                      .Attr("keepdims", int64_t{0})
                      .Output("y")
                      .Run();
  ASSERT_TRUE(negative.ok()) << negative.status();
  EXPECT_EQ((*negative)[0].data<int64_t>()[0], 0);
  auto zero = testing::OpTest("ReduceLogSum", 13)
                  .Input("x", Tensor::FromVector<int64_t>({2}, {-2, 2}))
                  .Attr("keepdims", int64_t{0})
                  .Output("y")
                  .Run();
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ((*zero)[0].data<int64_t>()[0], std::numeric_limits<int64_t>::min());
}

}  // namespace
}  // namespace onnxserve
