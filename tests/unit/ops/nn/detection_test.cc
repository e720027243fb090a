// NonMaxSuppression, RoiAlign and MaxRoiPool: the spec's NMS example, RoiAlign values worked out by hand from
// the bilinear sampling rule, MaxRoiPool bins worked out by hand from Fast R-CNN's rule.
#include <limits>
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

// The spec's suppress_by_IOU example: three clusters of boxes along x.
OpTest NmsExample(int opset) {
  OpTest test("NonMaxSuppression", opset);
  test.Input("boxes", Floats({1, 6, 4}, {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                                         0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101}))
      .Input("scores", Floats({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}))
      .Input("max", Tensor::FromVector<int64_t>({1}, {3}))
      .Input("iou", Floats({1}, {0.5f}));
  return test;
}

TEST(NonMaxSuppressionTest, KeepsTheBestBoxOfEachCluster) {
  for (int opset : {10, 11}) {
    auto out = NmsExample(opset).Input("score", Floats({1}, {0})).Output("selected").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}), (*out)[0]));
  }
}

TEST(NonMaxSuppressionTest, ScoreThresholdAndOutputLimit) {
  auto out = NmsExample(11).Input("score", Floats({1}, {0.4f})).Output("selected").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({2, 3}, {0, 0, 3, 0, 0, 0}), (*out)[0]));
}

TEST(NonMaxSuppressionTest, NoLimitMeansNoOutput) {
  auto out = OpTest("NonMaxSuppression", 11)
                 .Input("boxes", Floats({1, 1, 4}, {0, 0, 1, 1}))
                 .Input("scores", Floats({1, 1, 1}, {0.9f}))
                 .Output("selected")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{0, 3}));
}

// Exporters write INT64_MAX for "no limit": converted through double it became 2^63, which wrapped to a
// negative limit and selected nothing.
TEST(NonMaxSuppressionTest, TheLargestLimitSelectsLikeNoLimitAtAll) {
  OpTest test("NonMaxSuppression", 11);
  test.Input("boxes", Floats({1, 6, 4}, {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                                        0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101}))
      .Input("scores", Floats({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}))
      .Input("max", Tensor::FromVector<int64_t>({1}, {std::numeric_limits<int64_t>::max()}))
      .Input("iou", Floats({1}, {0.5f}))
      .Output("selected");
  auto out = test.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<int64_t>({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}), (*out)[0]));
}

// One 1x1 bin with one sample over the 2x2 image [[1,2],[3,4]] and the RoI [0,0,1,1].
absl::StatusOr<std::vector<Tensor>> PoolUnitRoi(int opset, const std::string& mode) {
  return OpTest("RoiAlign", opset)
      .Input("x", Floats({1, 1, 2, 2}, {1, 2, 3, 4}))
      .Input("rois", Floats({1, 4}, {0, 0, 1, 1}))
      .Input("batch", Tensor::FromVector<int64_t>({1}, {0}))
      .Attr("sampling_ratio", int64_t{1})
      .Attr("mode", mode)
      .Output("y")
      .Run();
}

TEST(RoiAlignTest, HalfPixelShiftsTheRoiByHalfAPixel) {
  // -16 defaults to half_pixel: the RoI spans [-0.5, 0.5], its one sample lands on pixel (0, 0).
  auto out = PoolUnitRoi(16, "avg");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 1}, {1}), (*out)[0]));
}

TEST(RoiAlignTest, VersionTenSamplesWithoutTheShift) {
  // The sample lands on (0.5, 0.5): the mean of the four pixels.
  auto out = PoolUnitRoi(10, "avg");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 1}, {2.5f}), (*out)[0]));
}

TEST(RoiAlignTest, MaxTakesTheLargestWeightedTap) {
  // At (0.5, 0.5) each tap weighs 1/4: the largest weighted tap is 4 / 4.
  auto out = PoolUnitRoi(10, "max");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 1}, {1}), (*out)[0]));
}

TEST(RoiAlignTest, BatchIndexOutOfRangeIsAnError) {
  auto out = OpTest("RoiAlign", 16)
                 .Input("x", Floats({1, 1, 2, 2}, {1, 2, 3, 4}))
                 .Input("rois", Floats({1, 4}, {0, 0, 1, 1}))
                 .Input("batch", Tensor::FromVector<int64_t>({1}, {1}))
                 .Output("y")
                 .Run();
  EXPECT_FALSE(out.ok());
}

absl::StatusOr<std::vector<Tensor>> PoolAdaptively(const std::vector<float>& roi, const std::string& mode) {
  return OpTest("RoiAlign", 16)
      .Input("x", Floats({1, 1, 2, 2}, {1, 2, 3, 4}))
      .Input("rois", Floats({1, 4}, roi))
      .Input("batch", Tensor::FromVector<int64_t>({1}, {0}))
      .Attr("mode", mode)
      .Output("y")
      .Run();
}

// With sampling_ratio 0 a bin takes ceil(extent / bins) samples per axis. A reversed RoI has negative
// extents on both axes: the counts multiplied to a positive 9 samples over a list of no taps, read past
// its end (a heap overflow from request data). As in ONNX Runtime, a bin with no sample pools to 0.
TEST(RoiAlignTest, AReversedOrNonFiniteRoiSamplesNothing) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const std::vector<float>& roi : std::vector<std::vector<float>>{{3, 3, 0, 0}, {0, 3, 1, 0}, {nan, 0, 1, 1}}) {
    for (const std::string mode : {"avg", "max"}) {
      auto out = PoolAdaptively(roi, mode);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 1}, {0}), (*out)[0])) << mode;
    }
  }
}

// A RoI of 1e30 pixels would take 1e60 samples per bin: refused before any is listed.
TEST(RoiAlignTest, ARoiTooLargeToSampleIsAnError) {
  auto out = PoolAdaptively({0, 0, 1e30f, 1e30f}, "avg");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

// A RoI's taps are listed before they are pooled, 48 bytes each: bounded in bytes like a tensor, not only in
// count. 4 x 4 bins of 64 x 64 samples are 2^16 taps (a count well within a 1 MiB limit) in 3 MiB, refused;
// 16 x 16 samples per bin, 192 KiB, are not.
TEST(RoiAlignTest, RefusesATapListPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  const auto align = [](int64_t ratio) {
    return OpTest("RoiAlign", 16)
        .Input("x", Floats({1, 1, 2, 2}, {1, 2, 3, 4}))
        .Input("rois", Floats({1, 4}, {0, 0, 1, 1}))
        .Input("batch", Tensor::FromVector<int64_t>({1}, {0}))
        .Attr("output_height", int64_t{4})
        .Attr("output_width", int64_t{4})
        .Attr("sampling_ratio", ratio)
        .Output("y")
        .Run();
  };
  auto dense = align(64);
  EXPECT_EQ(dense.status().code(), absl::StatusCode::kResourceExhausted) << dense.status();
  auto sparse = align(16);
  ASSERT_TRUE(sparse.ok()) << sparse.status();
  EXPECT_EQ((*sparse)[0].shape(), (Shape{1, 1, 4, 4}));
}

// Image 0 of X holds 4h + w at (h, w); image 1 holds -(4h + w) - 1.
Tensor RoiPoolInput() {
  std::vector<float> v(32);
  for (int i = 0; i < 16; ++i) {
    v[i] = static_cast<float>(i);
    v[16 + i] = -static_cast<float>(i) - 1;
  }
  return Floats({2, 1, 4, 4}, v);
}

OpTest MaxRoiPoolTest(Tensor rois, std::vector<int64_t> pooled_shape, float spatial_scale = 1.0f) {
  OpTest test("MaxRoiPool", 1);
  test.Input("X", RoiPoolInput()).Input("rois", std::move(rois))
      .Attr("pooled_shape", pooled_shape).Attr("spatial_scale", spatial_scale);
  return test;
}

TEST(MaxRoiPoolTest, TakesTheLargestPixelOfEachBin) {
  // The whole image in 2x2 bins of 2x2 pixels: their bottom-right pixels 5, 7, 13, 15. Then one pixel of
  // image 1, whose values are all negative.
  auto out = MaxRoiPoolTest(Floats({2, 5}, {0, 0, 0, 3, 3, 1, 0, 0, 0, 0}), {2, 2})
                 .Output("Y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 1, 2, 2}, {5, 7, 13, 15, -1, -1, -1, -1}), (*out)[0]));
}

TEST(MaxRoiPoolTest, ScalesRoundsAndOverlapsFractionalBins) {
  // [2, 2, 6, 6] * 0.5 = pixels 1..3 on both axes: bins of 1.5 pixels, [floor(0), ceil(1.5)) = rows 1-2 and
  // [floor(1.5), ceil(3)) = rows 2-3 (and the same columns): maxima at (2,2), (2,3), (3,2), (3,3).
  auto out = MaxRoiPoolTest(Floats({1, 5}, {0, 2, 2, 6, 6}), {2, 2}, 0.5f).Output("Y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2, 2}, {10, 11, 14, 15}), (*out)[0]));
}

TEST(MaxRoiPoolTest, BinOutsideTheImageIsZero) {
  // Pixels 3..10: bins of 8 rows and 4 columns from (3, 3); the second column bin [7, 11) lies past the image.
  auto out = MaxRoiPoolTest(Floats({1, 5}, {0, 3, 3, 10, 10}), {1, 2}).Output("Y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 2}, {15, 0}), (*out)[0]));
}

TEST(MaxRoiPoolTest, BatchIdOutOfRangeIsAnError) {
  auto out = MaxRoiPoolTest(Floats({1, 5}, {2, 0, 0, 1, 1}), {1, 1}).Output("Y").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  EXPECT_NE(out.status().message().find("batch_id 2"), std::string::npos) << out.status();
}

TEST(MaxRoiPoolTest, NonFiniteOrHugeCoordinateIsAnError) {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e30f}) {
    auto out = MaxRoiPoolTest(Floats({1, 5}, {0, 0, 0, bad, 1}), {1, 1}).Output("Y").Run();
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
    EXPECT_NE(out.status().message().find("coordinate"), std::string::npos) << out.status();
  }
}

TEST(MaxRoiPoolTest, HugePooledShapeIsResourceExhaustedBeforeAllocating) {
  auto out = MaxRoiPoolTest(Floats({1, 5}, {0, 0, 0, 1, 1}), {int64_t{1} << 40, int64_t{1} << 40}).Output("Y").Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

TEST(MaxRoiPoolTest, PooledShapeMustBeTwoPositiveDims) {
  for (const std::vector<int64_t>& pooled : {std::vector<int64_t>{0, 2}, std::vector<int64_t>{2}}) {
    auto out = MaxRoiPoolTest(Floats({1, 5}, {0, 0, 0, 1, 1}), pooled).Output("Y").Run();
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.status().message().find("pooled_shape"), std::string::npos) << out.status();
  }
}

// A RoI's sampling taps are charged to the run: a 1024 x 1024 RoI pooled into one bin with adaptive sampling
// has 2^20 taps (48 MiB) over a 1x1 image, which a 1 MiB budget refuses; a 16 x 16 one it takes.
TEST(RoiAlignTest, ARoisTapsCountAgainstTheBudget) {
  const auto pool = [](float extent) {
    return OpTest("RoiAlign", 16)
        .Input("x", Tensor::FromVector<float>({1, 1, 1, 1}, {1}))
        .Input("rois", Tensor::FromVector<float>({1, 4}, {0, 0, extent, extent}))
        .Input("batch", Tensor::FromVector<int64_t>({1}, {0}))
        .Attr("output_height", int64_t{1})
        .Attr("output_width", int64_t{1})
        .Output("y")
        .MemoryBudget(int64_t{1} << 20)
        .Run();
  };
  auto large = pool(1024);
  EXPECT_EQ(large.status().code(), absl::StatusCode::kResourceExhausted) << large.status();
  auto small = pool(16);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ((*small)[0].shape(), (Shape{1, 1, 1, 1}));
}

}  // namespace
}  // namespace onnxserve
