// Pad: every mode against numpy.pad's results, negative pads (crop), the axes input, the attribute forms of
// Pad-1/2, wrap appearing in Pad-19, strings.
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, const std::vector<float>& v) {
  return Tensor::FromVector<float>(std::move(shape), v);
}
Tensor Ints(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

absl::StatusOr<std::vector<Tensor>> Pad1D(const std::string& mode, std::vector<int64_t> pads,
                                          int opset = 19) {
  return OpTest("Pad", opset)
      .Input("x", Floats({3}, {1, 2, 3}))
      .Input("pads", Ints(pads))
      .Attr("mode", mode)
      .Output("y")
      .Run();
}

TEST(PadTest, ModesMatchNumpyPad) {
  // numpy.pad([1, 2, 3], (2, 2), mode=...) for each mode.
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"constant", {0, 0, 1, 2, 3, 0, 0}},
      {"edge", {1, 1, 1, 2, 3, 3, 3}},
      {"reflect", {3, 2, 1, 2, 3, 2, 1}},
      {"wrap", {2, 3, 1, 2, 3, 1, 2}},
  };
  for (const auto& [mode, expected] : cases) {
    auto out = Pad1D(mode, {2, 2});
    ASSERT_TRUE(out.ok()) << mode << ": " << out.status();
    EXPECT_TRUE(TensorsClose(Floats({7}, expected), (*out)[0])) << mode;
  }
}

TEST(PadTest, PadsLongerThanTheAxisRepeatThePattern) {
  // reflect as numpy.pad([1, 2, 3], (4, 2), "reflect"); wrap as a torus, as the spec describes it (numpy.pad
  // gives 2 rather than 3 for the first element: it wraps its partly padded array).
  auto reflect = Pad1D("reflect", {4, 2});
  ASSERT_TRUE(reflect.ok()) << reflect.status();
  EXPECT_TRUE(TensorsClose(Floats({9}, {1, 2, 3, 2, 1, 2, 3, 2, 1}), (*reflect)[0]));
  auto wrap = Pad1D("wrap", {4, 2});
  ASSERT_TRUE(wrap.ok()) << wrap.status();
  EXPECT_TRUE(TensorsClose(Floats({9}, {3, 1, 2, 3, 1, 2, 3, 1, 2}), (*wrap)[0]));
}

TEST(PadTest, WrapArrivesInPad19) {
  EXPECT_EQ(Pad1D("wrap", {1, 1}, 18).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PadTest, NegativePadsCrop) {
  // Drop one element at the front, add one constant 9 at the back.
  auto out = OpTest("Pad", 13)
                 .Input("x", Floats({3}, {1, 2, 3}))
                 .Input("pads", Ints({-1, 1}))
                 .Input("value", Tensor::Scalar(9.0f))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {2, 3, 9}), (*out)[0]));
}

TEST(PadTest, AxesInputPadsOnlyThoseAxes) {
  // 2x2 padded on axis -1 only by (1, 0) with the default constant 0.
  auto out = OpTest("Pad", 18)
                 .Input("x", Floats({2, 2}, {1, 2, 3, 4}))
                 .Input("pads", Ints({1, 0}))
                 .NoInput()
                 .Input("axes", Ints({-1}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 3}, {0, 1, 2, 0, 3, 4}), (*out)[0]));
}

TEST(PadTest, TwoDimensionalReflectMatchesSpecExample) {
  // The spec's reflect example: [[1,1.2],[2.3,3.4],[4.5,5.7]], pads [0,2,0,0].
  auto out = OpTest("Pad", 11)
                 .Input("x", Floats({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}))
                 .Input("pads", Ints({0, 2, 0, 0}))
                 .Attr("mode", std::string("reflect"))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(
      Floats({3, 4}, {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}), (*out)[0]));
}

TEST(PadTest, AttributeFormsOfPad1AndPad2) {
  // Pad-1 calls the attribute `paddings`, Pad-2 `pads`; both take the fill as `value`.
  auto v1 = OpTest("Pad", 1)
                .Input("x", Floats({2}, {1, 2}))
                .Attr("paddings", std::vector<int64_t>{1, 0})
                .Attr("value", 5.0f)
                .Output("y")
                .Run();
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {5, 1, 2}), (*v1)[0]));
  auto v2 = OpTest("Pad", 2)
                .Input("x", Floats({2}, {1, 2}))
                .Attr("pads", std::vector<int64_t>{0, 2})
                .Attr("mode", std::string("edge"))
                .Output("y")
                .Run();
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_TRUE(TensorsClose(Floats({4}, {1, 2, 2, 2}), (*v2)[0]));
}

TEST(PadTest, PadsStringsWithTheConstant) {
  auto out = OpTest("Pad", 25)
                 .Input("x", Tensor::FromVector<std::string>({1}, {"a"}))
                 .Input("pads", Ints({1, 1}))
                 .Input("value", Tensor::Scalar(std::string("-")))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({3}, {"-", "a", "-"}), (*out)[0]));
}

TEST(PadTest, RejectsPadsOfTheWrongLengthAndEdgePaddingOfEmptyAxes) {
  EXPECT_EQ(Pad1D("constant", {1, 1, 1}).status().code(), absl::StatusCode::kInvalidArgument);
  auto empty = OpTest("Pad", 19)
                   .Input("x", Floats({0}, {}))
                   .Input("pads", Ints({1, 1}))
                   .Attr("mode", std::string("edge"))
                   .Output("y")
                   .Run();
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PadTest, RejectsPadsPastTheElementLimit) {
  // The per-axis table of 2^40 coordinates used to be built (and thrown about) before any check.
  EXPECT_EQ(Pad1D("constant", {0, int64_t{1} << 40}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Pad1D("reflect", {int64_t{1} << 40, 0}).status().code(), absl::StatusCode::kResourceExhausted);
  // 3 + INT64_MAX overflowed.
  EXPECT_EQ(Pad1D("constant", {0, std::numeric_limits<int64_t>::max()}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Pad1D("constant", {std::numeric_limits<int64_t>::min(), 5}).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// An int64 table entry per coordinate of each output axis: uint8 [1] padded to [2^18 + 1] is a 256 KiB output
// but a 2 MiB table, past the 1 MiB limit (at the default limits, [1] padded to [2^32] took a 32 GiB table).
TEST(PadTest, RefusesAxisTablesPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("Pad", 19)
                 .Input("x", Tensor(DataType::kUint8, {1}))
                 .Input("pads", Ints({0, int64_t{1} << 18}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

// The tables used to be built before the empty-output check: uint8 [0, 1] padded to [0, 2^31] filled a
// 16 GiB table. Here the second axis' table would be refused by the byte limit, so only returning before
// building the tables gives the empty output.
TEST(PadTest, AnEmptyOutputBuildsNoAxisTables) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("Pad", 19)
                 .Input("x", Tensor(DataType::kUint8, {0, 1}))
                 .Input("pads", Ints({0, 0, 0, int64_t{1} << 18}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{0, (int64_t{1} << 18) + 1}));
}

// A string's characters are not in a tensor's byte size: edge-padding one 4 KiB string to 512 copies makes
// 2 MiB of characters, past the 1 MiB limit (a 4 MB string padded to a million copies asked for 4 TB).
TEST(PadTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = OpTest("Pad", 19)
                 .Input("x", Tensor::FromVector<std::string>({1}, {std::string(4096, 'a')}))
                 .Input("pads", Ints({0, 511}))
                 .Attr("mode", std::string("edge"))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve
