// Optional, OptionalGetElement and OptionalHasElement per the spec, Identity over every kind, and If and
// Loop carrying sequences and optionals.
#include "gtest/gtest.h"
#include "tests/support/graph_builder.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::Declared;
using testing::FailsWith;
using testing::GraphAttr;
using testing::OpTest;
using testing::TensorsClose;

Tensor Floats(Shape shape, std::vector<float> values) { return Tensor::FromVector<float>(std::move(shape), values); }

absl::StatusOr<Value> RunOne(const OpTest& test) {
  auto out = test.RunValues();
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// A `type` attribute saying tensor(float).
onnx::AttributeProto FloatTensorTypeAttr() {
  onnx::AttributeProto attr;
  attr.set_name("type");
  attr.set_type(onnx::AttributeProto::TYPE_PROTO);
  *attr.mutable_tp() = testing::TensorTypeOf(onnx::TensorProto::FLOAT);
  return attr;
}

TEST(OptionalTest, WrapsItsInputOrIsEmptyWithout) {
  const Tensor x = Floats({2}, {1, 2});
  auto present = RunOne(OpTest("Optional", 15).Input("x", x).Output("o"));
  ASSERT_TRUE(present.ok()) << present.status();
  ASSERT_TRUE(present->has_element());
  EXPECT_TRUE(TensorsClose(x, *present->element().tensor()));
  auto empty = RunOne(OpTest("Optional", 15).Attr(FloatTensorTypeAttr()).Output("o"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->is_optional());
  EXPECT_FALSE(empty->has_element());
}

TEST(OptionalTest, WithoutInputTheTypeIsRequiredAndOptionalsDoNotNest) {
  auto untyped = OpTest("Optional", 15).Output("o").RunValues();
  ASSERT_FALSE(untyped.ok());
  EXPECT_NE(untyped.status().message().find("needs the \"type\" attribute"), std::string::npos) << untyped.status();
  auto nested = OpTest("Optional", 15).ValueInput("o", Value::Optional(Floats({1}, {1}))).Output("oo").RunValues();
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("optionals do not nest"), std::string::npos) << nested.status();
}

TEST(OptionalHasElementTest, TrueForAnElementFalseForEmptyOrNoInput) {
  const std::vector<std::pair<Value, bool>> cases = {
      {Value::Optional(Floats({1}, {1})), true},
      {Value::EmptyOptional(), false},
      {Floats({1}, {1}), true},  // -18: a tensor has its element
      {Value::Sequence(DataType::kFloat, {}), true},
  };
  for (const auto& [input, expected] : cases) {
    auto out = OpTest("OptionalHasElement", 18).ValueInput("o", input).Output("b").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(Tensor::Scalar<bool>(expected), (*out)[0])) << input.DebugString();
  }
  auto no_input = OpTest("OptionalHasElement", 18).NoInput().Output("b").Run();
  ASSERT_TRUE(no_input.ok()) << no_input.status();
  EXPECT_TRUE(TensorsClose(Tensor::Scalar<bool>(false), (*no_input)[0]));
}

TEST(OptionalGetElementTest, UnwrapsPassesThroughAndRefusesEmpty) {
  const Tensor x = Floats({2}, {1, 2});
  for (const Value& input : {Value::Optional(x), Value(x)}) {
    auto out = OpTest("OptionalGetElement", 18).ValueInput("o", input).Output("x").Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(TensorsClose(x, (*out)[0])) << input.DebugString();
  }
  const Value seq = Value::Sequence(DataType::kFloat, {x});
  auto sequence = RunOne(OpTest("OptionalGetElement", 15).ValueInput("o", Value::Optional(seq)).Output("s"));
  ASSERT_TRUE(sequence.ok()) << sequence.status();
  EXPECT_TRUE(sequence->is_sequence());
  auto empty = OpTest("OptionalGetElement", 18).ValueInput("o", Value::EmptyOptional()).Output("x").Run();
  EXPECT_TRUE(FailsWith(empty, "node \"node\" (OptionalGetElement-18): the optional input is empty"));
}

TEST(IdentityTest, PassesEveryKindThrough) {
  const Tensor x = Floats({1}, {3});
  for (const Value& input : {Value(x), Value::Sequence(DataType::kFloat, {x}), Value::Optional(x), Value::EmptyOptional()}) {
    auto out = RunOne(OpTest("Identity", 16).ValueInput("v", input).Output("w"));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->DebugString(), input.DebugString());
  }
}

TEST(LoopTest, CarriesASequenceGrownOneElementPerIteration) {
  // seq = []; for i in range(3): seq.append(i)
  onnx::GraphProto body;
  body.set_name("append_iteration");
  *body.add_node() = testing::NodeOf("Identity", {"cond_in"}, "cond_out");
  *body.add_node() = testing::NodeOf("SequenceInsert", {"seq_in", "i"}, "seq_out");
  *body.add_input() = Declared("i", testing::TensorTypeOf(onnx::TensorProto::INT64));
  *body.add_input() = Declared("cond_in", testing::TensorTypeOf(onnx::TensorProto::BOOL));
  *body.add_input() = Declared("seq_in", testing::SequenceTypeOf(onnx::TensorProto::INT64));
  *body.add_output() = Declared("cond_out", testing::TensorTypeOf(onnx::TensorProto::BOOL));
  *body.add_output() = Declared("seq_out", testing::SequenceTypeOf(onnx::TensorProto::INT64));
  auto out = RunOne(OpTest("Loop", 13)
                        .Input("trips", Tensor::Scalar<int64_t>(3))
                        .NoInput()
                        .ValueInput("seq", Value::Sequence(DataType::kInt64, {}))
                        .Output("result")
                        .Attr(GraphAttr("body", body)));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(out->is_sequence());
  ASSERT_EQ(out->elements().size(), 3u);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(TensorsClose(Tensor::Scalar<int64_t>(i), *out->elements()[i].tensor()));
}

TEST(IfTest, BranchesReturnOptionalsAndSequences) {
  onnx::TypeProto optional_floats;
  *optional_floats.mutable_optional_type()->mutable_elem_type() = testing::TensorTypeOf(onnx::TensorProto::FLOAT);
  // then: Optional(x); else: an empty optional.
  onnx::GraphProto then_branch;
  then_branch.set_name("wrap");
  *then_branch.add_node() = testing::NodeOf("Optional", {"x"}, "o");
  *then_branch.add_output() = Declared("o", optional_floats);
  onnx::GraphProto else_branch;
  else_branch.set_name("empty");
  onnx::NodeProto empty = testing::NodeOf("Optional", {}, "e");
  *empty.add_attribute() = FloatTensorTypeAttr();
  *else_branch.add_node() = empty;
  *else_branch.add_output() = Declared("e", optional_floats);
  for (bool cond : {true, false}) {
    auto out = RunOne(OpTest("If", 16)
                          .Input("cond", Tensor::Scalar<bool>(cond))
                          .OuterInput("x", Floats({1}, {7}))
                          .Output("y")
                          .Attr(GraphAttr("then_branch", then_branch))
                          .Attr(GraphAttr("else_branch", else_branch)));
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE(out->is_optional());
    EXPECT_EQ(out->has_element(), cond);
  }
}

}  // namespace
}  // namespace onnxserve
