// Constant (every value attribute), ConstantOfShape, Range, EyeLike and Trilu.
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

TEST(ConstantTest, ValueTensor) {
  const Tensor value = Floats({2}, {1.5f, -2});
  auto out = OpTest("Constant", 9).Attr("value", value).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(value, (*out)[0]));
}

TEST(ConstantTest, ShorthandAttributesSinceOpset12) {
  auto f = OpTest("Constant", 12).Attr("value_float", 2.5f).Output("y").Run();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar(2.5f), (*f)[0]));
  auto ints = OpTest("Constant", 13).Attr("value_ints", std::vector<int64_t>{3, 4}).Output("y").Run();
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_TRUE(TensorsClose(Ints({3, 4}), (*ints)[0]));
  auto s = OpTest("Constant", 19).Attr("value_strings", std::vector<std::string>{"a", "b"}).Output("y").Run();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2}, {"a", "b"}), (*s)[0]));
}

TEST(ConstantTest, SparseValueIsUnimplemented) {
  onnx::AttributeProto attr;
  attr.set_name("sparse_value");
  attr.set_type(onnx::AttributeProto::SPARSE_TENSOR);
  auto out = OpTest("Constant", 13).Attr(attr).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(ConstantTest, RejectsTwoValues) {
  auto out = OpTest("Constant", 13).Attr("value_int", int64_t{1}).Attr("value_float", 1.0f).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConstantOfShapeTest, DefaultsToFloatZeros) {
  auto out = OpTest("ConstantOfShape", 9).Input("shape", Ints({2, 3})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 3}, std::vector<float>(6, 0.0f)), (*out)[0]));
}

TEST(ConstantOfShapeTest, RepeatsTheValueAndAnEmptyShapeIsAScalar) {
  auto out = OpTest("ConstantOfShape", 20)
                 .Input("shape", Ints({}))
                 .Attr("value", Tensor::FromVector<int32_t>({1}, {7}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar<int32_t>(7), (*out)[0]));
}

TEST(RangeTest, IntegersWithANegativeDelta) {
  // Spec example 2: 10, 8, 6.
  auto out = OpTest("Range", 11)
                 .Input("start", Tensor::Scalar<int32_t>(10))
                 .Input("limit", Tensor::Scalar<int32_t>(4))
                 .Input("delta", Tensor::Scalar<int32_t>(-2))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({3}, {10, 8, 6}), (*out)[0]));
}

TEST(RangeTest, FloatCountRoundsUpAndEmptyWhenPastLimit) {
  auto out = OpTest("Range", 11)
                 .Input("start", Tensor::Scalar(1.0f))
                 .Input("limit", Tensor::Scalar(2.0f))
                 .Input("delta", Tensor::Scalar(0.3f))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({4}, {1.0f, 1.3f, 1.6f, 1.9f}), (*out)[0], 1e-5));
  auto empty = OpTest("Range", 11)
                   .Input("start", Tensor::Scalar<int64_t>(5))
                   .Input("limit", Tensor::Scalar<int64_t>(1))
                   .Input("delta", Tensor::Scalar<int64_t>(1))
                   .Output("y")
                   .Run();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].shape(), (Shape{0}));
}

TEST(RangeTest, Float16AccumulatesInFloatByDefault) {
  // 2048 + 1 is not representable in float16, but float accumulation of 2047 + 1 + 1 stays exact until
  // the final cast: 2047, 2048, 2049 -> 2048 (round to even).
  auto out = OpTest("Range", 27)
                 .Input("start", Tensor::Scalar(Float16(2047.0f)))
                 .Input("limit", Tensor::Scalar(Float16(2050.0f)))
                 .Input("delta", Tensor::Scalar(Float16(1.0f)))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].NumElements(), 3);
  EXPECT_EQ(static_cast<float>((*out)[0].data<Float16>()[2]), 2048.0f);
}

TEST(RangeTest, RejectsAZeroDelta) {
  auto out = OpTest("Range", 11)
                 .Input("start", Tensor::Scalar<int64_t>(0))
                 .Input("limit", Tensor::Scalar<int64_t>(3))
                 .Input("delta", Tensor::Scalar<int64_t>(0))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EyeLikeTest, OffsetDiagonalAndDtype) {
  auto out = OpTest("EyeLike", 9)
                 .Input("x", Tensor(DataType::kFloat, {3, 4}))
                 .Attr("k", int64_t{1})
                 .Attr("dtype", int64_t{static_cast<int64_t>(DataType::kInt32)})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}), (*out)[0]));
}

TEST(EyeLikeTest, NegativeKBelowTheDiagonalKeepsTheInputType) {
  auto out = OpTest("EyeLike", 22).Input("x", Tensor(DataType::kDouble, {3, 2})).Attr("k", int64_t{-1}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<double>({3, 2}, {0, 0, 1, 0, 0, 1}), (*out)[0]));
}

// k = INT64_MIN was negated to find the first row: it stayed INT64_MIN, and a 1 was written at offset
// INT64_MIN (element 0 for 4-byte elements, 2^63 bytes away for 1-byte ones).
TEST(EyeLikeTest, DiagonalsBeyondTheMatrixLeaveItZero) {
  for (const int64_t k : {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    auto out = OpTest("EyeLike", 22).Input("x", Tensor(DataType::kFloat, {3, 2})).Attr("k", k).Output("y").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Floats({3, 2}, {0, 0, 0, 0, 0, 0}), (*out)[0])) << k;
  }
}

TEST(TriluTest, UpperWithPositiveK) {
  // np.triu(x, 1) of a 3x3 of 1..9.
  auto out = OpTest("Trilu", 14)
                 .Input("x", Floats({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}))
                 .Input("k", Tensor::Scalar<int64_t>(1))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3, 3}, {0, 2, 3, 0, 0, 6, 0, 0, 0}), (*out)[0]));
}

TEST(TriluTest, LowerWithNegativeKOnABatch) {
  // np.tril(x, -1) of two 2x3 matrices.
  auto out = OpTest("Trilu", 14)
                 .Input("x", Floats({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
                 .Input("k", Tensor::Scalar<int64_t>(-1))
                 .Attr("upper", int64_t{0})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2, 3}, {0, 0, 0, 4, 0, 0, 0, 0, 0, 10, 0, 0}), (*out)[0]));
}

// Row i keeps the columns from i + k (upper) or up to i + k (lower): with k = INT64_MAX that sum wrapped to a
// negative column, so triu kept rows it should have zeroed and tril zeroed the rows it should have kept.
TEST(TriluTest, KPastTheLastColumnKeepsNothingAboveOrEverythingBelow) {
  const Tensor x = Floats({2, 2}, {1, 2, 3, 4});
  const Tensor k = Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::max());
  auto upper = OpTest("Trilu", 14).Input("x", x).Input("k", k).Output("y").Run();
  auto lower = OpTest("Trilu", 14).Input("x", x).Input("k", k).Attr("upper", int64_t{0}).Output("y").Run();
  ASSERT_TRUE(upper.ok() && lower.ok()) << upper.status() << lower.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {0, 0, 0, 0}), (*upper)[0]));
  EXPECT_TRUE(TensorsClose(x, (*lower)[0]));
}

// k is a scalar: an empty tensor was read at element 0 anyway.
TEST(TriluTest, AnEmptyKIsAnError) {
  auto out =
      OpTest("Trilu", 14).Input("x", Floats({1, 1}, {1})).Input("k", Tensor(DataType::kInt64, {0})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

TEST(ConstantOfShapeTest, RejectsShapesPastTheElementLimit) {
  // [2^62, 4] wrapped to 0 elements and was answered with a tensor holding 0 bytes.
  auto wrapped = OpTest("ConstantOfShape", 9).Input("shape", Ints({int64_t{1} << 62, 4})).Output("y").Run();
  EXPECT_EQ(wrapped.status().code(), absl::StatusCode::kResourceExhausted) << wrapped.status();
  auto huge = OpTest("ConstantOfShape", 9).Input("shape", Ints({1000000000000})).Output("y").Run();
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  auto negative = OpTest("ConstantOfShape", 9).Input("shape", Ints({2, -1})).Output("y").Run();
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument) << negative.status();
}

TEST(ConstantOfShapeTest, AHugeFoldedConstantFailsTheRunNotTheProcess) {
  // The shape is an initializer, so the node is folded when the model loads.
  auto out = OpTest("ConstantOfShape", 9).Constant("shape", Ints({int64_t{1} << 40})).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

TEST(RangeTest, CountsPastTheElementLimitAreErrors) {
  auto RunRange = [](auto start, auto limit, auto delta) {
    return OpTest("Range", 11)
        .Input("start", Tensor::Scalar(start))
        .Input("limit", Tensor::Scalar(limit))
        .Input("delta", Tensor::Scalar(delta))
        .Output("y")
        .Run();
  };
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(RunRange(int64_t{0}, int64_t{1000000000000}, int64_t{1}).status().code(),
            absl::StatusCode::kResourceExhausted);
  // INT64_MIN % -1 raised SIGFPE.
  EXPECT_EQ(RunRange(int64_t{0}, kMin, int64_t{-1}).status().code(), absl::StatusCode::kResourceExhausted);
  // limit - start overflows int64.
  EXPECT_EQ(RunRange(kMin, kMax, int64_t{1}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RunRange(0.0f, 1e30f, 1.0f).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(RunRange(0.0f, std::numeric_limits<float>::infinity(), 1.0f).ok());
  auto extreme = RunRange(kMax, kMin, kMin);  // (INT64_MIN - INT64_MAX) / INT64_MIN rounds up to 2
  ASSERT_TRUE(extreme.ok()) << extreme.status();
  EXPECT_EQ((*extreme)[0].NumElements(), 2);
}

// A string's characters are not in a tensor's byte size: a 4 KiB value repeated 512 times is 2 MiB of
// characters, past the 1 MiB limit.
TEST(ConstantOfShapeTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("ConstantOfShape", 20)
                 .Input("shape", Ints({512}))
                 .Attr("value", Tensor::FromVector<std::string>({1}, {std::string(4096, 'a')}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve
