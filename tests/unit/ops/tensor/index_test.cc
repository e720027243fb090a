// OneHot (axes, negative and out-of-range indices by version, non-integer depth) and NonZero (row-major
// coordinates, scalars, empty results).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"
#include "tests/support/resident_memory.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

absl::StatusOr<std::vector<Tensor>> RunOneHot(int opset, Tensor indices, int64_t axis, float depth = 3) {
  return OpTest("OneHot", opset)
      .Input("indices", std::move(indices))
      .Input("depth", Tensor::Scalar(depth))
      .Input("values", Tensor::FromVector<float>({2}, {0, 5}))
      .Attr("axis", axis)
      .Output("y")
      .Run();
}

TEST(OneHotTest, LastAxisByDefaultPosition) {
  auto out = RunOneHot(11, Tensor::FromVector<int64_t>({2}, {0, 2}), -1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {5, 0, 0, 0, 0, 5}), (*out)[0]));
}

TEST(OneHotTest, AxisZeroPutsClassesFirst) {
  auto out = RunOneHot(11, Tensor::FromVector<int64_t>({2}, {0, 2}), 0);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3, 2}, {5, 0, 0, 0, 0, 5}), (*out)[0]));
}

TEST(OneHotTest, NegativeIndicesCountFromTheEndFromOpset11) {
  // -1 is class 2 in OneHot-11; in OneHot-9 it is outside [0, depth), an all-off row. 3 is out of range in
  // both.
  const Tensor indices = Tensor::FromVector<int64_t>({2}, {-1, 3});
  auto v11 = RunOneHot(11, indices, -1);
  ASSERT_TRUE(v11.ok()) << v11.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {0, 0, 5, 0, 0, 0}), (*v11)[0]));
  auto v9 = RunOneHot(9, indices, -1);
  ASSERT_TRUE(v9.ok()) << v9.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {0, 0, 0, 0, 0, 0}), (*v9)[0]));
}

TEST(OneHotTest, NonIntegerIndicesAndDepthAreTruncated) {
  // Spec: non-integer indices and depth are cast to int64: 1.7 -> 1, depth 2.9 -> 2.
  auto out = RunOneHot(11, Tensor::FromVector<float>({1}, {1.7f}), -1, 2.9f);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 2}, {0, 5}), (*out)[0]));
}

TEST(OneHotTest, RejectsAxisOutsideTheOutputRank) {
  EXPECT_EQ(RunOneHot(11, Tensor::FromVector<int64_t>({2}, {0, 1}), 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NonZeroTest, CoordinatesInRowMajorOrder) {
  // numpy.nonzero([[1, 0], [1, 1]]) = ([0, 1, 1], [0, 0, 1]).
  auto out = OpTest("NonZero", 13)
                 .Input("x", Tensor::FromVector<bool>({2, 2}, {true, false, true, true}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2, 3}, {0, 1, 1, 0, 0, 1}), (*out)[0]));
}

TEST(NonZeroTest, ScalarsAndAllZeroInputs) {
  // A non-zero scalar is one hit at index 0 of a one-element vector (numpy's atleast_1d).
  auto scalar = OpTest("NonZero", 13).Input("x", Tensor::Scalar(3.0f)).Output("y").Run();
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({1, 1}, {0}), (*scalar)[0]));
  auto none = OpTest("NonZero", 9).Input("x", Tensor::FromVector<int32_t>({3}, {0, 0, 0})).Output("y").Run();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].shape(), (Shape{1, 0}));
}

TEST(OneHotTest, RejectsADepthPastTheElementLimit) {
  EXPECT_EQ(RunOneHot(11, Tensor::FromVector<int64_t>({2}, {0, 1}), -1, 1e12f).status().code(),
            absl::StatusCode::kResourceExhausted);
  // 1e30 does not fit in int64: converting it was undefined behaviour.
  EXPECT_EQ(RunOneHot(11, Tensor::FromVector<int64_t>({2}, {0, 1}), -1, 1e30f).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// A string's characters are not in a tensor's byte size: a 4 KiB "on" value over 512 outputs may be 2 MiB
// of characters, past the 1 MiB limit.
TEST(OneHotTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("OneHot", 11)
                 .Input("indices", Tensor::FromVector<int64_t>({512}, std::vector<int64_t>(512, 0)))
                 .Input("depth", Tensor::Scalar(1.0f))
                 .Input("values", Tensor::FromVector<std::string>({2}, {"", std::string(4096, 'a')}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

// The positions are counted, then written into the output: 2^24 true bools (16 MiB) make a 128 MiB output,
// beside which a vector of the positions took 128-192 MiB more, outside the run's budget.
TEST(NonZeroTest, WritesItsCoordinatesWithoutAListBeside) {
  constexpr int64_t kCount = int64_t{1} << 24;
  const int64_t growth = testing::ResidentGrowth([] {
    Tensor all_true(DataType::kBool, {kCount});
    std::fill_n(all_true.data<bool>(), kCount, true);
    auto out = OpTest("NonZero", 13).Input("x", std::move(all_true)).Output("y").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), (Shape{1, kCount}));
    EXPECT_EQ((*out)[0].data<int64_t>()[kCount - 1], kCount - 1);
  });
  if (growth < 0) GTEST_SKIP() << "this kernel reports no resident-set high-water mark to reset";
  EXPECT_LT(growth, int64_t{224} << 20);
}

}  // namespace
}  // namespace onnxserve
