// The Transpose/Reshape elimination pass (runtime/passes/transpose_reshape_elimination.cc): shuffles that
// cancel or compose go, each graph keeping its outputs' values; what cannot be proven equal stays.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/passes/pass.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::ExpectSameResultWithAndWithoutPasses;
using testing::GraphBuilder;
using testing::IntAttr;
using testing::IntsAttr;
using testing::RandomTensor;
using testing::RunPass;

using Ops = std::vector<std::string>;

Tensor Random(const Shape& shape) { return RandomTensor(shape, 7); }

Tensor Int64s(std::vector<int64_t> values) {
  return Tensor::FromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

// x [2,3,4] -> Transpose(perm1) -> Transpose(perm2) -> Relu (so that the pass's result is not a graph output).
GraphBuilder TwoTransposes(std::vector<int64_t> perm1, std::vector<int64_t> perm2) {
  GraphBuilder b(13);
  b.Input("x", {2, 3, 4})
      .NodeWith("Transpose", {"x"}, {"t1"}, {IntsAttr("perm", perm1)})
      .NodeWith("Transpose", {"t1"}, {"t2"}, {IntsAttr("perm", perm2)})
      .Node("Relu", {"t2"}, "y")
      .Output("y");
  return b;
}

Ops OpsAfterPass(const GraphBuilder& b) {
  return RunPass(*b.Load(), *passes::MakeTransposeReshapeElimination()).ops;
}

TEST(TransposeReshapeEliminationTest, TransposesThatCancelGo) {
  const GraphBuilder b = TwoTransposes({1, 2, 0}, {2, 0, 1});
  EXPECT_EQ(OpsAfterPass(b), Ops{"Relu"});
  ExpectSameResultWithAndWithoutPasses(b.Load(), {{"x", Random({2, 3, 4})}});
}

TEST(TransposeReshapeEliminationTest, TransposesComposeIntoOne) {
  const GraphBuilder b = TwoTransposes({1, 0, 2}, {0, 2, 1});
  EXPECT_EQ(OpsAfterPass(b), (Ops{"Transpose", "Relu"}));
  ExpectSameResultWithAndWithoutPasses(b.Load(), {{"x", Random({2, 3, 4})}});
}

TEST(TransposeReshapeEliminationTest, ReshapeOfReshapeCollapsesUnlessAZeroCopiesADim) {
  for (bool zero : {false, true}) {
    SCOPED_TRACE(zero);
    GraphBuilder b(14);
    b.Input("x", {2, 3, 4})
        .Initializer("s1", Int64s({6, 4}))
        .Initializer("s2", Int64s(zero ? std::vector<int64_t>{0, -1} : std::vector<int64_t>{4, -1}))
        .Node("Reshape", {"x", "s1"}, "r1")
        .Node("Reshape", {"r1", "s2"}, "r2")
        .Node("Relu", {"r2"}, "y")
        .Output("y");
    // With a 0 the second Reshape copies the first's dim 0 (6), which x's dim 0 (2) is not.
    EXPECT_EQ(OpsAfterPass(b), zero ? (Ops{"Reshape", "Reshape", "Relu"}) : (Ops{"Reshape", "Relu"}));
    ExpectSameResultWithAndWithoutPasses(b.Load(), {{"x", Random({2, 3, 4})}});
  }
}

TEST(TransposeReshapeEliminationTest, ReshapesToTheShapeTheInputHasGo) {
  GraphBuilder b(13);
  b.Input("x", {2, 3})
      .Initializer("same", Int64s({0, -1}))
      .Node("Reshape", {"x", "same"}, "r")
      .NodeWith("Flatten", {"r"}, {"f"}, {IntAttr("axis", 1)})
      .Node("Squeeze", {"f"}, "s")
      .Node("Relu", {"s"}, "y")
      .Output("y");
  // Once the Reshape goes, Flatten reads x, whose shape is declared, and goes; then so does Squeeze.
  EXPECT_EQ(OpsAfterPass(b), Ops{"Relu"});
  ExpectSameResultWithAndWithoutPasses(b.Load(), {{"x", Random({2, 3})}});

  GraphBuilder flatten(13);
  flatten.Input("x", {2, 3}).NodeWith("Flatten", {"x"}, {"f"}, {IntAttr("axis", 1)}).Node("Relu", {"f"}, "y")
      .Output("y");
  EXPECT_EQ(OpsAfterPass(flatten), Ops{"Relu"});

  GraphBuilder squeeze(13);
  squeeze.Input("x", {2, 1}).Node("Squeeze", {"x"}, "s").Node("Relu", {"s"}, "y").Output("y");
  EXPECT_EQ(OpsAfterPass(squeeze), (Ops{"Squeeze", "Relu"}));  // drops the 1: a new shape
}

TEST(TransposeReshapeEliminationTest, AGraphOutputKeepsItsProducer) {
  GraphBuilder b(13);
  b.Input("x", {2, 3}).Initializer("same", Int64s({2, 3})).Node("Reshape", {"x", "same"}, "y").Output("y");
  EXPECT_EQ(OpsAfterPass(b), Ops{"Reshape"});
}

TEST(TransposeReshapeEliminationTest, TransposeOfSizeOneDimsBecomesAReshape) {
  GraphBuilder b(13);
  b.Input("x", {1, 5, 1, 3})
      .NodeWith("Transpose", {"x"}, {"t"}, {IntsAttr("perm", {1, 0, 2, 3})})
      .Node("Relu", {"t"}, "y")
      .Output("y");
  EXPECT_EQ(OpsAfterPass(b), (Ops{"Reshape", "Relu"}));
  ExpectSameResultWithAndWithoutPasses(b.Load(), {{"x", Random({1, 5, 1, 3})}});

  GraphBuilder moves(13);
  moves.Input("x", {1, 5, 1, 3})
      .NodeWith("Transpose", {"x"}, {"t"}, {IntsAttr("perm", {0, 3, 2, 1})})
      .Node("Relu", {"t"}, "y")
      .Output("y");
  EXPECT_EQ(OpsAfterPass(moves), (Ops{"Transpose", "Relu"}));  // 5 and 3 swap: the data moves
}

}  // namespace
}  // namespace onnxserve
