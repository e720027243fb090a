// Reshape, Shape, Size, Flatten, Squeeze, Unsqueeze and Expand across their spec versions.
#include <numeric>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Ints(const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v); }

Tensor Iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::FromVector<float>(std::move(shape), v);
}

TEST(ReshapeTest, ZeroCopiesTheInputDimAndMinusOneIsInferred) {
  const Tensor x = Iota({2, 3, 4});
  auto out = OpTest("Reshape", 13).Input("x", x).Input("shape", Ints({0, -1})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Iota({2, 12}), (*out)[0]));
}

TEST(ReshapeTest, SharesTheInputStorage) {
  const Tensor x = Iota({6});
  auto out = OpTest("Reshape", 14).Input("x", x).Input("shape", Ints({3, 2})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
}

TEST(ReshapeTest, AllowZeroMakesZeroALiteralDim) {
  auto out = OpTest("Reshape", 14)
                 .Input("x", Tensor(DataType::kFloat, {0, 3}))
                 .Input("shape", Ints({3, 0}))
                 .Attr("allowzero", int64_t{1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{3, 0}));
}

TEST(ReshapeTest, Opset1TakesTheShapeAttribute) {
  auto out = OpTest("Reshape", 1).Input("x", Iota({2, 3})).Attr("shape", std::vector<int64_t>{3, 2}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Iota({3, 2}), (*out)[0]));
}

TEST(ReshapeTest, RejectsAMismatchedElementCount) {
  auto out = OpTest("Reshape", 13).Input("x", Iota({2, 3})).Input("shape", Ints({4, 2})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ShapeTest, StartAndEndSliceTheDimsWithClamping) {
  const Tensor x(DataType::kFloat, {2, 3, 4, 5});
  auto out = OpTest("Shape", 15).Input("x", x).Attr("start", int64_t{-3}).Attr("end", int64_t{100}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Ints({3, 4, 5}), (*out)[0]));
  auto empty = OpTest("Shape", 15).Input("x", x).Attr("start", int64_t{3}).Attr("end", int64_t{1}).Output("y").Run();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].shape(), (Shape{0}));
}

TEST(ShapeTest, WorksOnStrings) {
  auto out = OpTest("Shape", 13).Input("x", Tensor(DataType::kString, {2, 1})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Ints({2, 1}), (*out)[0]));
}

TEST(SizeTest, IsAnInt64Scalar) {
  auto out = OpTest("Size", 13).Input("x", Tensor(DataType::kFloat, {2, 3, 0})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar<int64_t>(0), (*out)[0]));
}

TEST(FlattenTest, NegativeAxisCountsFromTheEnd) {
  auto out = OpTest("Flatten", 13).Input("x", Iota({2, 3, 4})).Attr("axis", int64_t{-1}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Iota({6, 4}), (*out)[0]));
}

TEST(FlattenTest, AxisZeroGivesASingleRow) {
  auto out = OpTest("Flatten", 9).Input("x", Iota({2, 3})).Attr("axis", int64_t{0}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Iota({1, 6}), (*out)[0]));
}

TEST(FlattenTest, NegativeAxisIsInvalidBeforeOpset11) {
  auto out = OpTest("Flatten", 9).Input("x", Iota({2, 3})).Attr("axis", int64_t{-1}).Output("y").Run();
  EXPECT_FALSE(out.ok());
}

TEST(SqueezeTest, WithoutAxesDropsEveryUnitDim) {
  auto out = OpTest("Squeeze", 13).Input("x", Iota({1, 3, 1, 2})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Iota({3, 2}), (*out)[0]));
}

TEST(SqueezeTest, Opset11TakesNegativeAxesAsAttribute) {
  auto out = OpTest("Squeeze", 11).Input("x", Iota({1, 3, 1})).Attr("axes", std::vector<int64_t>{-1}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Iota({1, 3}), (*out)[0]));
}

TEST(SqueezeTest, RejectsANonUnitAxis) {
  auto out = OpTest("Squeeze", 13).Input("x", Iota({1, 3})).Input("axes", Ints({1})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UnsqueezeTest, AxesReferToTheOutputRankInAnyOrder) {
  auto out = OpTest("Unsqueeze", 13).Input("x", Iota({3, 4})).Input("axes", Ints({-1, 0})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Iota({1, 3, 4, 1}), (*out)[0]));
}

TEST(UnsqueezeTest, Opset1TakesAxesAsAttributeAndSharesStorage) {
  const Tensor x = Iota({2});
  auto out = OpTest("Unsqueeze", 1).Input("x", x).Attr("axes", std::vector<int64_t>{1}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 1}));
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
}

TEST(UnsqueezeTest, RejectsRepeatedAxes) {
  // The output has rank 3, where -2 is axis 1.
  auto out = OpTest("Unsqueeze", 13).Input("x", Iota({3})).Input("axes", Ints({1, -2})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// Found by tests/fuzz/model_fuzz.cc: [1,1] expanded by [-3,-2,-1] sized its output from a negative element
// count (wrapped to a few bytes by the allocator's rounding) and CopyStrided wrote past it.
TEST(ExpandTest, NegativeShapeIsAnError) {
  auto out = OpTest("Expand", 13)
                 .Input("x", Tensor::FromVector<float>({1, 1}, {1.f}))
                 .Input("shape", Tensor::FromVector<int64_t>({3}, {-3, -2, -1}))
                 .Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ExpandTest, BroadcastsBothWays) {
  // [3,1] expanded with [2,1,4]: out[b][i][j] = x[i].
  auto out = OpTest("Expand", 13)
                 .Input("x", Tensor::FromVector<float>({3, 1}, {1, 2, 3}))
                 .Input("shape", Ints({2, 1, 4}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> expected;
  for (int b = 0; b < 2; ++b) {
    for (float v : {1.0f, 2.0f, 3.0f}) expected.insert(expected.end(), 4, v);
  }
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3, 4}, expected), (*out)[0]));
}

TEST(ExpandTest, SmallerShapeKeepsTheInputShape) {
  auto out = OpTest("Expand", 8).Input("x", Iota({2, 3})).Input("shape", Ints({3})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Iota({2, 3}), (*out)[0]));
}

TEST(ExpandTest, CopiesStrings) {
  auto out = OpTest("Expand", 13)
                 .Input("x", Tensor::FromVector<std::string>({1, 2}, {"a", "b"}))
                 .Input("shape", Ints({2, 2}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2, 2}, {"a", "b", "a", "b"}), (*out)[0]));
}

TEST(ExpandTest, RejectsIncompatibleShapes) {
  auto out = OpTest("Expand", 13).Input("x", Iota({3})).Input("shape", Ints({2})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// Shapes from data go through the checked size helpers (docs/security.md, "Limits").
constexpr int64_t k2Pow62 = int64_t{1} << 62;

TEST(ReshapeTest, RejectsATargetWhoseElementCountWrapsAround) {
  // (2^62 + 1) * 4 wraps to 4 in int64: accepted, a Gather on the view read heap memory past the 4 floats.
  auto out = OpTest("Reshape", 14).Input("x", Iota({4})).Input("shape", Ints({k2Pow62 + 1, 4})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
  auto gathered = OpTest("Reshape", 14)
                      .Input("x", Iota({4}))
                      .Input("shape", Ints({k2Pow62 + 1, -1}))
                      .Output("y")
                      .Run();
  EXPECT_FALSE(gathered.ok());
}

TEST(ExpandTest, RejectsShapesPastTheElementLimit) {
  // [2^62, 4] has 2^64 elements, 0 after wrapping: the output held no storage at all.
  auto wrapped = OpTest("Expand", 13).Input("x", Iota({1})).Input("shape", Ints({k2Pow62, 4})).Output("y").Run();
  EXPECT_EQ(wrapped.status().code(), absl::StatusCode::kResourceExhausted) << wrapped.status();
  auto huge = OpTest("Expand", 13).Input("x", Iota({1})).Input("shape", Ints({int64_t{1} << 40})).Output("y").Run();
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_NE(huge.status().message().find("Expand"), std::string::npos) << huge.status();
}

// A string's characters are not in a tensor's byte size: one 4 KiB string expanded to 512 elements is 2 MiB
// of characters, past the 1 MiB limit.
TEST(ExpandTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("Expand", 13)
                 .Input("x", Tensor::FromVector<std::string>({1}, {std::string(4096, 'a')}))
                 .Input("shape", Ints({512}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve
