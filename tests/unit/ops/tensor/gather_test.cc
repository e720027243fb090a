// Gather (against a plain reference on random shapes and axes), GatherElements and GatherND (spec
// examples, batch_dims), negative and out-of-range indices, strings.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

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

// numpy.take(data, indices, axis) written the obvious way: one multi-index at a time.
Tensor ReferenceGather(const Tensor& data, const std::vector<int64_t>& indices, const Shape& indices_shape,
                       int64_t axis) {
  Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
  out_shape.insert(out_shape.end(), indices_shape.begin(), indices_shape.end());
  out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  Tensor out(DataType::kFloat, out_shape);
  const int64_t q = static_cast<int64_t>(indices_shape.size());
  for (int64_t flat = 0; flat < out.NumElements(); ++flat) {
    std::vector<int64_t> pos(out_shape.size());
    for (int64_t d = static_cast<int64_t>(out_shape.size()) - 1, rest = flat; d >= 0; --d) {
      pos[d] = rest % out_shape[d];
      rest /= out_shape[d];
    }
    int64_t index_flat = 0;
    for (int64_t k = 0; k < q; ++k) index_flat = index_flat * indices_shape[k] + pos[axis + k];
    int64_t src = 0;
    for (int64_t d = 0; d < data.rank(); ++d) {
      int64_t i = d < axis ? pos[d] : d == axis ? indices[index_flat] : pos[d + q - 1];
      if (d == axis && i < 0) i += data.dim(axis);
      src = src * data.dim(d) + i;
    }
    out.data<float>()[flat] = data.data<float>()[src];
  }
  return out;
}

TEST(GatherTest, MatchesReferenceOnRandomShapesAndAxes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    Shape shape;
    for (int d = 0; d < rank; ++d) shape.push_back(1 + static_cast<int64_t>(rng() % 4));
    const int64_t axis = static_cast<int64_t>(rng() % rank) - (trial % 2 ? rank : 0);  // Half negative.
    const int64_t normalized = axis < 0 ? axis + rank : axis;
    const int64_t size = shape[normalized];
    Shape indices_shape;
    for (int k = static_cast<int>(rng() % 3); k > 0; --k)
      indices_shape.push_back(static_cast<int64_t>(rng() % 3));
    std::vector<int64_t> indices(static_cast<size_t>(NumElements(indices_shape)));
    for (int64_t& i : indices) i = static_cast<int64_t>(rng() % (2 * size)) - size;  // In [-size, size).
    const Tensor data = Iota(shape);
    auto out = OpTest("Gather", 13)
                   .Input("data", data)
                   .Input("indices", Tensor::FromVector<int64_t>(indices_shape, indices))
                   .Attr("axis", axis)
                   .Output("y")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(ReferenceGather(data, indices, indices_shape, normalized), (*out)[0]))
        << "data " << ShapeToString(shape) << " axis " << axis << " indices " << ShapeToString(indices_shape);
  }
}

TEST(GatherTest, ScalarIndexDropsTheAxis) {
  // data[:, 2] of a 2x3 is [2, 5] with shape [2].
  auto out = OpTest("Gather", 13)
                 .Input("data", Iota({2, 3}))
                 .Input("indices", Tensor::Scalar<int32_t>(2))
                 .Attr("axis", int64_t{1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2}, {2, 5}), (*out)[0]));
}

TEST(GatherTest, OutOfRangeIndexIsAnErrorNamingIt) {
  auto out = OpTest("Gather", 13)
                 .Input("data", Iota({3}))
                 .Input("indices", Tensor::FromVector<int64_t>({2}, {0, 3}))
                 .Output("y")
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("index 3"), std::string::npos) << out.status();
}

TEST(GatherTest, Gather1RejectsNegativeIndices) {
  // Gather-1 requires indices in [0, s); -11 counts negative ones from the end.
  auto old = OpTest("Gather", 10)
                 .Input("data", Iota({3}))
                 .Input("indices", Tensor::FromVector<int64_t>({1}, {-1}))
                 .Output("y")
                 .Run();
  EXPECT_EQ(old.status().code(), absl::StatusCode::kInvalidArgument);
  auto now = OpTest("Gather", 11)
                 .Input("data", Iota({3}))
                 .Input("indices", Tensor::FromVector<int64_t>({1}, {-1}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1}, {2}), (*now)[0]));
}

TEST(GatherTest, GathersStrings) {
  auto out = OpTest("Gather", 13)
                 .Input("data", Tensor::FromVector<std::string>({3}, {"a", "b", "c"}))
                 .Input("indices", Tensor::FromVector<int64_t>({2, 2}, {2, 0, -2, 2}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2, 2}, {"c", "a", "b", "c"}), (*out)[0]));
}

TEST(GatherElementsTest, SpecExampleOnAxis1WithNegativeIndex) {
  // The spec's example: data [[1,2],[3,4]], indices [[0,0],[1,0]], axis 1 -> [[1,1],[4,3]]; -2 == 0.
  auto out = OpTest("GatherElements", 13)
                 .Input("data", Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}))
                 .Input("indices", Tensor::FromVector<int64_t>({2, 2}, {0, -2, 1, 0}))
                 .Attr("axis", int64_t{1})
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {1, 1, 4, 3}), (*out)[0]));
}

TEST(GatherElementsTest, IndicesSmallerThanDataOffTheAxis) {
  // Spec example 2: data 3x3 of 1..9, indices [[1,2,0],[2,0,0]] on axis 0 -> [[4,8,3],[7,2,3]].
  auto out = OpTest("GatherElements", 13)
                 .Input("data", Tensor::FromVector<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}))
                 .Input("indices", Tensor::FromVector<int32_t>({2, 3}, {1, 2, 0, 2, 0, 0}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 3}, {4, 8, 3, 7, 2, 3}), (*out)[0]));
}

TEST(GatherElementsTest, OutOfRangeIndexIsAnError) {
  auto out = OpTest("GatherElements", 13)
                 .Input("data", Iota({2, 2}))
                 .Input("indices", Tensor::FromVector<int64_t>({1, 1}, {-3}))
                 .Output("y")
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("index -3"), std::string::npos) << out.status();
}

TEST(GatherNDTest, SpecExamplesWithSlicesAndBatchDims) {
  // Spec example 3: data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[0,1],[1,0]] -> [[2,3],[4,5]].
  auto slices = OpTest("GatherND", 13)
                    .Input("data", Iota({2, 2, 2}))
                    .Input("indices", Tensor::FromVector<int64_t>({2, 2}, {0, 1, 1, 0}))
                    .Output("y")
                    .Run();
  ASSERT_TRUE(slices.ok()) << slices.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {2, 3, 4, 5}), (*slices)[0]));
  // Spec example 5, batch_dims 1: indices [[1],[0]] -> [[2,3],[4,5]].
  auto batched = OpTest("GatherND", 13)
                     .Input("data", Iota({2, 2, 2}))
                     .Input("indices", Tensor::FromVector<int64_t>({2, 1}, {1, 0}))
                     .Attr("batch_dims", int64_t{1})
                     .Output("y")
                     .Run();
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({2, 2}, {2, 3, 4, 5}), (*batched)[0]));
}

TEST(GatherNDTest, NegativeIndicesCountFromTheEndAndOutOfRangeFails) {
  auto out = OpTest("GatherND", 13)
                 .Input("data", Iota({2, 3}))
                 .Input("indices", Tensor::FromVector<int64_t>({1, 2}, {-1, -3}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<float>({1}, {3}), (*out)[0]));
  auto bad = OpTest("GatherND", 13)
                 .Input("data", Iota({2, 3}))
                 .Input("indices", Tensor::FromVector<int64_t>({1, 2}, {0, 3}))
                 .Output("y")
                 .Run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("index 3"), std::string::npos) << bad.status();
}

// A string's characters are not in a tensor's byte size: gathering one 4 KiB string 512 times is 2 MiB of
// characters, past the 1 MiB limit, whichever of the three gathers does it.
TEST(GatherTest, RefusesStringOutputsPastTheByteLimit) {
  testing::ScopedSizeLimits limits(int64_t{1} << 20);
  const Tensor data = Tensor::FromVector<std::string>({1, 1}, {std::string(4096, 'a')});
  Tensor zeros(DataType::kInt64, {512, 1});
  std::fill_n(zeros.data<int64_t>(), 512, 0);
  for (const char* op : {"Gather", "GatherElements", "GatherND"}) {
    auto out = OpTest(op, 13).Input("data", data).Input("indices", zeros).Output("y").Run();
    EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << op << ": " << out.status();
  }
}

}  // namespace
}  // namespace onnxserve
