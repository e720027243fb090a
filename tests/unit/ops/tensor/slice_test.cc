// Slice (clamping, negative steps, omitted axes/steps, attribute form) and Tile (both versions).
#include <limits>
#include <numeric>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Ints(const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }

Tensor Iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::FromVector<float>(std::move(shape), v);
}

TEST(SliceTest, NegativeStepWalksBackwardsWithClampedBounds) {
  // x[::-2] of 0..5 is 5, 3, 1 (start clamped to 5, end to -1).
  auto out = OpTest("Slice", 13)
                 .Input("x", Iota({6}))
                 .Input("starts", Ints({100}))
                 .Input("ends", Ints({-100}))
                 .Input("axes", Ints({0}))
                 .Input("steps", Ints({-2}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {5, 3, 1}), (*out)[0]));
}

TEST(SliceTest, OmittedAxesAndStepsDefaultToLeadingAxesAndOne) {
  // x[1:, 0:2] of a 3x3.
  auto out = OpTest("Slice", 10).Input("x", Iota({3, 3})).Input("starts", Ints({1, 0})).Input("ends", Ints({10, 2}))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {3, 4, 6, 7}), (*out)[0]));
}

TEST(SliceTest, NegativeAxesAndIndicesCountFromTheEnd) {
  // x[:, -2:-1] of a 2x4.
  auto out = OpTest("Slice", 11)
                 .Input("x", Iota({2, 4}))
                 .Input("starts", Ints({-2}))
                 .Input("ends", Ints({-1}))
                 .Input("axes", Ints({-1}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 1}, {2, 6}), (*out)[0]));
}

// A step of INT64_MAX takes one element, as numpy's x[0::2**63-1] does: counting it as (end - start + step - 1)
// / step overflowed int64, and the slice came out empty; -INT64_MIN overflowed likewise.
TEST(SliceTest, StepsAsLargeAsInt64TakeOneElement) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  auto forward = OpTest("Slice", 13).Input("x", Iota({5})).Input("starts", Ints({0})).Input("ends", Ints({kMax}))
                     .Input("axes", Ints({0})).Input("steps", Ints({kMax})).Output("y").Run();
  auto backward = OpTest("Slice", 13).Input("x", Iota({5})).Input("starts", Ints({-1})).Input("ends", Ints({kMin}))
                      .Input("axes", Ints({0})).Input("steps", Ints({kMin})).Output("y").Run();
  ASSERT_TRUE(forward.ok() && backward.ok()) << forward.status() << backward.status();
  EXPECT_TRUE(TensorsClose(Floats({1}, {0}), (*forward)[0]));
  EXPECT_TRUE(TensorsClose(Floats({1}, {4}), (*backward)[0]));
}

TEST(SliceTest, EmptyWhenStartIsPastEnd) {
  auto out = OpTest("Slice", 13).Input("x", Iota({4})).Input("starts", Ints({3})).Input("ends", Ints({1}))
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{0}));
}

TEST(SliceTest, Opset1TakesAttributes) {
  auto out = OpTest("Slice", 1)
                 .Input("x", Iota({2, 3}))
                 .Attr("starts", std::vector<int64_t>{1})
                 .Attr("ends", std::vector<int64_t>{3})
                 .Attr("axes", std::vector<int64_t>{1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {1, 2, 4, 5}), (*out)[0]));
}

TEST(SliceTest, SlicesStrings) {
  auto out = OpTest("Slice", 13)
                 .Input("x", Tensor::FromVector<std::string>({3}, {"a", "b", "c"}))
                 .Input("starts", Ints({-1}))
                 .Input("ends", Ints({-4}))
                 .Input("axes", Ints({0}))
                 .Input("steps", Ints({-1}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({3}, {"c", "b", "a"}), (*out)[0]));
}

TEST(SliceTest, RejectsAZeroStep) {
  auto out = OpTest("Slice", 13).Input("x", Iota({4})).Input("starts", Ints({0})).Input("ends", Ints({4}))
                 .Input("axes", Ints({0})).Input("steps", Ints({0})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TileTest, RepeatsEachDim) {
  // np.tile([[0,1],[2,3]], (2,3))
  auto out = OpTest("Tile", 13).Input("x", Iota({2, 2})).Input("repeats", Ints({2, 3})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> row0 = {0, 1, 0, 1, 0, 1}, row1 = {2, 3, 2, 3, 2, 3};
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i) {
    expected.insert(expected.end(), row0.begin(), row0.end());
    expected.insert(expected.end(), row1.begin(), row1.end());
  }
  EXPECT_TRUE(TensorsClose(Floats({4, 6}, expected), (*out)[0]));
}

TEST(TileTest, ZeroRepeatsGiveAnEmptyTensor) {
  auto out = OpTest("Tile", 6).Input("x", Iota({2, 2})).Input("repeats", Ints({0, 1})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{0, 2}));
}

TEST(TileTest, Opset1RepeatsAlongOneAxis) {
  auto out = OpTest("Tile", 1)
                 .Input("x", Iota({2, 2}))
                 .Input("tiles", Tensor::Scalar<int64_t>(2))
                 .Input("axis", Tensor::Scalar<int64_t>(1))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 4}, {0, 1, 0, 1, 2, 3, 2, 3}), (*out)[0]));
}

// tiles and axis hold one value each: element 0 of an empty one was read anyway, from a recycled buffer.
TEST(TileTest, Opset1RejectsAnEmptyTilesOrAxis) {
  const Tensor none(DataType::kInt64, {0});
  auto no_tiles = OpTest("Tile", 1).Input("x", Iota({2, 2})).Input("tiles", none)
                      .Input("axis", Tensor::Scalar<int64_t>(1)).Output("y").Run();
  auto no_axis = OpTest("Tile", 1).Input("x", Iota({2, 2})).Input("tiles", Tensor::Scalar<int64_t>(2))
                     .Input("axis", none).Output("y").Run();
  EXPECT_EQ(no_tiles.status().code(), absl::StatusCode::kInvalidArgument) << no_tiles.status();
  EXPECT_EQ(no_axis.status().code(), absl::StatusCode::kInvalidArgument) << no_axis.status();
}

// A scalar has no axis 0, though NormalizeAxis accepts 0 for rank 0: the count was written into a list of
// no repeats (a null write that killed the process).
TEST(TileTest, Opset1RejectsAScalarInput) {
  auto out = OpTest("Tile", 1).Input("x", Tensor::Scalar(1.0f)).Input("tiles", Tensor::Scalar<int64_t>(2))
                 .Input("axis", Tensor::Scalar<int64_t>(0)).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

TEST(TileTest, RejectsTheWrongNumberOfRepeats) {
  auto out = OpTest("Tile", 13).Input("x", Iota({2, 2})).Input("repeats", Ints({2})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TileTest, RejectsRepeatsPastTheElementLimit) {
  // 4 * 2^62 wraps to 0: the output was an empty tensor of a wrapped shape, answered OK.
  auto wrapped = OpTest("Tile", 13).Input("x", Iota({4})).Input("repeats", Ints({int64_t{1} << 62})).Output("y").Run();
  EXPECT_EQ(wrapped.status().code(), absl::StatusCode::kResourceExhausted) << wrapped.status();
  auto huge = OpTest("Tile", 13).Input("x", Iota({1})).Input("repeats", Ints({int64_t{1} << 40})).Output("y").Run();
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
}

// A string's characters are not in a tensor's byte size: one 4 KiB string tiled 512 times is 2 MiB of
// characters, past the 1 MiB limit.
TEST(TileTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("Tile", 13)
                 .Input("x", Tensor::FromVector<std::string>({1}, {std::string(4096, 'a')}))
                 .Input("repeats", Ints({512}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve
