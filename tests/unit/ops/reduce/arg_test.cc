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

Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor Indices(Shape shape, const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(std::move(shape), v);
}

absl::StatusOr<Tensor> Arg(const std::string& op, int opset, const Tensor& x, int64_t axis, int64_t keepdims = 1,
                           int64_t select_last_index = 0) {
  OpTest test(op, opset);
  test.Input("x", x).Attr("axis", axis).Attr("keepdims", keepdims).Output("y");
  if (opset >= 12) test.Attr("select_last_index", select_last_index);
  auto out = test.Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// The spec's example: data [[2, 1], [3, 10]].
TEST(ArgTest, SpecExampleAlongEachAxis) {
  const Tensor x = Floats({2, 2}, {2, 1, 3, 10});
  auto max0 = Arg("ArgMax", 13, x, 0);
  auto max1 = Arg("ArgMax", 13, x, 1, /*keepdims=*/0);
  auto min1 = Arg("ArgMin", 13, x, -1);
  ASSERT_TRUE(max0.ok() && max1.ok() && min1.ok());
  EXPECT_TRUE(TensorsClose(Indices({1, 2}, {1, 1}), *max0));
  EXPECT_TRUE(TensorsClose(Indices({2}, {0, 1}), *max1));
  EXPECT_TRUE(TensorsClose(Indices({2, 1}, {1, 0}), *min1));
}

TEST(ArgTest, TiesPickTheFirstIndexUnlessSelectLastIndex) {
  const Tensor x = Floats({2, 2}, {2, 2, 3, 10});
  auto first = Arg("ArgMax", 12, x, 1);
  auto last = Arg("ArgMax", 12, x, 1, 1, /*select_last_index=*/1);
  ASSERT_TRUE(first.ok() && last.ok());
  EXPECT_TRUE(TensorsClose(Indices({2, 1}, {0, 1}), *first));
  EXPECT_TRUE(TensorsClose(Indices({2, 1}, {1, 1}), *last));
  const Tensor y = Tensor::FromVector<int32_t>({4}, {5, 1, 7, 1});
  auto min_last = Arg("ArgMin", 13, y, 0, 0, 1);
  ASSERT_TRUE(min_last.ok()) << min_last.status();
  EXPECT_EQ(min_last->values<int64_t>()[0], 3);
}

// The middle axis of a rank-3 tensor (strided scan) against a plain loop.
TEST(ArgTest, MiddleAxisMatchesReference) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> dist(0, 5);  // small range: many ties
  const Shape shape = {3, 7, 4};
  std::vector<float> v(3 * 7 * 4);
  for (float& f : v) f = static_cast<float>(dist(rng));
  for (int64_t last : {0, 1}) {
    std::vector<int64_t> expected;
    for (int64_t o = 0; o < 3; ++o) {
      for (int64_t j = 0; j < 4; ++j) {
        int64_t best = 0;
        for (int64_t i = 1; i < 7; ++i) {
          const float a = v[(o * 7 + i) * 4 + j], b = v[(o * 7 + best) * 4 + j];
          if (a > b || (last && a == b)) best = i;
        }
        expected.push_back(best);
      }
    }
    auto y = Arg("ArgMax", 13, Floats(shape, v), 1, 0, last);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(TensorsClose(Indices({3, 4}, expected), *y)) << "select_last_index " << last;
  }
}

TEST(ArgTest, RejectsAnEmptyAxisAndAnAxisOutOfRange) {
  EXPECT_FALSE(Arg("ArgMax", 13, Floats({0, 2}, {}), 0).ok());
  EXPECT_FALSE(Arg("ArgMin", 13, Floats({2}, {1, 2}), 1).ok());
}

}  // namespace
}  // namespace onnxserve
