// Transpose against a plain reference on random shapes and perms; DepthToSpace/SpaceToDepth from the spec's
// formulas.
#include <algorithm>
#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::OpTest;
using testing::TensorsClose;

Tensor Iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::FromVector<float>(std::move(shape), v);
}

// out[i_0..i_r] = in[j] with j[perm[d]] = i[d], one element at a time.
Tensor ReferenceTranspose(const Tensor& in, const std::vector<int64_t>& perm) {
  Shape out_shape(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) out_shape[d] = in.dim(perm[d]);
  Tensor out(DataType::kFloat, out_shape);
  std::vector<int64_t> in_strides(perm.size(), 1);
  for (int64_t d = in.rank() - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in.dim(d + 1);
  for (int64_t flat = 0; flat < out.NumElements(); ++flat) {
    int64_t rest = flat, src = 0;
    for (int64_t d = out.rank() - 1; d >= 0; --d) {
      src += (rest % out_shape[d]) * in_strides[perm[d]];
      rest /= out_shape[d];
    }
    out.data<float>()[flat] = in.data<float>()[src];
  }
  return out;
}

TEST(TransposeTest, MatchesTheReferenceOnRandomShapesAndPerms) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const int rank = 1 + trial % 5;
    Shape shape(rank);
    for (auto& d : shape) d = std::uniform_int_distribution<int64_t>(1, 5)(rng);
    if (trial % 13 == 0) shape[0] = 0;  // empty tensors too
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const Tensor x = Iota(shape);
    auto out = OpTest("Transpose", 13).Input("x", x).Attr("perm", perm).Output("y").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(ReferenceTranspose(x, perm), (*out)[0])) << ShapeToString(shape) << " perm "
                                                                       << ShapeToString(perm);
  }
}

TEST(TransposeTest, LargeTensorsMatchTheReference) {
  // Big enough to be split across threads: NCHW -> NHWC and the attention [0,2,1,3] perm.
  const Tensor x = Iota({2, 64, 33, 35});
  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 2, 3, 1}, std::vector<int64_t>{0, 2, 1, 3}}) {
    auto out = OpTest("Transpose", 21).Input("x", x).Attr("perm", perm).Output("y").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(ReferenceTranspose(x, perm), (*out)[0]));
  }
}

TEST(TransposeTest, DefaultReversesTheDims) {
  auto out = OpTest("Transpose", 1).Input("x", Iota({2, 3, 4})).Output("y").Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(ReferenceTranspose(Iota({2, 3, 4}), {2, 1, 0}), (*out)[0]));
}

TEST(TransposeTest, MovesStrings) {
  auto out = OpTest("Transpose", 13)
                 .Input("x", Tensor::FromVector<std::string>({2, 2}, {"a", "b", "c", "d"}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2, 2}, {"a", "c", "b", "d"}), (*out)[0]));
}

TEST(TransposeTest, RejectsAnInvalidPerm) {
  auto out = OpTest("Transpose", 13).Input("x", Iota({2, 3})).Attr("perm", std::vector<int64_t>{0, 0}).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// DepthToSpace per the spec: DCR reads channel (by * b + bx) * C' + c, CRD reads c * b * b + by * b + bx.
Tensor ReferenceDepthToSpace(const Tensor& in, int64_t b, bool crd) {
  const int64_t n = in.dim(0), c = in.dim(1) / (b * b), h = in.dim(2), w = in.dim(3);
  Tensor out(DataType::kFloat, {n, c, h * b, w * b});
  float* o = out.data<float>();
  for (int64_t in_ = 0; in_ < n; ++in_)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t y = 0; y < h * b; ++y)
        for (int64_t x = 0; x < w * b; ++x) {
          const int64_t by = y % b, bx = x % b;
          const int64_t channel = crd ? ic * b * b + by * b + bx : (by * b + bx) * c + ic;
          *o++ = in.data<float>()[((in_ * in.dim(1) + channel) * h + y / b) * w + x / b];
        }
  return out;
}

TEST(DepthToSpaceTest, DcrAndCrdFollowTheSpecFormulas) {
  const Tensor x = Iota({2, 8, 3, 2});
  auto dcr = OpTest("DepthToSpace", 13).Input("x", x).Attr("blocksize", int64_t{2}).Output("y").Run();
  ASSERT_TRUE(dcr.ok()) << dcr.status();
  EXPECT_TRUE(TensorsClose(ReferenceDepthToSpace(x, 2, false), (*dcr)[0]));
  auto crd = OpTest("DepthToSpace", 11)
                 .Input("x", x)
                 .Attr("blocksize", int64_t{2})
                 .Attr("mode", std::string("CRD"))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(crd.ok()) << crd.status();
  EXPECT_TRUE(TensorsClose(ReferenceDepthToSpace(x, 2, true), (*crd)[0]));
}

// A blocksize of 2^32 squared to 2^64, which wrapped to 0: "channels % 0" killed the process.
TEST(DepthToSpaceTest, ABlockWhoseSquareOverflowsIsAnError) {
  auto out = OpTest("DepthToSpace", 13).Input("x", Iota({1, 4, 1, 1})).Attr("blocksize", int64_t{1} << 32)
                 .Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

TEST(SpaceToDepthTest, InvertsDepthToSpaceDcr) {
  const Tensor x = Iota({1, 3, 4, 6});
  auto s2d = OpTest("SpaceToDepth", 13).Input("x", x).Attr("blocksize", int64_t{2}).Output("y").Run();
  ASSERT_TRUE(s2d.ok()) << s2d.status();
  EXPECT_EQ((*s2d)[0].shape(), (Shape{1, 12, 2, 3}));
  auto back = OpTest("DepthToSpace", 1).Input("y", (*s2d)[0]).Attr("blocksize", int64_t{2}).Output("z").Run();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(TensorsClose(x, (*back)[0]));
}

TEST(SpaceToDepthTest, RejectsSizesNotDivisibleByTheBlock) {
  auto out = OpTest("SpaceToDepth", 13).Input("x", Iota({1, 1, 3, 4})).Attr("blocksize", int64_t{2}).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// With h = w = 0 every blocksize divides them: 2 channels and a blocksize of 2^31 made the output depth
// 2 * 2^62, which overflowed (undefined) to a negative dim: an exception from the output's constructor,
// answered INTERNAL, instead of a depth past int64.
TEST(SpaceToDepthTest, ADepthPastInt64IsAnErrorForEmptyImages) {
  auto out = OpTest("SpaceToDepth", 13).Input("x", Tensor(DataType::kFloat, {1, 2, 0, 0}))
                 .Attr("blocksize", int64_t{1} << 31).Output("y").Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

}  // namespace
}  // namespace onnxserve
