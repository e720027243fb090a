// Values and their files: SequenceProto, MapProto and OptionalProto read and written as the ONNX test data
// stores them, and a session's tensor interface refusing, by name, an output that is not a tensor.
#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/model/tensor_proto.h"
#include "runtime/model/value_proto.h"
#include "tests/support/op_test.h"

namespace onnxserve {
namespace {

using testing::TensorsClose;

Tensor Floats(Shape shape, std::vector<float> values) { return Tensor::FromVector<float>(std::move(shape), values); }

TEST(ValueTest, KindsAndAccessors) {
  const Tensor x = Floats({2}, {1, 2});
  EXPECT_FALSE(Value().defined());
  EXPECT_FALSE(Value(Tensor()).defined());  // an unset tensor is no value
  EXPECT_EQ(Value(x).tensor()->NumElements(), 2);
  const Value seq = Value::Sequence(DataType::kFloat, {x, x});
  EXPECT_EQ(seq.tensor(), nullptr);
  EXPECT_EQ(seq.elements().size(), 2u);
  EXPECT_EQ(seq.DebugString(), "seq(float)[2]");
  EXPECT_EQ(Value::Optional(seq).DebugString(), "optional(seq(float)[2])");
  EXPECT_FALSE(Value::EmptyOptional().has_element());
  EXPECT_TRUE(Value::EmptyOptional().element().kind() == Value::Kind::kNone);
  EXPECT_TRUE(Value(x).elements().empty());
}

TEST(ValueProtoTest, ASequenceRoundTrips) {
  const Value seq = Value::Sequence(DataType::kFloat, {Floats({1}, {1}), Floats({2}, {2, 3})});
  auto bytes = SerializeValue(seq, Value::Kind::kSequence, "s");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  onnx::SequenceProto proto;
  ASSERT_TRUE(proto.ParseFromString(*bytes));
  EXPECT_EQ(proto.name(), "s");
  EXPECT_EQ(proto.elem_type(), onnx::SequenceProto::TENSOR);
  EXPECT_EQ(proto.tensor_values_size(), 2);
  auto back = ParseValue(*bytes, Value::Kind::kSequence);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->elements().size(), 2u);
  EXPECT_EQ(back->elem_type(), DataType::kFloat);
  EXPECT_TRUE(TensorsClose(Floats({2}, {2, 3}), *back->elements()[1].tensor()));
}

TEST(ValueProtoTest, ASequenceMixingElementTypesIsAnError) {
  onnx::SequenceProto proto;
  proto.set_name("mixed");
  proto.set_elem_type(onnx::SequenceProto::TENSOR);
  *proto.add_tensor_values() = TensorToProto(Floats({1}, {1}), "");
  *proto.add_tensor_values() = TensorToProto(Tensor::FromVector<int32_t>({1}, {1}), "");
  auto value = ValueFromProto(proto);
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.status().message().find("element 1 is int32[1], element 0 float[1]"), std::string::npos)
      << value.status();
}

TEST(ValueProtoTest, OptionalsRoundTripPresentAndEmpty) {
  for (const Value& optional : {Value::Optional(Floats({1}, {5})), Value::EmptyOptional()}) {
    auto bytes = SerializeValue(optional, Value::Kind::kOptional, "o");
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    auto back = ParseValue(*bytes, Value::Kind::kOptional);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->DebugString(), optional.DebugString());
  }
  // An output declared optional that holds its element bare is written as a present optional.
  auto bytes = SerializeValue(Floats({1}, {5}), Value::Kind::kOptional, "o");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  onnx::OptionalProto proto;
  ASSERT_TRUE(proto.ParseFromString(*bytes));
  EXPECT_EQ(proto.elem_type(), onnx::OptionalProto::TENSOR);
  EXPECT_TRUE(proto.has_tensor_value());
}

TEST(ValueProtoTest, MapsKeepKeysAndValues) {
  onnx::MapProto proto;
  proto.set_name("m");
  proto.set_key_type(onnx::TensorProto::STRING);
  proto.add_string_keys("a");
  proto.add_string_keys("b");
  proto.mutable_values()->set_elem_type(onnx::SequenceProto::TENSOR);
  *proto.mutable_values()->add_tensor_values() = TensorToProto(Tensor::Scalar<float>(1), "");
  *proto.mutable_values()->add_tensor_values() = TensorToProto(Tensor::Scalar<float>(2), "");
  auto map = ValueFromProto(proto);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_TRUE(TensorsClose(Tensor::FromVector<std::string>({2}, {"a", "b"}), map->keys()));
  EXPECT_TRUE(TensorsClose(Tensor::Scalar<float>(2), *map->elements()[1].tensor()));
  auto bytes = SerializeValue(*map, Value::Kind::kMap, "m");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  onnx::MapProto written;
  ASSERT_TRUE(written.ParseFromString(*bytes));
  EXPECT_EQ(written.string_keys_size(), 2);
  EXPECT_EQ(written.values().tensor_values_size(), 2);

  proto.add_string_keys("c");  // three keys, two values
  auto uneven = ValueFromProto(proto);
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.status().message().find("has 3 keys and 2 values"), std::string::npos) << uneven.status();
  proto.set_key_type(onnx::TensorProto::FLOAT);
  EXPECT_FALSE(ValueFromProto(proto).ok());
}

TEST(ValueProtoTest, BytesThatAreNotTheDeclaredProtoAreAnError) {
  auto value = ParseValue("\xff\xff\xff", Value::Kind::kSequence);
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.status().message().find("not a serialized onnx.SequenceProto"), std::string::npos);
}

// y = Identity(x), rows = SplitToSequence(x): one tensor output, one sequence output.
std::unique_ptr<Session> TensorAndSequenceOutputs() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(14);
  auto* graph = model.mutable_graph();
  graph->set_name("two_kinds");
  auto* identity = graph->add_node();
  identity->set_op_type("Identity");
  identity->add_input("x");
  identity->add_output("y");
  auto* split = graph->add_node();
  split->set_op_type("SplitToSequence");
  split->add_input("x");
  split->add_output("rows");
  auto* x = graph->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* y = graph->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* rows = graph->add_output();
  rows->set_name("rows");
  rows->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  auto loaded = Model::FromProto(model, "");
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  auto session = Session::Create(*std::move(loaded));
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? *std::move(session) : nullptr;
}

TEST(SessionValuesTest, TheTensorInterfaceRefusesASequenceOutputByName) {
  auto session = TensorAndSequenceOutputs();
  ASSERT_NE(session, nullptr);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Floats({2, 1}, {1, 2})}};
  auto y = session->Run(feeds, {"y"});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(TensorsClose(Floats({2, 1}, {1, 2}), (*y)[0]));
  for (const std::vector<std::string>& names : {std::vector<std::string>{"rows"}, std::vector<std::string>{}}) {
    auto refused = session->Run(feeds, names);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("output \"rows\" is seq(float"), std::string::npos) << refused.status();
  }
  auto values = session->RunValues({{"x", Floats({2, 1}, {1, 2})}});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[1].DebugString(), "seq(float)[2]");
}

TEST(SessionValuesTest, AFeedOfTheWrongKindIsAnErrorNamingTheInput) {
  auto session = TensorAndSequenceOutputs();
  ASSERT_NE(session, nullptr);
  auto out = session->RunValues({{"x", Value::Sequence(DataType::kFloat, {})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("input \"x\": expected float[?], got seq(float)[0]"), std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace onnxserve
