// Col2Im and CenterCropPad on small cases worked out by hand.
#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

TEST(Col2ImTest, OverlappingBlocksAddUp) {
  // Four 2x2 blocks of ones on a 3x3 image: each pixel counts the blocks covering it.
  auto out = OpTest("Col2Im", 18).Input("x", Tensor::FromVector<float>({1, 4, 4}, std::vector<float>(16, 1)))
                 .Input("image", Tensor::FromVector<int64_t>({2}, {3, 3}))
                 .Input("block", Tensor::FromVector<int64_t>({2}, {2, 2})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1}), (*out)[0]));
}

// image_shape and block_shape are inputs, so data: a zero or negative dim, a product past int64 or a dilated
// block past it is an error (a zero block once divided C by 0).
TEST(Col2ImTest, HostileShapesAndAttributesAreErrors) {
  constexpr int64_t kHuge = int64_t{1} << 62;
  const Tensor x = Tensor::FromVector<float>({1, 4, 4}, std::vector<float>(16, 1));
  auto run = [&](std::vector<int64_t> image, std::vector<int64_t> block, std::vector<int64_t> dilations = {}) {
    OpTest test("Col2Im", 18);
    test.Input("x", x).Input("image", Tensor::FromVector<int64_t>({2}, image))
        .Input("block", Tensor::FromVector<int64_t>({2}, block)).Output("y");
    if (!dilations.empty()) test.Attr("dilations", dilations);
    return test.Run();
  };
  EXPECT_FALSE(run({3, 3}, {0, 2}).ok());
  EXPECT_FALSE(run({-3, 3}, {2, 2}).ok());
  EXPECT_FALSE(run({kHuge, kHuge}, {1, 1}).ok());
  EXPECT_FALSE(run({3, 3}, {kHuge, 4}).ok());
  EXPECT_FALSE(run({3, 3}, {2, 2}, {kHuge, 1}).ok());
}

TEST(Col2ImTest, StridesAndPadsPlaceBlocks) {
  // 1-row image of width 4, 1x2 blocks at stride 2 with one pad column each side: blocks start at -1, 1, 3;
  // the padded columns are dropped.
  auto out = OpTest("Col2Im", 18).Input("x", Tensor::FromVector<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6}))
                 .Input("image", Tensor::FromVector<int64_t>({2}, {1, 4}))
                 .Input("block", Tensor::FromVector<int64_t>({2}, {1, 2}))
                 .Attr("strides", std::vector<int64_t>{1, 2}).Attr("pads", std::vector<int64_t>{0, 1, 0, 1})
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // Block b covers columns (2b - 1, 2b); row 0 of x is each block's first element, row 1 its second.
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1, 1, 1, 4}, {4, 2, 5, 3}), (*out)[0]));
}

TEST(CenterCropPadTest, CropsAndPadsAroundTheCenter) {
  // Axis 0: 5 -> 2 keeps rows 1..2 (floor of 3/2 cropped at the start); axis 1: 1 -> 4 pads 1 before, 2 after.
  auto out = OpTest("CenterCropPad", 18).Input("x", Tensor::FromVector<int32_t>({5, 1}, {1, 2, 3, 4, 5}))
                 .Input("shape", Tensor::FromVector<int64_t>({2}, {2, 4})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int32_t>({2, 4}, {0, 2, 0, 0, 0, 3, 0, 0}), (*out)[0]));
}

TEST(CenterCropPadTest, AxesSelectWhichDimsChange) {
  auto out = OpTest("CenterCropPad", 18).Input("x", Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
                 .Input("shape", Tensor::FromVector<int64_t>({1}, {1})).Attr("axes", std::vector<int64_t>{-1})
                 .Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 1}, {2, 5}), (*out)[0]));
}

// A scalar has no axis 0, though NormalizeAxis accepts 0 for rank 0: its dim and the output's were read and
// written through an empty shape (a null write that killed the process).
TEST(CenterCropPadTest, AScalarHasNoAxisToCropOrPad) {
  auto out = OpTest("CenterCropPad", 18).Input("x", Tensor::Scalar(1.0f))
                 .Input("shape", Tensor::FromVector<int64_t>({1}, {4})).Attr("axes", std::vector<int64_t>{0})
                 .Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

}  // namespace
}  // namespace onnxserve
