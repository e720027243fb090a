// Unique: the spec's examples (sorted, unsorted, along an axis) and strings.
#include <limits>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor I64(std::vector<int64_t> v) { return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v); }

TEST(UniqueTest, SortedFlattenedWithAllOutputs) {
  auto out = OpTest("Unique", 11).Input("x", Tensor::FromVector<float>({6}, {2, 1, 1, 3, 4, 3}))
                 .Output("y").Output("indices").Output("inverse").Output("counts").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({4}, {1, 2, 3, 4}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(I64({1, 0, 3, 4}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(I64({1, 0, 0, 2, 3, 2}), (*out)[2]));
  EXPECT_TRUE(TensorsClose(I64({2, 1, 2, 1}), (*out)[3]));
}

TEST(UniqueTest, UnsortedKeepsOrderOfFirstAppearance) {
  auto out = OpTest("Unique", 11).Input("x", Tensor::FromVector<float>({6}, {2, 1, 1, 3, 4, 3}))
                 .Attr("sorted", int64_t{0}).Output("y").Output("indices").Output("inverse").Output("counts").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({4}, {2, 1, 3, 4}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(I64({0, 1, 3, 4}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(I64({0, 1, 1, 2, 3, 2}), (*out)[2]));
  EXPECT_TRUE(TensorsClose(I64({1, 2, 2, 1}), (*out)[3]));
}

// NaN sorts after every number and NaNs are one value, as numpy.unique answers ([0., 1., nan] here). With
// operator<, a NaN compared equal to both its neighbours and chained 1 and 0 into one group: [1].
TEST(UniqueTest, NaNIsOneValueAfterEveryNumber) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = OpTest("Unique", 11).Input("x", Tensor::FromVector<float>({4}, {1, nan, 0, nan}))
                 .Output("y").Output("indices").Output("inverse").Output("counts").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {0, 1, nan}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(I64({2, 0, 1}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(I64({1, 2, 0, 2}), (*out)[2]));
  EXPECT_TRUE(TensorsClose(I64({1, 1, 2}), (*out)[3]));
  out = OpTest("Unique", 11).Input("x", Tensor::FromVector<float>({4}, {2, nan, 1, 2})).Attr("sorted", int64_t{0})
            .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({3}, {2, nan, 1}), (*out)[0]));
}

// Along an axis of an empty X every slice is empty, so all are one: y keeps one, the inverse maps every slice
// to it. X of [1, 2^31, 0] holds no element yet declares 2^31 slices, and the kernel sorted their indices in
// scratch vectors of that length first (16 GB each: RESOURCE_EXHAUSTED under a 6 GB address limit).
TEST(UniqueTest, EmptySlicesAreOneGroupHoweverManyTheInputDeclares) {
  auto out = OpTest("Unique", 11).Input("x", Tensor(DataType::kFloat, {2, 3, 0})).Attr("axis", int64_t{1})
                 .Output("y").Output("indices").Output("inverse").Output("counts").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 1, 0}));
  EXPECT_TRUE(TensorsClose(I64({0}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(I64({0, 0, 0}), (*out)[2]));
  EXPECT_TRUE(TensorsClose(I64({3}), (*out)[3]));

  out = OpTest("Unique", 11).Input("x", Tensor(DataType::kFloat, {1, int64_t{1} << 31, 0})).Attr("axis", int64_t{1})
            .Output("y").Output("indices").NoOutput().Output("counts").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 1, 0}));
  EXPECT_TRUE(TensorsClose(I64({int64_t{1} << 31}), (*out)[2]));
}

TEST(UniqueTest, AlongAnAxisComparesWholeSlices) {
  auto out = OpTest("Unique", 11).Input("x", Tensor::FromVector<int32_t>({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4}))
                 .Attr("axis", int64_t{0}).Output("y").Output("indices").Output("inverse").Output("counts").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2, 3}, {1, 0, 0, 2, 3, 4}), (*out)[0]));
  EXPECT_TRUE(TensorsClose(I64({0, 2}), (*out)[1]));
  EXPECT_TRUE(TensorsClose(I64({0, 0, 1}), (*out)[2]));
  EXPECT_TRUE(TensorsClose(I64({2, 1}), (*out)[3]));
}

TEST(UniqueTest, Strings) {
  auto out = OpTest("Unique", 11)
                 .Input("x", Tensor::FromVector<std::string>({3}, {"b", "a", "b"})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2}, {"a", "b"}), (*out)[0]));
}

// A scalar has no axis 0, though NormalizeAxis accepts 0 for rank 0: its slice count was read, and the
// output's dim written, through an empty shape (a null access that killed the process).
TEST(UniqueTest, AScalarHasNoAxisToCompareAlong) {
  auto out = OpTest("Unique", 11).Input("x", Tensor::Scalar(1.0f)).Attr("axis", int64_t{0}).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

// The grouping's bookkeeping, some 80 bytes a slice, is charged to the run: 2^16 equal bytes (64 KiB of X,
// 512 KiB of inverse indices) need 5 MiB of it, which a 2 MiB budget refuses; 2^12 of them fit.
TEST(UniqueTest, ItsBookkeepingCountsAgainstTheBudget) {
  const auto unique = [](int64_t count) {
    return OpTest("Unique", 11)
        .Input("x", Tensor::FromVector<uint8_t>({count}, std::vector<uint8_t>(static_cast<size_t>(count), 7)))
        .Output("y")
        .NoOutput()
        .Output("inverse")
        .MemoryBudget(int64_t{2} << 20)
        .Run();
  };
  auto many = unique(int64_t{1} << 16);
  EXPECT_EQ(many.status().code(), absl::StatusCode::kResourceExhausted) << many.status();
  auto few = unique(int64_t{1} << 12);
  ASSERT_TRUE(few.ok()) << few.status();
  EXPECT_EQ((*few)[0].shape(), (Shape{1}));
}

}  // namespace
}  // namespace onnxserve
