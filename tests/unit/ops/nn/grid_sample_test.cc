// GridSample and AffineGrid: values worked out by hand from the coordinate maps of the spec
// (align_corners: -1/1 are corner pixel centers; otherwise corner edges) and the padding modes.
#include <limits>
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

// Samples the 2x2 image [[1,2],[3,4]] at one normalized point (x, y).
absl::StatusOr<std::vector<Tensor>> SampleAt(float x, float y, int64_t align_corners, const std::string& mode,
                                             const std::string& padding, int opset = 20) {
  return OpTest("GridSample", opset)
      .Input("x", Floats({1, 1, 2, 2}, {1, 2, 3, 4}))
      .Input("grid", Floats({1, 1, 1, 2}, {x, y}))
      .Attr("align_corners", align_corners)
      .Attr("mode", mode)
      .Attr("padding_mode", padding)
      .Output("y")
      .Run();
}

float Value(const absl::StatusOr<std::vector<Tensor>>& out) { return (*out)[0].data<float>()[0]; }

TEST(GridSampleTest, LinearAtTheCenterAveragesAllPixels) {
  auto out = SampleAt(0, 0, 0, "linear", "zeros");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ(Value(out), 2.5f);
}

TEST(GridSampleTest, AlignCornersMapsMinusOneToTheFirstPixelCenter) {
  auto out = SampleAt(-1, -1, 1, "linear", "zeros");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ(Value(out), 1.0f);
}

TEST(GridSampleTest, PaddingModesAtTheCornerEdge) {
  // Without align_corners, (-1, -1) is pixel (-0.5, -0.5): a quarter from pixel (0, 0), the rest padding.
  auto zeros = SampleAt(-1, -1, 0, "linear", "zeros");
  auto border = SampleAt(-1, -1, 0, "linear", "border");
  auto reflection = SampleAt(-1, -1, 0, "linear", "reflection");
  ASSERT_TRUE(zeros.ok() && border.ok() && reflection.ok());
  EXPECT_FLOAT_EQ(Value(zeros), 0.25f);
  EXPECT_FLOAT_EQ(Value(border), 1.0f);
  EXPECT_FLOAT_EQ(Value(reflection), 1.0f);
}

// Found by the model fuzzer: a NaN or huge grid coordinate was converted to int64 (undefined behaviour).
// NaN samples nothing; a coordinate far outside reads the padding as any coordinate outside does.
TEST(GridSampleTest, NanAndHugeCoordinatesReadThePadding) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const std::string mode : {"nearest", "linear", "cubic"}) {
    auto not_a_number = SampleAt(nan, 0, 0, mode, "zeros");
    ASSERT_TRUE(not_a_number.ok()) << mode << ": " << not_a_number.status();
    EXPECT_EQ(Value(not_a_number), 0.0f) << mode;
    auto huge = SampleAt(1e30f, 0, 0, mode, "zeros");
    ASSERT_TRUE(huge.ok()) << mode << ": " << huge.status();
    EXPECT_EQ(Value(huge), 0.0f) << mode;
    auto border = SampleAt(-inf, -1e30f, 1, mode, "border");
    ASSERT_TRUE(border.ok()) << mode << ": " << border.status();
    EXPECT_FLOAT_EQ(Value(border), 1.0f) << mode;  // clamped to the first pixel
    auto reflection = SampleAt(inf, 0, 0, mode, "reflection");
    ASSERT_TRUE(reflection.ok()) << mode << ": " << reflection.status();
    EXPECT_EQ(Value(reflection), 0.0f) << mode;  // reflected infinitely often: lost, so nothing sampled
  }
}

TEST(GridSampleTest, NearestPicksThePixelAndSixteenUsesTheOldModeNames) {
  auto nearest = SampleAt(0.6f, 0.6f, 0, "nearest", "zeros");
  ASSERT_TRUE(nearest.ok()) << nearest.status();
  EXPECT_FLOAT_EQ(Value(nearest), 4.0f);
  auto v16 = SampleAt(0, 0, 0, "bilinear", "zeros", 16);
  ASSERT_TRUE(v16.ok()) << v16.status();
  EXPECT_FLOAT_EQ(Value(v16), 2.5f);
  EXPECT_FALSE(SampleAt(0, 0, 0, "linear", "zeros", 16).ok());
}

TEST(GridSampleTest, CubicReproducesALinearRamp) {
  // Keys' cubic kernel reproduces linear functions away from the borders: sample the ramp 0..5 at 2.5.
  auto out = OpTest("GridSample", 20)
                 .Input("x", Floats({1, 1, 6}, {0, 1, 2, 3, 4, 5}))
                 .Input("grid", Floats({1, 1, 1}, {0}))
                 .Attr("mode", std::string("cubic"))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(Value(out), 2.5f, 1e-5);
}

TEST(GridSampleTest, OneDimensionalFromVersionTwenty) {
  auto out = OpTest("GridSample", 20)
                 .Input("x", Floats({1, 1, 3}, {10, 20, 30}))
                 .Input("grid", Floats({1, 1, 1}, {0}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ(Value(out), 20.0f);
}

TEST(AffineGridTest, IdentityGivesPixelCentersAndTranslationShiftsThem) {
  auto out = OpTest("AffineGrid", 20)
                 .Input("theta", Floats({1, 2, 3}, {1, 0, 1, 0, 1, 0}))
                 .Input("size", Tensor::FromVector<int64_t>({4}, {1, 1, 2, 2}))
                 .Output("grid")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // Centers at -0.5 and 0.5 on each axis; x is shifted by 1.
  EXPECT_TRUE(
      TensorsClose(Floats({1, 2, 2, 2}, {0.5f, -0.5f, 1.5f, -0.5f, 0.5f, 0.5f, 1.5f, 0.5f}), (*out)[0]));
}

TEST(AffineGridTest, AlignCornersSpansMinusOneToOne) {
  auto out = OpTest("AffineGrid", 20)
                 .Input("theta", Floats({1, 2, 3}, {1, 0, 0, 0, 1, 0}))
                 .Input("size", Tensor::FromVector<int64_t>({4}, {1, 1, 1, 2}))
                 .Attr("align_corners", int64_t{1})
                 .Output("grid")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 2, 2}, {-1, -1, 1, -1}), (*out)[0]));
}

// An image with no rows: border padding clamped to [0, -1] (undefined) and read row 0 of an empty tensor.
// There is nothing to sample, so every mode gives the zero padding.
TEST(GridSampleTest, AnEmptyAxisSamplesZeros) {
  for (const std::string padding : {"zeros", "border", "reflection"}) {
    for (const std::string mode : {"nearest", "linear", "cubic"}) {
      auto out = OpTest("GridSample", 20)
                     .Input("x", Tensor(DataType::kFloat, {1, 1, 0, 2}))
                     .Input("grid", Floats({1, 1, 2, 2}, {-1, -1, 0.5f, 0.5f}))
                     .Attr("mode", mode)
                     .Attr("padding_mode", padding)
                     .Output("y")
                     .Run();
      ASSERT_TRUE(out.ok()) << mode << ", " << padding << ": " << out.status();
      EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 2}, {0, 0}), (*out)[0])) << mode << ", " << padding;
    }
  }
}

}  // namespace
}  // namespace onnxserve
