// RotaryEmbedding: rotations by 90 degrees (cos 0, sin 1) and 0 degrees worked out by hand from the
// spec's formula: (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2).
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

// One token, one head [1,2,3,4]; cache row 1 rotates the first pair by 90 degrees, the second by 0.
absl::StatusOr<std::vector<Tensor>> RotateToken(int64_t interleaved) {
  return OpTest("RotaryEmbedding", 23)
      .Input("x", Floats({1, 1, 1, 4}, {1, 2, 3, 4}))
      .Input("cos", Floats({2, 2}, {1, 1, 0, 1}))
      .Input("sin", Floats({2, 2}, {0, 0, 1, 0}))
      .Input("pos", Tensor::FromVector<int64_t>({1, 1}, {1}))
      .Attr("interleaved", interleaved)
      .Output("y")
      .Run();
}

TEST(RotaryTest, HalvesPairFeatureIWithIPlusHalf) {
  auto out = RotateToken(0);
  ASSERT_TRUE(out.ok()) << out.status();
  // Pairs (x0, x2) rotated by 90 degrees and (x1, x3) kept.
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 4}, {-3, 2, 1, 4}), (*out)[0]));
}

TEST(RotaryTest, InterleavedPairsAdjacentFeatures) {
  auto out = RotateToken(1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 4}, {-2, 1, 3, 4}), (*out)[0]));
}

TEST(RotaryTest, PartialRotationPassesTheRestThrough) {
  auto out = OpTest("RotaryEmbedding", 23)
                 .Input("x", Floats({1, 1, 1, 4}, {1, 2, 3, 4}))
                 .Input("cos", Floats({1, 1}, {0}))
                 .Input("sin", Floats({1, 1}, {1}))
                 .Input("pos", Tensor::FromVector<int64_t>({1, 1}, {0}))
                 .Attr("rotary_embedding_dim", int64_t{2})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 1, 4}, {-2, 1, 3, 4}), (*out)[0]));
}

TEST(RotaryTest, ThreeDimensionalInputWithoutPositionIdsRotatesEveryHead) {
  // [B,S,H*D] with two heads of size 2; caches are [B,S,D/2].
  auto out = OpTest("RotaryEmbedding", 23)
                 .Input("x", Floats({1, 1, 4}, {1, 2, 3, 4}))
                 .Input("cos", Floats({1, 1, 1}, {0}))
                 .Input("sin", Floats({1, 1, 1}, {1}))
                 .Attr("num_heads", int64_t{2})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 1, 4}, {-2, 1, -4, 3}), (*out)[0]));
}

TEST(RotaryTest, OutOfRangePositionIsAnError) {
  auto out = OpTest("RotaryEmbedding", 23)
                 .Input("x", Floats({1, 1, 1, 2}, {1, 2}))
                 .Input("cos", Floats({1, 1}, {1}))
                 .Input("sin", Floats({1, 1}, {0}))
                 .Input("pos", Tensor::FromVector<int64_t>({1, 1}, {5}))
                 .Output("y")
                 .Run();
  EXPECT_FALSE(out.ok());
}

// The caches share X's type: they were read as X's element type whatever theirs was, so float16 caches under
// a double X were read four times past their end (cache row 1023 of 1024 at byte 16368 of 4096).
TEST(RotaryTest, CachesOfAnotherTypeThanXAreAnError) {
  const Tensor half_cache(DataType::kFloat16, {1024, 1});
  auto out = OpTest("RotaryEmbedding", 23)
                 .Input("x", Tensor::FromVector<double>({1, 1, 1, 2}, {1, 2}))
                 .Input("cos", half_cache)
                 .Input("sin", half_cache)
                 .Input("pos", Tensor::FromVector<int64_t>({1, 1}, {1023}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

}  // namespace
}  // namespace onnxserve
