// DeformConv: zero offsets reduce it to a convolution, fractional offsets interpolate bilinearly with zeros
// outside the image, mask and bias scale and shift, offset groups move their own channels, and the
// shape errors.
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, std::vector<float> v) { return Tensor::FromVector<float>(std::move(shape), v); }
Tensor Zeros(Shape shape) { return Floats(shape, std::vector<float>(NumElements(shape), 0.0f)); }

TEST(DeformConvTest, ZeroOffsetsGiveAPlainConvolution) {
  auto out = OpTest("DeformConv", 22)
                 .Input("X", Floats({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}))
                 .Input("W", Floats({1, 1, 2, 2}, {1, 1, 1, 1}))
                 .Input("offset", Zeros({1, 8, 2, 2}))
                 .Output("Y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2, 2}, {12, 16, 24, 28}), (*out)[0]));
}

// A NaN offset passed the "outside the image" test (every comparison with NaN is false) and its floor was
// converted to int64, undefined behaviour that made the output NaN on x86. As RoiAlign's NaN RoIs, a tap
// that lies nowhere samples nothing: the other three taps still add up.
TEST(DeformConvTest, ANanOffsetSamplesNothing) {
  std::vector<float> offsets(32, 0.0f);
  offsets[0] = std::numeric_limits<float>::quiet_NaN();  // tap 0's row offset at output (0, 0)
  auto out = OpTest("DeformConv", 22)
                 .Input("X", Floats({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}))
                 .Input("W", Floats({1, 1, 2, 2}, {1, 1, 1, 1}))
                 .Input("offset", Floats({1, 8, 2, 2}, offsets))
                 .Output("Y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2, 2}, {11, 16, 24, 28}), (*out)[0]));  // 12 less the 1 at (0, 0)
}

TEST(DeformConvTest, PadsAndDilationsWhoseArithmeticOverflowsAreErrors) {
  constexpr int64_t kHuge = int64_t{1} << 62;
  for (const char* attribute : {"pads", "dilations"}) {
    OpTest test("DeformConv", 22);
    test.Input("X", Zeros({1, 1, 3, 3})).Input("W", Zeros({1, 1, 2, 2})).Input("offset", Zeros({1, 8, 2, 2}))
        .Output("Y");
    if (std::string(attribute) == "pads") {
      test.Attr("pads", std::vector<int64_t>{kHuge, 0, kHuge, 0});
    } else {
      test.Attr("dilations", std::vector<int64_t>{kHuge, 1});
    }
    EXPECT_FALSE(test.Run().ok()) << attribute;
  }
}

TEST(DeformConvTest, FractionalOffsetsInterpolateThenMaskAndBiasApply) {
  // X = [10, 20]; both pixels sample half a step right: 15, and 0.5 * 20 + 0.5 * (outside: 0) = 10.
  // The mask doubles the second, the bias adds 1.
  auto out = OpTest("DeformConv", 19)
                 .Input("X", Floats({1, 1, 1, 2}, {10, 20}))
                 .Input("W", Floats({1, 1, 1, 1}, {1}))
                 .Input("offset", Floats({1, 2, 1, 2}, {0, 0, 0.5f, 0.5f}))
                 .Input("B", Floats({1}, {1}))
                 .Input("mask", Floats({1, 1, 1, 2}, {1, 2}))
                 .Output("Y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 2}, {16, 21}), (*out)[0]));
}

TEST(DeformConvTest, EachOffsetGroupMovesItsOwnChannels) {
  // Channel 0 ([1, 2]) samples one step right: [2, 0]; channel 1 ([10, 20]) stays. W sums them.
  auto out = OpTest("DeformConv", 22)
                 .Attr("offset_group", int64_t{2})
                 .Input("X", Floats({1, 2, 1, 2}, {1, 2, 10, 20}))
                 .Input("W", Floats({1, 2, 1, 1}, {1, 1}))
                 .Input("offset", Floats({1, 4, 1, 2}, {0, 0, 1, 1, 0, 0, 0, 0}))
                 .Output("Y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 2}, {12, 20}), (*out)[0]));
}

TEST(DeformConvTest, OnlyTwoDimensionalImagesAndMatchingOffsets) {
  auto out = OpTest("DeformConv", 22)
                 .Input("X", Zeros({1, 1, 2, 2, 2}))
                 .Input("W", Zeros({1, 1, 1, 1, 1}))
                 .Input("offset", Zeros({1, 3, 2, 2, 2}))
                 .Output("Y")
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented) << out.status();
  EXPECT_NE(out.status().message().find("2-D images only"), std::string::npos) << out.status();

  out = OpTest("DeformConv", 22)
            .Input("X", Zeros({1, 1, 3, 3}))
            .Input("W", Zeros({1, 1, 2, 2}))
            .Input("offset", Zeros({1, 4, 2, 2}))
            .Output("Y")
            .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("offset must be [1,8,2,2]"), std::string::npos) << out.status();
}

// The sampled column matrix holds every channel's taps at every output pixel: C times the offsets' size, and
// both come from the request. It is bounded like a tensor (and charged to the run's budget): 16 channels of
// a 3x3 kernel over 64 x 64 pixels are a 2.25 MiB matrix from a 256 KiB X and 288 KiB of offsets, refused
// past a 1 MiB limit; 4 channels, 576 KiB, are not.
TEST(DeformConvTest, RefusesAColumnMatrixPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  const auto deform = [](int64_t channels) {
    return OpTest("DeformConv", 22)
        .Input("X", Zeros({1, channels, 64, 64}))
        .Input("W", Zeros({1, channels, 3, 3}))
        .Input("offset", Zeros({1, 18, 64, 64}))
        .Attr("pads", std::vector<int64_t>{1, 1, 1, 1})
        .Output("Y")
        .Run();
  };
  auto wide = deform(16);
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kResourceExhausted) << wide.status();
  auto narrow = deform(4);
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ((*narrow)[0].shape(), (Shape{1, 1, 64, 64}));
}

}  // namespace
}  // namespace onnxserve
