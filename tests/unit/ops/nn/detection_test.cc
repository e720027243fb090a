// NonMaxSuppression and RoiAlign: the spec's NMS example and RoiAlign values worked out by hand from the
// bilinear sampling rule.
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

}  // namespace
}  // namespace onnxserve
