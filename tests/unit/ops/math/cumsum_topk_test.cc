#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/tensor.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor Indices(Shape shape, const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(std::move(shape), v);
}

absl::StatusOr<Tensor> CumSum(const Tensor& x, const Tensor& axis, int64_t exclusive = 0, int64_t reverse = 0) {
  auto out = OpTest("CumSum", 14)
                 .Input("x", x)
                 .Input("axis", axis)
                 .Attr("exclusive", exclusive)
                 .Attr("reverse", reverse)
                 .Output("y")
                 .Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// The spec's examples on [1, 2, 3, 4, 5].
TEST(CumSumTest, ExclusiveAndReverse) {
  const Tensor x = Floats({5}, {1, 2, 3, 4, 5});
  const Tensor axis = Tensor::Scalar(int32_t{0});
  const std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<float>>> cases = {
      {{0, 0}, {1, 3, 6, 10, 15}},
      {{1, 0}, {0, 1, 3, 6, 10}},
      {{0, 1}, {15, 14, 12, 9, 5}},
      {{1, 1}, {14, 12, 9, 5, 0}}};
  for (const auto& [flags, expected] : cases) {
    auto y = CumSum(x, axis, flags.first, flags.second);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(TensorsClose(Floats({5}, expected), *y))
        << "exclusive " << flags.first << " reverse " << flags.second;
  }
}

TEST(CumSumTest, AlongEitherAxisOfAMatrix) {
  const Tensor x = Tensor::FromVector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto rows = CumSum(x, Tensor::Scalar(int64_t{0}));
  auto cols = CumSum(x, Tensor::FromVector<int64_t>({1}, {-1}));
  ASSERT_TRUE(rows.ok() && cols.ok());
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2, 3}, {1, 2, 3, 5, 7, 9}), *rows));
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2, 3}, {1, 3, 6, 4, 9, 15}), *cols));
}

TEST(CumSumTest, RejectsAnAxisThatIsNotOneInteger) {
  EXPECT_FALSE(CumSum(Floats({2}, {1, 2}), Tensor::FromVector<int64_t>({2}, {0, 0})).ok());
  EXPECT_FALSE(CumSum(Floats({2}, {1, 2}), Tensor::Scalar(int64_t{1})).ok());
}

absl::StatusOr<std::vector<Tensor>> TopK(const Tensor& x, int64_t k, int64_t axis = -1, int64_t largest = 1) {
  return OpTest("TopK", 11)
      .Input("x", x)
      .Input("k", Tensor::FromVector<int64_t>({1}, {k}))
      .Attr("axis", axis)
      .Attr("largest", largest)
      .Attr("sorted", int64_t{1})
      .Output("values")
      .Output("indices")
      .Run();
}

// The spec's example: a 3x4 ramp, k = 3 along the last axis.
TEST(TopKTest, LargestAlongTheLastAxis) {
  const Tensor x = Floats({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto out = TopK(x, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Indices({3, 3}, {3, 2, 1, 3, 2, 1, 3, 2, 1}), (*out)[1]));
}

TEST(TopKTest, EqualValuesKeepTheLowerIndexFirst) {
  const Tensor x = Floats({5}, {1, 3, 3, 2, 3});
  auto largest = TopK(x, 2);
  auto smallest = TopK(x, 4, 0, /*largest=*/0);
  ASSERT_TRUE(largest.ok() && smallest.ok());
  EXPECT_TRUE(TensorsClose(Floats({2}, {3, 3}), (*largest)[0]));
  EXPECT_TRUE(TensorsClose(Indices({2}, {1, 2}), (*largest)[1]));
  EXPECT_TRUE(TensorsClose(Floats({4}, {1, 2, 3, 3}), (*smallest)[0]));
  EXPECT_TRUE(TensorsClose(Indices({4}, {0, 3, 1, 2}), (*smallest)[1]));
}

TEST(TopKTest, AlongTheFirstAxis) {
  const Tensor x = Tensor::FromVector<int64_t>({3, 2}, {5, 0, 9, 4, 1, 8});
  auto out = TopK(x, 2, 0);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2, 2}, {9, 8, 5, 4}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Indices({2, 2}, {1, 2, 0, 1}), (*out)[1]));
}

TEST(TopKTest, Opset1TakesKAsAnAttribute) {
  auto out = OpTest("TopK", 1)
                 .Input("x", Floats({4}, {2, 8, 1, 5}))
                 .Attr("k", int64_t{2})
                 .Output("values")
                 .Output("indices")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {8, 5}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Indices({2}, {1, 3}), (*out)[1]));
}

TEST(TopKTest, KOfZeroGivesEmptyOutputsAndKAboveTheAxisIsAnError) {
  auto empty = TopK(Floats({3}, {1, 2, 3}), 0);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].shape(), (Shape{0}));
  EXPECT_FALSE(TopK(Floats({3}, {1, 2, 3}), 4).ok());
}

}  // namespace
}  // namespace onnxserve
