// Resize and Upsample: expected values worked out by hand from the spec's formulas (coordinate maps,
// linear/cubic weights, antialiasing's stretched filter, extrapolation), aspect-ratio policies, the
// versions' input layouts, strings, errors.
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
Tensor Ints(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
}
Tensor Scales(const std::vector<float>& v) { return Floats({static_cast<int64_t>(v.size())}, v); }

// Resize-19 of `x` by `scales` with the given string attributes.
absl::StatusOr<std::vector<Tensor>> ResizeByScales(
    Tensor x, const std::vector<float>& scales,
    const std::vector<std::pair<std::string, std::string>>& attrs) {
  OpTest test("Resize", 19);
  test.Input("x", std::move(x)).NoInput().Input("scales", Scales(scales)).Output("y");
  for (const auto& [name, value] : attrs) test.Attr(name, value);
  return test.Run();
}

TEST(ResizeTest, NearestRepeatsPixels) {
  // The spec's example: [[1,2],[3,4]] by [1,1,2,3].
  auto out = ResizeByScales(Floats({1, 1, 2, 2}, {1, 2, 3, 4}), {1, 1, 2, 3}, {{"mode", "nearest"}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(
      Floats({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}),
      (*out)[0]));
}

TEST(ResizeTest, LinearHalfPixelClampsAtTheEdges) {
  // x_original = (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25; outside [0, 1] the edge value repeats.
  auto out = ResizeByScales(Floats({2}, {1, 2}), {2}, {{"mode", "linear"}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({4}, {1, 1.25f, 1.75f, 2}), (*out)[0]));
}

TEST(ResizeTest, AlignCornersKeepsTheEndsFixed) {
  auto out = OpTest("Resize", 13)
                 .Input("x", Floats({2}, {1, 2}))
                 .NoInput()
                 .NoInput()
                 .Input("sizes", Ints({3}))
                 .Attr("mode", std::string("linear"))
                 .Attr("coordinate_transformation_mode", std::string("align_corners"))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {1, 1.5f, 2}), (*out)[0]));
}

TEST(ResizeTest, CubicWeightFollowsCoeffA) {
  // Asymmetric x2: output 5 sits at 2.5, between the 1 at index 2 and its neighbours 0. The tap at
  // distance 0.5 weighs (A+2)/8 - (A+3)/4 + 1 = (4 - A) / 8.
  for (const float a : {-0.75f, -0.5f}) {
    OpTest test("Resize", 19);
    test.Input("x", Floats({5}, {0, 0, 1, 0, 0}))
        .NoInput()
        .Input("scales", Scales({2}))
        .Attr("mode", std::string("cubic"))
        .Attr("coordinate_transformation_mode", std::string("asymmetric"))
        .Attr("cubic_coeff_a", a)
        .Output("y");
    auto out = test.Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_NEAR((*out)[0].data<float>()[5], (4 - a) / 8, 1e-6) << "A = " << a;
    EXPECT_FLOAT_EQ((*out)[0].data<float>()[4], 1.0f) << "integral positions copy the input";
  }
}

TEST(ResizeTest, AntialiasStretchesTheLinearFilterWhenDownscaling) {
  // Scale 0.5: outputs sit at 0.5, 2.5, 4.5, 6.5. Plain linear averages the two neighbours; antialiased, the
  // tent is twice as wide, so four neighbours weigh 1/8, 3/8, 3/8, 1/8 and the 4 at index 3 spreads out.
  const Tensor x = Floats({8}, {0, 0, 0, 4, 0, 0, 0, 0});
  auto plain = ResizeByScales(x, {0.5f}, {{"mode", "linear"}});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(TensorsClose(Floats({4}, {0, 2, 0, 0}), (*plain)[0]));
  OpTest test("Resize", 18);
  test.Input("x", x)
      .NoInput()
      .Input("scales", Scales({0.5f}))
      .Attr("mode", std::string("linear"))
      .Attr("antialias", int64_t{1})
      .Output("y");
  auto smooth = test.Run();
  ASSERT_TRUE(smooth.ok()) << smooth.status();
  EXPECT_TRUE(TensorsClose(Floats({4}, {0, 1.5f, 0.5f, 0}), (*smooth)[0]));
}

TEST(ResizeTest, TfCropAndResizeExtrapolatesOutsideTheInput) {
  // roi [0, 2] of a length-3 axis: positions 0, 2, 4; 4 lies outside and takes extrapolation_value.
  auto out = OpTest("Resize", 19)
                 .Input("x", Floats({3}, {1, 2, 3}))
                 .Input("roi", Floats({2}, {0, 2}))
                 .NoInput()
                 .Input("sizes", Ints({3}))
                 .Attr("mode", std::string("linear"))
                 .Attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"))
                 .Attr("extrapolation_value", 10.0f)
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({3}, {1, 3, 10}), (*out)[0]));
}

// A NaN in the request's roi made every position NaN, which passed the "outside the input" test (NaN
// compares false) and was converted to int64, undefined behaviour that read element 0 on x86. A position
// that is not a number lies nowhere in the input: it takes extrapolation_value.
TEST(ResizeTest, TfCropAndResizeExtrapolatesANanRoi) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const std::string mode : {"nearest", "linear", "cubic"}) {
    auto out = OpTest("Resize", 19)
                   .Input("x", Floats({3}, {1, 2, 3}))
                   .Input("roi", Floats({2}, {nan, 2}))
                   .NoInput()
                   .Input("sizes", Ints({2}))
                   .Attr("mode", mode)
                   .Attr("coordinate_transformation_mode", std::string("tf_crop_and_resize"))
                   .Attr("extrapolation_value", 10.0f)
                   .Output("y")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Floats({2}, {10, 10}), (*out)[0])) << mode;
  }
}

TEST(ResizeTest, AspectRatioPoliciesScaleEveryAxisAlike) {
  // 2x4 to sizes 3x3: scales 1.5 and 0.75. not_larger uses 0.75 (2x3), not_smaller 1.5 (3x6).
  const std::vector<std::pair<std::string, Shape>> cases = {{"not_larger", {1, 2, 3}},
                                                            {"not_smaller", {1, 3, 6}}};
  for (const auto& [policy, shape] : cases) {
    auto out = OpTest("Resize", 18)
                   .Input("x", Floats({1, 2, 4}, std::vector<float>(8, 1.0f)))
                   .NoInput()
                   .NoInput()
                   .Input("sizes", Ints({3, 3}))
                   .Attr("axes", std::vector<int64_t>{1, -1})
                   .Attr("keep_aspect_ratio_policy", policy)
                   .Output("y")
                   .Run();
    ASSERT_TRUE(out.ok()) << policy << ": " << out.status();
    EXPECT_EQ((*out)[0].shape(), shape) << policy;
  }
}

TEST(ResizeTest, NearestMovesStrings) {
  auto out = ResizeByScales(Tensor::FromVector<std::string>({2}, {"a", "b"}), {2}, {{"mode", "nearest"}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({4}, {"a", "a", "b", "b"}), (*out)[0]));
}

TEST(ResizeTest, RejectsBothScalesAndSizes) {
  auto out = OpTest("Resize", 13)
                 .Input("x", Floats({2}, {1, 2}))
                 .NoInput()
                 .Input("scales", Scales({2}))
                 .Input("sizes", Ints({4}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UpsampleTest, ScalesMoveFromAttributeToInputThenTheOpIsDeprecated) {
  const Tensor expected = Floats({1, 4}, {1, 1, 2, 2});
  auto v7 = OpTest("Upsample", 7)
                .Input("x", Floats({1, 2}, {1, 2}))
                .Attr("scales", std::vector<float>{1, 2})
                .Output("y")
                .Run();
  ASSERT_TRUE(v7.ok()) << v7.status();
  EXPECT_TRUE(TensorsClose(expected, (*v7)[0]));
  auto v9 = OpTest("Upsample", 9)
                .Input("x", Floats({1, 2}, {1, 2}))
                .Input("scales", Scales({1, 2}))
                .Output("y")
                .Run();
  ASSERT_TRUE(v9.ok()) << v9.status();
  EXPECT_TRUE(TensorsClose(expected, (*v9)[0]));
  auto v10 = OpTest("Upsample", 10)
                 .Input("x", Floats({1, 2}, {1, 2}))
                 .Input("scales", Scales({1, 2}))
                 .Output("y")
                 .Run();
  ASSERT_FALSE(v10.ok());
  EXPECT_NE(v10.status().message().find("Resize"), std::string::npos) << v10.status();
}

TEST(ResizeTest, RejectsHugeAndNonFiniteScalesAndSizes) {
  const Tensor x = Floats({1, 2}, {1, 2});
  EXPECT_EQ(ResizeByScales(x, {1, 1e30f}, {}).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ResizeByScales(x, {1, std::numeric_limits<float>::infinity()}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResizeByScales(x, {1, 1e12f}, {}).status().code(), absl::StatusCode::kResourceExhausted);
  auto sizes = OpTest("Resize", 19)
                   .Input("x", x)
                   .NoInput()
                   .NoInput()
                   .Input("sizes", Ints({1, int64_t{1} << 40}))
                   .Output("y")
                   .Run();
  EXPECT_EQ(sizes.status().code(), absl::StatusCode::kResourceExhausted) << sizes.status();
}

// A scale of 1e-30 leaves no output, but the antialiased filter was still stretched by 1 / scale and its
// 2e30 taps converted to int64 (undefined; checked here under the release build): an empty output.
TEST(ResizeTest, AntialiasWithAScaleLeavingNoOutputGivesAnEmptyTensor) {
  auto out = OpTest("Resize", 18)
                 .Input("x", Floats({4}, {1, 2, 3, 4}))
                 .NoInput()
                 .Input("scales", Scales({1e-30f}))
                 .Attr("mode", std::string("linear"))
                 .Attr("antialias", int64_t{1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{0}));
}

// A string's characters are not in a tensor's byte size: one 4 KiB string resized to 512 elements is 2 MiB
// of characters, past the 1 MiB limit.
TEST(ResizeTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  auto out = ResizeByScales(Tensor::FromVector<std::string>({1}, {std::string(4096, 'a')}), {512},
                            {{"mode", "nearest"}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

// An antialiased filter is stretched by 1 / scale: cubic resizing [2^16] to [1] weighs 2^18 taps, a 2 MiB
// table of input indices (and one of weights) for a 256 KiB X and a one-element Y. The tables are bounded
// like tensors (and charged to the run's budget): past a 1 MiB limit they are refused, not built.
TEST(ResizeTest, RefusesAntialiasTapTablesPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  const auto to_one = [](int64_t n) {
    return OpTest("Resize", 19)
        .Input("x", Floats({n}, std::vector<float>(n, 1)))
        .NoInput()
        .Input("scales", Scales({1.5f / static_cast<float>(n)}))
        .Attr("mode", std::string("cubic"))
        .Attr("antialias", int64_t{1})
        .Output("y")
        .Run();
  };
  auto wide = to_one(int64_t{1} << 16);
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kResourceExhausted) << wide.status();
  auto narrow = to_one(int64_t{1} << 12);  // 128 KiB tables
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ((*narrow)[0].shape(), Shape{1});
}

}  // namespace
}  // namespace onnxserve
