// Concat and Split: axes, empty pieces, every way Split is told the lengths across versions.
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Ints(const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor Floats(Shape shape, const std::vector<float>& v) { return Tensor::FromVector<float>(std::move(shape), v); }

TEST(ConcatTest, JoinsAlongAnInnerAxisIncludingEmptyInputs) {
  auto out = OpTest("Concat", 13)
                 .Input("a", Floats({2, 1}, {1, 2}))
                 .Input("empty", Tensor(DataType::kFloat, {2, 0}))
                 .Input("b", Floats({2, 2}, {3, 4, 5, 6}))
                 .Attr("axis", int64_t{-1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 3}, {1, 3, 4, 2, 5, 6}), (*out)[0]));
}

TEST(ConcatTest, Opset1DefaultsTheAxisToOne) {
  auto out = OpTest("Concat", 1)
                 .Input("a", Floats({1, 2}, {1, 2}))
                 .Input("b", Floats({1, 1}, {3}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 3}, {1, 2, 3}), (*out)[0]));
}

TEST(ConcatTest, JoinsManyStringInputsOnAxisZero) {
  OpTest test("Concat", 13);
  std::vector<std::string> expected;
  for (int i = 0; i < 10; ++i) {
    test.Input(absl::StrCat("s", i), Tensor::FromVector<std::string>({1}, {std::to_string(i)}));
    expected.push_back(std::to_string(i));
  }
  auto out = test.Attr("axis", int64_t{0}).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({10}, expected), (*out)[0]));
}

TEST(ConcatTest, RejectsMismatchedDims) {
  auto out = OpTest("Concat", 13)
                 .Input("a", Floats({2, 1}, {1, 2}))
                 .Input("b", Floats({1, 1}, {3}))
                 .Attr("axis", int64_t{1})
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SplitTest, EqualPartsWithoutLengths) {
  auto out = OpTest("Split", 13).Input("x", Floats({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})).Attr("axis", int64_t{1})
                 .Output("a").Output("b").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {1, 2, 5, 6}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {3, 4, 7, 8}), (*out)[1]));
}

TEST(SplitTest, Opset2TakesLengthsAsAttribute) {
  auto out = OpTest("Split", 2).Input("x", Floats({5}, {1, 2, 3, 4, 5})).Attr("split", std::vector<int64_t>{2, 3})
                 .Output("a").Output("b").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {1, 2}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({3}, {3, 4, 5}), (*out)[1]));
}

TEST(SplitTest, Opset13TakesLengthsAsInputIncludingZero) {
  auto out = OpTest("Split", 13).Input("x", Floats({3}, {1, 2, 3})).Input("split", Ints({0, 3}))
                 .Output("a").Output("b").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{0}));
  EXPECT_TRUE(TensorsClose(Floats({3}, {1, 2, 3}), (*out)[1]));
}

TEST(SplitTest, NumOutputsMakesCeilSizedPiecesWithASmallerLast) {
  auto out = OpTest("Split", 18).Input("x", Floats({7}, {1, 2, 3, 4, 5, 6, 7})).Attr("num_outputs", int64_t{3})
                 .Output("a").Output("b").Output("c").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {1, 2, 3}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(Floats({3}, {4, 5, 6}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(Floats({1}, {7}), (*out)[2]));
}

TEST(SplitTest, RejectsLengthsThatDoNotSumToTheAxis) {
  auto out = OpTest("Split", 13).Input("x", Floats({3}, {1, 2, 3})).Input("split", Ints({1, 1}))
                 .Output("a").Output("b").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SplitTest, RejectsAnUnevenSplitWithoutLengths) {
  auto out = OpTest("Split", 13).Input("x", Floats({3}, {1, 2, 3})).Output("a").Output("b").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// A string's characters are not in a tensor's byte size: three 400 KiB strings join into 1.2 MiB of
// characters, past the 1 MiB limit (a sequence holding one long string many times joins into far more).
TEST(ConcatTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  OpTest test("Concat", 13);
  for (int i = 0; i < 3; ++i) {
    test.Input(absl::StrCat("s", i), Tensor::FromVector<std::string>({1}, {std::string(400 << 10, 'a')}));
  }
  auto out = test.Attr("axis", int64_t{0}).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve
