// Sequence operators against the spec's semantics (Python lists: insert, pop, indexing from the back) and
// their hostile cases: positions out of range, empty sequences, tensors of another element type.
#include "gtest/gtest.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::FailsWith;
using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, std::vector<float> values) { return Tensor::FromVector<float>(std::move(shape), values); }

// Three float tensors of different shapes, so that a wrong element cannot pass for the right one.
std::vector<Tensor> Abc() { return {Floats({1}, {1}), Floats({2}, {2, 3}), Floats({3}, {4, 5, 6})}; }

Value SequenceOf(const std::vector<Tensor>& tensors, DataType elem_type = DataType::kFloat) {
  return Value::Sequence(elem_type, {tensors.begin(), tensors.end()});
}

::testing::AssertionResult SequenceIs(const std::vector<Tensor>& expected, const Value& actual) {
  if (!actual.is_sequence()) return ::testing::AssertionFailure() << "got " << actual.DebugString();
  if (actual.elements().size() != expected.size()) {
    return ::testing::AssertionFailure() << "length " << actual.elements().size() << ", expected " << expected.size();
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor* t = actual.elements()[i].tensor();
    if (t == nullptr) return ::testing::AssertionFailure() << "element " << i << " is not a tensor";
    auto close = TensorsClose(expected[i], *t);
    if (!close) return close << " (element " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

absl::StatusOr<Value> RunOne(const OpTest& test) {
  auto out = test.RunValues();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

absl::StatusOr<std::vector<Tensor>> AsTensors(const absl::StatusOr<Value>& value) {
  if (!value.ok()) return value.status();
  if (!value->is_tensor()) return std::vector<Tensor>{};
  return std::vector<Tensor>{*value->tensor()};
}

TEST(SequenceConstructTest, HoldsItsInputsInOrder) {
  const auto abc = Abc();
  auto out = RunOne(OpTest("SequenceConstruct", 11).Input("a", abc[0]).Input("b", abc[1]).Input("c", abc[2]).Output("s"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(SequenceIs(abc, *out));
  EXPECT_EQ(out->elem_type(), DataType::kFloat);
}

TEST(SequenceConstructTest, TensorsOfAnotherTypeAreAnError) {
  auto out = RunOne(OpTest("SequenceConstruct", 11)
                        .Input("a", Floats({1}, {1}))
                        .Input("b", Tensor::FromVector<int32_t>({1}, {1}))
                        .Output("s"));
  EXPECT_TRUE(FailsWith(AsTensors(out), "cannot join a sequence of float tensors"));
}

TEST(SequenceEmptyTest, IsEmptyWithTheDtypeAttributeOrFloat) {
  auto ints = RunOne(OpTest("SequenceEmpty", 11).Attr("dtype", int64_t{onnx::TensorProto::INT32}).Output("s"));
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_TRUE(SequenceIs({}, *ints));
  EXPECT_EQ(ints->elem_type(), DataType::kInt32);
  auto floats = RunOne(OpTest("SequenceEmpty", 11).Output("s"));
  ASSERT_TRUE(floats.ok()) << floats.status();
  EXPECT_EQ(floats->elem_type(), DataType::kFloat);
}

TEST(SequenceAtTest, CountsNegativePositionsFromTheBack) {
  const auto abc = Abc();
  // Python: [a, b, c][p]
  for (const auto& [position, expected] : std::vector<std::pair<int64_t, int>>{{0, 0}, {1, 1}, {2, 2}, {-1, 2}, {-3, 0}}) {
    auto out = OpTest("SequenceAt", 11)
                   .ValueInput("s", SequenceOf(abc))
                   .Input("p", Tensor::Scalar<int64_t>(position))
                   .Output("t")
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(abc[expected], (*out)[0])) << "position " << position;
  }
}

TEST(SequenceAtTest, PositionsOutsideTheSequenceAreErrorsNamingTheRange) {
  for (int64_t position : {int64_t{3}, int64_t{-4}, int64_t{1} << 62}) {
    auto out = OpTest("SequenceAt", 11)
                   .ValueInput("s", SequenceOf(Abc()))
                   .Input("p", Tensor::Scalar<int64_t>(position))
                   .Output("t")
                   .Run();
    EXPECT_TRUE(FailsWith(out, "is out of range [-3, 2]")) << position;
  }
  auto empty = OpTest("SequenceAt", 11)
                   .ValueInput("s", SequenceOf({}))
                   .Input("p", Tensor::Scalar<int32_t>(0))
                   .Output("t")
                   .Run();
  EXPECT_TRUE(FailsWith(empty, "out of range"));
}

TEST(SequenceAtTest, ThePositionIsOneInteger) {
  auto as_1d = OpTest("SequenceAt", 11)
                   .ValueInput("s", SequenceOf(Abc()))
                   .Input("p", Tensor::FromVector<int32_t>({1}, {-2}))
                   .Output("t")
                   .Run();
  ASSERT_TRUE(as_1d.ok()) << as_1d.status();
  EXPECT_TRUE(TensorsClose(Abc()[1], (*as_1d)[0]));
  for (const Tensor& bad : {Tensor::Scalar<float>(1), Tensor::FromVector<int64_t>({2}, {0, 1})}) {
    auto out = OpTest("SequenceAt", 11).ValueInput("s", SequenceOf(Abc())).Input("p", bad).Output("t").Run();
    EXPECT_TRUE(FailsWith(out, "position must be an int32 or int64 scalar")) << bad.DebugString();
  }
}

TEST(SequenceAtTest, ATensorWhereTheSequenceGoesIsAnErrorNamingTheNode) {
  auto out = OpTest("SequenceAt", 11)
                 .Input("s", Floats({1}, {1}))
                 .Input("p", Tensor::Scalar<int64_t>(0))
                 .Output("t")
                 .Run();
  EXPECT_TRUE(FailsWith(out, "node \"node\" (SequenceAt-11): input 0 is float[1], expected a sequence"));
}

TEST(SequenceInsertTest, InsertsAsPythonListInsert) {
  const auto abc = Abc();
  const Tensor x = Floats({1}, {9});
  // Python: l = [a, b, c]; l.insert(p, x), and l.append(x) without a position.
  const std::vector<std::pair<std::optional<int64_t>, std::vector<Tensor>>> cases = {
      {std::nullopt, {abc[0], abc[1], abc[2], x}}, {0, {x, abc[0], abc[1], abc[2]}},
      {3, {abc[0], abc[1], abc[2], x}},           {-1, {abc[0], abc[1], x, abc[2]}},
      {-3, {x, abc[0], abc[1], abc[2]}},
  };
  for (const auto& [position, expected] : cases) {
    OpTest test("SequenceInsert", 11);
    test.ValueInput("s", SequenceOf(abc)).Input("x", x);
    if (position) test.Input("p", Tensor::Scalar<int64_t>(*position));
    auto out = RunOne(test.Output("t"));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(SequenceIs(expected, *out)) << "position " << position.value_or(99);
  }
}

TEST(SequenceInsertTest, PositionsOutsideMinusNToNAreErrors) {
  for (int64_t position : {int64_t{4}, int64_t{-4}}) {
    auto out = RunOne(OpTest("SequenceInsert", 11)
                          .ValueInput("s", SequenceOf(Abc()))
                          .Input("x", Floats({1}, {9}))
                          .Input("p", Tensor::Scalar<int64_t>(position))
                          .Output("t"));
    EXPECT_TRUE(FailsWith(AsTensors(out), "is out of range [-3, 3]")) << position;
  }
}

TEST(SequenceInsertTest, ATensorOfAnotherTypeCannotJoinEvenAnEmptySequence) {
  auto into_floats = RunOne(OpTest("SequenceInsert", 11)
                                .ValueInput("s", SequenceOf(Abc()))
                                .Input("x", Tensor::FromVector<int64_t>({1}, {9}))
                                .Output("t"));
  EXPECT_TRUE(FailsWith(AsTensors(into_floats), "tensor int64[1] cannot join a sequence of float tensors"));
  // An empty sequence knows its element type from SequenceEmpty's dtype.
  auto into_empty_ints = RunOne(OpTest("SequenceInsert", 11)
                                    .ValueInput("s", Value::Sequence(DataType::kInt32, {}))
                                    .Input("x", Floats({1}, {9}))
                                    .Output("t"));
  EXPECT_TRUE(FailsWith(AsTensors(into_empty_ints), "cannot join a sequence of int32 tensors"));
  auto into_empty = RunOne(OpTest("SequenceInsert", 11)
                               .ValueInput("s", Value::Sequence(DataType::kInt32, {}))
                               .Input("x", Tensor::FromVector<int32_t>({1}, {9}))
                               .Output("t"));
  ASSERT_TRUE(into_empty.ok()) << into_empty.status();
  EXPECT_TRUE(SequenceIs({Tensor::FromVector<int32_t>({1}, {9})}, *into_empty));
}

TEST(SequenceEraseTest, ErasesAsPythonListPop) {
  const auto abc = Abc();
  // Python: l = [a, b, c]; l.pop(p), and l.pop() without a position.
  const std::vector<std::pair<std::optional<int64_t>, std::vector<Tensor>>> cases = {
      {std::nullopt, {abc[0], abc[1]}}, {0, {abc[1], abc[2]}}, {-1, {abc[0], abc[1]}}, {-3, {abc[1], abc[2]}}};
  for (const auto& [position, expected] : cases) {
    OpTest test("SequenceErase", 11);
    test.ValueInput("s", SequenceOf(abc));
    if (position) test.Input("p", Tensor::Scalar<int64_t>(*position));
    auto out = RunOne(test.Output("t"));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(SequenceIs(expected, *out)) << "position " << position.value_or(99);
  }
}

TEST(SequenceEraseTest, OutOfRangeAndEmptyAreErrors) {
  auto out = RunOne(
      OpTest("SequenceErase", 11).ValueInput("s", SequenceOf(Abc())).Input("p", Tensor::Scalar<int64_t>(3)).Output("t"));
  EXPECT_TRUE(FailsWith(AsTensors(out), "is out of range [-3, 2]"));
  auto empty = RunOne(OpTest("SequenceErase", 11).ValueInput("s", SequenceOf({})).Output("t"));
  EXPECT_TRUE(FailsWith(AsTensors(empty), "cannot erase from an empty sequence"));
}

TEST(SequenceLengthTest, IsAnInt64Scalar) {
  for (const auto& tensors : {Abc(), std::vector<Tensor>{}}) {
    auto out = OpTest("SequenceLength", 11).ValueInput("s", SequenceOf(tensors)).Output("n").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Tensor::Scalar<int64_t>(static_cast<int64_t>(tensors.size())), (*out)[0]));
  }
}

// x = [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
Tensor FiveRows() { return Floats({5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); }

// A split of a long axis of an empty tensor costs nothing to send and some 290 bytes a piece to hold: 2^24
// pieces (the old limit) held 4.9 GB for seconds with no budget to stop them. Past 2^20 pieces it is refused
// before they are made.
TEST(SplitToSequenceTest, PiecesPastTheSequenceLimitAreRefusedBeforeTheyAreMade) {
  const auto split = [](int64_t rows) {
    return RunOne(OpTest("SplitToSequence", 11)
                      .Input("x", Tensor(DataType::kFloat, {rows, 0}))
                      .Input("split", Tensor::Scalar<int64_t>(1))
                      .Output("s"));
  };
  EXPECT_EQ(split(int64_t{1} << 21).status().code(), absl::StatusCode::kResourceExhausted);
  auto within = split(int64_t{1} << 10);
  ASSERT_TRUE(within.ok()) << within.status();
  EXPECT_EQ(within->elements().size(), size_t{1} << 10);
}

TEST(SplitToSequenceTest, AScalarSplitCutsEqualPiecesAndAShorterLast) {
  auto out = RunOne(OpTest("SplitToSequence", 11).Input("x", FiveRows()).Input("split", Tensor::Scalar<int64_t>(2)).Output("s"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(SequenceIs({Floats({2, 2}, {0, 1, 2, 3}), Floats({2, 2}, {4, 5, 6, 7}), Floats({1, 2}, {8, 9})}, *out));
}

TEST(SplitToSequenceTest, A1DSplitGivesTheLengthsAlongANegativeAxis) {
  auto out = RunOne(OpTest("SplitToSequence", 24)
                        .Input("x", FiveRows())
                        .Input("split", Tensor::FromVector<int32_t>({2}, {1, 1}))
                        .Attr("axis", int64_t{-1})
                        .Output("s"));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(SequenceIs({Floats({5, 1}, {0, 2, 4, 6, 8}), Floats({5, 1}, {1, 3, 5, 7, 9})}, *out));
}

TEST(SplitToSequenceTest, WithoutSplitPiecesOfOneKeepOrDropTheAxis) {
  auto kept = RunOne(OpTest("SplitToSequence", 11).Input("x", Floats({2, 2}, {0, 1, 2, 3})).Output("s"));
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(SequenceIs({Floats({1, 2}, {0, 1}), Floats({1, 2}, {2, 3})}, *kept));
  auto dropped = RunOne(
      OpTest("SplitToSequence", 11).Input("x", Floats({2, 2}, {0, 1, 2, 3})).Attr("keepdims", int64_t{0}).Output("s"));
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_TRUE(SequenceIs({Floats({2}, {0, 1}), Floats({2}, {2, 3})}, *dropped));
}

TEST(SplitToSequenceTest, SplitsThatDoNotCutTheAxisAreErrors) {
  const std::vector<std::pair<Tensor, std::string>> cases = {
      {Tensor::FromVector<int64_t>({2}, {2, 2}), "does not cut an axis of size 5"},
      {Tensor::FromVector<int64_t>({2}, {6, -1}), "does not cut an axis of size 5"},
      {Tensor::Scalar<int64_t>(0), "must be positive"},
      {Tensor::Scalar<float>(1), "split must be int32 or int64"},
  };
  for (const auto& [split, message] : cases) {
    auto out = RunOne(OpTest("SplitToSequence", 11).Input("x", FiveRows()).Input("split", split).Output("s"));
    EXPECT_TRUE(FailsWith(AsTensors(out), message)) << split.DebugString();
  }
}

TEST(SplitToSequenceTest, TooManyPiecesOfAnEmptyTensorIsAnErrorNotAnExhaustedMachine) {
  // [2^26, 0] holds no element, and each of its 2^26 rows would be a value of its own.
  auto out = RunOne(OpTest("SplitToSequence", 11).Input("x", Tensor(DataType::kFloat, {int64_t{1} << 26, 0})).Output("s"));
  EXPECT_TRUE(FailsWith(AsTensors(out), "past the limit"));
}

TEST(ConcatFromSequenceTest, ConcatenatesOrStacksAsNumpy) {
  const Value parts = SequenceOf({Floats({1, 2}, {1, 2}), Floats({1, 2}, {3, 4})});
  // numpy.concatenate(parts, axis=0)
  auto joined = OpTest("ConcatFromSequence", 11).ValueInput("s", parts).Attr("axis", int64_t{0}).Output("y").Run();
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 2}, {1, 2, 3, 4}), (*joined)[0]));
  // numpy.stack(parts, axis=-1): shape [1, 2, 2], y[0, j, k] = parts[k][0, j]
  auto stacked = OpTest("ConcatFromSequence", 11)
                     .ValueInput("s", parts)
                     .Attr("axis", int64_t{-1})
                     .Attr("new_axis", int64_t{1})
                     .Output("y")
                     .Run();
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  EXPECT_TRUE(TensorsClose(Floats({1, 2, 2}, {1, 3, 2, 4}), (*stacked)[0]));
}

TEST(ConcatFromSequenceTest, EmptyAndMismatchedSequencesAreErrors) {
  auto empty = OpTest("ConcatFromSequence", 11).ValueInput("s", SequenceOf({})).Attr("axis", int64_t{0}).Output("y").Run();
  EXPECT_TRUE(FailsWith(empty, "cannot concatenate an empty sequence"));
  auto mismatched =
      OpTest("ConcatFromSequence", 11).ValueInput("s", SequenceOf(Abc())).Attr("axis", int64_t{1}).Output("y").Run();
  EXPECT_TRUE(FailsWith(mismatched, "out of range"));
  auto shapes = OpTest("ConcatFromSequence", 11)
                    .ValueInput("s", SequenceOf({Floats({1, 2}, {1, 2}), Floats({1, 3}, {1, 2, 3})}))
                    .Attr("axis", int64_t{0})
                    .Output("y")
                    .Run();
  EXPECT_TRUE(FailsWith(shapes, "does not match input 0"));
}

// body(x, y) = x + y
onnx::AttributeProto AddBody() {
  onnx::GraphProto body;
  body.set_name("add_body");
  *body.add_node() = testing::NodeOf("Add", {"x", "y"}, "z");
  for (const std::string name : {"x", "y"}) {
    *body.add_input() = testing::Declared(name, testing::TensorTypeOf(onnx::TensorProto::FLOAT));
  }
  *body.add_output() = testing::Declared("z", testing::TensorTypeOf(onnx::TensorProto::FLOAT));
  return testing::GraphAttr("body", body);
}

TEST(SequenceMapTest, PairsSequenceElementsAndPassesTensorsWhole) {
  const Value xs = SequenceOf({Floats({1}, {1}), Floats({2}, {2, 3})});
  // [x + 10 for x in xs]
  auto with_tensor = RunOne(OpTest("SequenceMap", 17).ValueInput("xs", xs).Input("y", Floats({1}, {10})).Output("zs").Attr(AddBody()));
  ASSERT_TRUE(with_tensor.ok()) << with_tensor.status();
  EXPECT_TRUE(SequenceIs({Floats({1}, {11}), Floats({2}, {12, 13})}, *with_tensor));
  // [x + y for x, y in zip(xs, ys)]
  const Value ys = SequenceOf({Floats({1}, {100}), Floats({2}, {200, 300})});
  auto zipped = RunOne(OpTest("SequenceMap", 17).ValueInput("xs", xs).ValueInput("ys", ys).Output("zs").Attr(AddBody()));
  ASSERT_TRUE(zipped.ok()) << zipped.status();
  EXPECT_TRUE(SequenceIs({Floats({1}, {101}), Floats({2}, {202, 303})}, *zipped));
}

TEST(SequenceMapTest, SequencesOfOtherLengthsAreAnErrorAndAnEmptyOneMapsToEmpty) {
  const Value xs = SequenceOf({Floats({1}, {1}), Floats({1}, {2})});
  auto mismatched = RunOne(OpTest("SequenceMap", 17)
                               .ValueInput("xs", xs)
                               .ValueInput("ys", SequenceOf({Floats({1}, {1})}))
                               .Output("zs")
                               .Attr(AddBody()));
  EXPECT_TRUE(FailsWith(AsTensors(mismatched), "input 0 has 2 elements"));
  auto empty = RunOne(OpTest("SequenceMap", 17).ValueInput("xs", SequenceOf({})).Input("y", Floats({1}, {1})).Output("zs").Attr(AddBody()));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(SequenceIs({}, *empty));
  EXPECT_EQ(empty->elem_type(), DataType::kFloat);
}

// body(x) = If(Cast<bool>(x)) then Cast<int64>(x) else x: its output's type depends on the element.
onnx::AttributeProto TypeFlippingBody() {
  const auto branch = [](const std::string& name, bool cast) {
    onnx::GraphProto g;
    g.set_name(name);
    *g.add_node() = testing::NodeOf(cast ? "Cast" : "Identity", {"x"}, "t");
    if (cast) *g.mutable_node(0)->add_attribute() = testing::IntAttr("to", onnx::TensorProto::INT64);
    *g.add_output() = testing::Declared("t", testing::TensorTypeOf(cast ? onnx::TensorProto::INT64
                                                                        : onnx::TensorProto::FLOAT));
    return g;
  };
  onnx::GraphProto body;
  body.set_name("flip_body");
  *body.add_input() = testing::Declared("x", testing::TensorTypeOf(onnx::TensorProto::FLOAT));
  *body.add_node() = testing::NodeOf("Cast", {"x"}, "c");
  *body.mutable_node(0)->add_attribute() = testing::IntAttr("to", onnx::TensorProto::BOOL);
  *body.add_node() = testing::NodeOf("If", {"c"}, "z");
  *body.mutable_node(1)->add_attribute() = testing::GraphAttr("then_branch", branch("cast", true));
  *body.mutable_node(1)->add_attribute() = testing::GraphAttr("else_branch", branch("keep", false));
  *body.add_output() = testing::Declared("z", testing::TensorTypeOf(onnx::TensorProto::FLOAT));
  return testing::GraphAttr("body", body);
}

// A sequence holds tensors of one type. The body's outputs were collected whatever their types, so a body
// whose If picks a branch by the element made a sequence of an int64 tensor and a float one, typed int64.
TEST(SequenceMapTest, BodyOutputsOfDifferentTypesAreAnError) {
  auto mixed = RunOne(OpTest("SequenceMap", 17)
                          .ValueInput("xs", SequenceOf({Floats({1}, {1}), Floats({1}, {0})}))
                          .Output("zs")
                          .Attr(TypeFlippingBody()));
  EXPECT_TRUE(FailsWith(AsTensors(mixed), "cannot join a sequence of int64 tensors")) << mixed.status();
  auto same = RunOne(OpTest("SequenceMap", 17)
                         .ValueInput("xs", SequenceOf({Floats({1}, {0}), Floats({1}, {0})}))
                         .Output("zs")
                         .Attr(TypeFlippingBody()));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(SequenceIs({Floats({1}, {0}), Floats({1}, {0})}, *same));
}

TEST(SequenceKindTest, ATensorKernelReadingASequenceFailsToLoadNamingTheNode) {
  auto out = OpTest("Relu", 14).ValueInput("s", SequenceOf(Abc())).Output("y").Run();
  EXPECT_TRUE(FailsWith(out, "node \"node\" (Relu-14): input 0 (\"s\") is a sequence; the kernel takes tensors"));
}

}  // namespace
}  // namespace onnxserve
