// ScatterElements, ScatterND and TensorScatter: spec examples, each reduction with duplicate indices, reductions
// rejected by versions that lack them, negative and out-of-range indices, strings, the deprecated Scatter, and
// KV-cache writes (linear and circular).
#include <limits>
#include <optional>
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
Tensor Ints(Shape shape, const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(std::move(shape), v);
}

absl::StatusOr<std::vector<Tensor>> ScatterElements(int opset, const std::string& reduction, Tensor data,
                                                    Tensor indices, Tensor updates, int64_t axis = 0) {
  OpTest test("ScatterElements", opset);
  test.Input("data", std::move(data))
      .Input("indices", std::move(indices))
      .Input("updates", std::move(updates))
      .Attr("axis", axis)
      .Output("y");
  if (!reduction.empty()) test.Attr("reduction", reduction);
  return test.Run();
}

TEST(ScatterElementsTest, SpecExampleOnAxis1) {
  // data [[1,2,3,4,5]], indices [[1,3]], updates [[1.1,2.1]], axis 1 -> [[1,1.1,3,2.1,5]].
  auto out = ScatterElements(18, "", Floats({1, 5}, {1, 2, 3, 4, 5}), Ints({1, 2}, {1, 3}),
                             Floats({1, 2}, {1.1f, 2.1f}), 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 5}, {1, 1.1f, 3, 2.1f, 5}), (*out)[0]));
}

TEST(ScatterElementsTest, ReductionsCombineDuplicateIndices) {
  // Both updates (2 and 3) land on element 1 (data 4): add 4+2+3, mul 4*2*3, max 4, min 2.
  const std::vector<std::pair<std::string, float>> cases = {{"add", 9}, {"mul", 24}, {"max", 4}, {"min", 2}};
  for (const auto& [reduction, expected] : cases) {
    auto out =
        ScatterElements(18, reduction, Floats({3}, {1, 4, 7}), Ints({2}, {1, -2}), Floats({2}, {2, 3}));
    ASSERT_TRUE(out.ok()) << reduction << ": " << out.status();
    EXPECT_TRUE(TensorsClose(Floats({3}, {1, expected, 7}), (*out)[0])) << reduction;
  }
}

TEST(ScatterElementsTest, ReductionsNeedTheVersionThatDefinesThem) {
  // add/mul arrive in -16, max/min in -18.
  EXPECT_FALSE(ScatterElements(13, "add", Floats({1}, {0}), Ints({1}, {0}), Floats({1}, {1})).ok());
  EXPECT_TRUE(ScatterElements(16, "add", Floats({1}, {0}), Ints({1}, {0}), Floats({1}, {1})).ok());
  EXPECT_FALSE(ScatterElements(16, "max", Floats({1}, {0}), Ints({1}, {0}), Floats({1}, {1})).ok());
}

TEST(ScatterElementsTest, OutOfRangeIndexIsAnErrorNamingIt) {
  auto out = ScatterElements(18, "", Floats({3}, {0, 0, 0}), Ints({1}, {3}), Floats({1}, {1}));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("index 3"), std::string::npos) << out.status();
}

TEST(ScatterElementsTest, ScattersStrings) {
  auto out = ScatterElements(18, "", Tensor::FromVector<std::string>({3}, {"a", "b", "c"}), Ints({1}, {-1}),
                             Tensor::FromVector<std::string>({1}, {"z"}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({3}, {"a", "b", "z"}), (*out)[0]));
}

TEST(ScatterTest, DeprecatedFromOpset11) {
  auto old = OpTest("Scatter", 10)
                 .Input("data", Floats({2}, {0, 0}))
                 .Input("indices", Ints({1}, {1}))
                 .Input("updates", Floats({1}, {5}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(TensorsClose(Floats({2}, {0, 5}), (*old)[0]));
  auto now = OpTest("Scatter", 11)
                 .Input("data", Floats({2}, {0, 0}))
                 .Input("indices", Ints({1}, {1}))
                 .Input("updates", Floats({1}, {5}))
                 .Output("y")
                 .Run();
  ASSERT_FALSE(now.ok());
  EXPECT_NE(now.status().message().find("ScatterElements"), std::string::npos) << now.status();
}

TEST(ScatterNDTest, SpecExampleReplacesSlices) {
  // Spec example 2: data 4x4x4, indices [[0],[2]] replace slices 0 and 2.
  std::vector<float> data(64, 1.0f), updates(32);
  for (int i = 0; i < 32; ++i) updates[i] = static_cast<float>(10 + i);
  auto out = OpTest("ScatterND", 18)
                 .Input("data", Floats({4, 4, 4}, data))
                 .Input("indices", Ints({2, 1}, {0, 2}))
                 .Input("updates", Floats({2, 4, 4}, updates))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> expected(64, 1.0f);
  for (int i = 0; i < 16; ++i) {
    expected[i] = updates[i];
    expected[32 + i] = updates[16 + i];
  }
  EXPECT_TRUE(TensorsClose(Floats({4, 4, 4}, expected), (*out)[0]));
}

TEST(ScatterNDTest, MulReducesDuplicateElementIndices) {
  // Elements [0,1] (twice, once as [-2,-1]) and [1,0] of [[1,2],[3,4]]: 2*5*7 and 3*10.
  auto out = OpTest("ScatterND", 16)
                 .Input("data", Floats({2, 2}, {1, 2, 3, 4}))
                 .Input("indices", Ints({3, 2}, {0, 1, -2, -1, 1, 0}))
                 .Input("updates", Floats({3}, {5, 7, 10}))
                 .Attr("reduction", std::string("mul"))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {1, 70, 30, 4}), (*out)[0]));
}

// Indices of [2^31, 0] name 2^31 tuples of no index each (k = 0: each the whole of data) while holding no
// element. Over an empty data they write nothing, but the kernel made a target per tuple first: 16 GB,
// RESOURCE_EXHAUSTED under a 6 GB address limit and an OOM without one.
TEST(ScatterNDTest, EmptyIndicesDeclaringBillionsOfTuplesOverEmptyDataWriteNothing) {
  const int64_t huge = int64_t{1} << 31;
  auto out = OpTest("ScatterND", 18)
                 .Input("data", Tensor(DataType::kFloat, {0}))
                 .Input("indices", Tensor(DataType::kInt64, {huge, 0}))
                 .Input("updates", Tensor(DataType::kFloat, {huge, 0}))
                 .Output("y")
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0}));
}

TEST(ScatterNDTest, RejectsOutOfRangeIndicesAndWrongUpdateShapes) {
  auto bad_index = OpTest("ScatterND", 18)
                       .Input("data", Floats({2}, {0, 0}))
                       .Input("indices", Ints({1, 1}, {2}))
                       .Input("updates", Floats({1}, {1}))
                       .Output("y")
                       .Run();
  ASSERT_FALSE(bad_index.ok());
  EXPECT_NE(bad_index.status().message().find("index 2"), std::string::npos) << bad_index.status();
  auto bad_shape = OpTest("ScatterND", 18)
                       .Input("data", Floats({2}, {0, 0}))
                       .Input("indices", Ints({1, 1}, {0}))
                       .Input("updates", Floats({2}, {1, 1}))
                       .Output("y")
                       .Run();
  EXPECT_EQ(bad_shape.status().code(), absl::StatusCode::kInvalidArgument);
}

absl::StatusOr<Tensor> TensorScatter(const std::string& mode, Tensor cache, Tensor update,
                                     std::optional<Tensor> write_indices) {
  OpTest test("TensorScatter", 24);
  test.Attr("mode", mode).Attr("axis", int64_t{1});
  test.Input("past_cache", std::move(cache)).Input("update", std::move(update));
  if (write_indices) test.Input("write_indices", std::move(*write_indices));
  auto out = test.Output("present_cache").Run();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// An empty cache may declare 2^31 positions or batch entries: nothing bounds the dims of an empty tensor but
// their nonzero product. The kernel listed a target per (batch, position) all the same, 16 GB of them (and a
// zero write index per batch entry), RESOURCE_EXHAUSTED under a 6 GB address limit and an OOM without one.
// A write index that does not fit is refused all the same.
TEST(TensorScatterTest, AnEmptyCacheMakesNothingForThePositionsItDeclares) {
  const int64_t huge = int64_t{1} << 31;
  for (const Shape& shape : std::vector<Shape>{{1, huge, 0}, {huge, 1, 0}}) {
    auto y = TensorScatter("linear", Tensor(DataType::kFloat, shape), Tensor(DataType::kFloat, shape), std::nullopt);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), shape);
  }
  auto y = TensorScatter("linear", Tensor(DataType::kFloat, {2, 4, 0}), Tensor(DataType::kFloat, {2, 2, 0}),
                         Ints({2}, {3, 0}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("write index 3 of batch 0 plus 2 updates"), std::string::npos) << y.status();
}

TEST(TensorScatterTest, WritesEachBatchEntrysSequenceFromItsIndex) {
  // Cache [2 batch, 4 positions, 1]; batch 0 writes 2 positions at 1, batch 1 at 2.
  auto y = TensorScatter("linear", Floats({2, 4, 1}, {0, 0, 0, 0, 0, 0, 0, 0}), Floats({2, 2, 1}, {1, 2, 3, 4}),
                         Ints({2}, {1, 2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 4, 1}, {0, 1, 2, 0, 0, 0, 3, 4}), *y));

  y = TensorScatter("linear", Floats({1, 3, 1}, {7, 8, 9}), Floats({1, 1, 1}, {5}), std::nullopt);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 3, 1}, {5, 8, 9}), *y));
}

TEST(TensorScatterTest, CircularWritesWrapAndLinearOnesMustFit) {
  auto y = TensorScatter("circular", Floats({1, 3, 1}, {0, 0, 0}), Floats({1, 2, 1}, {1, 2}), Ints({1}, {2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 3, 1}, {2, 0, 1}), *y));

  y = TensorScatter("linear", Floats({1, 3, 1}, {0, 0, 0}), Floats({1, 2, 1}, {1, 2}), Ints({1}, {2}));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("write index 2 of batch 0 plus 2 updates"), std::string::npos) << y.status();

  y = TensorScatter("linear", Floats({1, 3, 1}, {0, 0, 0}), Floats({1, 2, 2}, {1, 2, 3, 4}), std::nullopt);
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("must have past_cache"), std::string::npos) << y.status();
}

// A write index of INT64_MAX: start + count overflowed, so a linear write passed the "fits" check, and a
// circular one wrapped to INT64_MIN, whose position mod 3 (1) repeated the first instead of following it (2).
TEST(TensorScatterTest, TheLargestWriteIndexWrapsOrIsRefusedWithoutOverflow) {
  const Tensor at_max = Ints({1}, {std::numeric_limits<int64_t>::max()});
  auto y = TensorScatter("circular", Floats({1, 3, 1}, {0, 0, 0}), Floats({1, 2, 1}, {1, 2}), at_max);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 3, 1}, {0, 1, 2}), *y));  // (2^63 - 1) mod 3 = 1

  y = TensorScatter("linear", Floats({1, 3, 1}, {0, 0, 0}), Floats({1, 1, 1}, {1}), at_max);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
}

}  // namespace
}  // namespace onnxserve
