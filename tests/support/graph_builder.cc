#include "tests/support/graph_builder.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "runtime/exec/session.h"
#include "runtime/ir/builder.h"
#include "runtime/model/tensor_proto.h"
#include "tests/support/op_test.h"

namespace onnxserve::testing {

GraphBuilder::GraphBuilder(int opset) {
  model_.set_ir_version(8);
  model_.add_opset_import()->set_version(opset);
  model_.mutable_graph()->set_name("g");
}

GraphBuilder& GraphBuilder::Input(const std::string& name, const Shape& shape) {
  auto* in = model_.mutable_graph()->add_input();
  in->set_name(name);
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->mutable_shape()->add_dim()->set_dim_value(d);
  return *this;
}

GraphBuilder& GraphBuilder::Initializer(const std::string& name, const Tensor& value) {
  *model_.mutable_graph()->add_initializer() = TensorToProto(value, name);
  return *this;
}

GraphBuilder& GraphBuilder::NodeWith(const std::string& op, std::vector<std::string> inputs,
                                     std::vector<std::string> outputs,
                                     std::vector<onnx::AttributeProto> attributes) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(outputs.empty() ? op : outputs[0]);
  for (auto& in : inputs) n->add_input(in);
  for (auto& out : outputs) n->add_output(out);
  for (auto& attr : attributes) *n->add_attribute() = std::move(attr);
  return *this;
}

GraphBuilder& GraphBuilder::Output(const std::string& name) {
  model_.mutable_graph()->add_output()->set_name(name);
  return *this;
}

std::shared_ptr<const Model> GraphBuilder::Load() const {
  auto model = Model::FromProto(model_, "");
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

PassResult RunPass(const onnxserve::Model& model, const passes::Pass& pass) {
  PassResult result;
  auto graph = ir::BuildGraph(model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return result;
  result.graph = *std::move(graph);
  const absl::Status status = pass.Run(*result.graph, result.changes);
  EXPECT_TRUE(status.ok()) << status;
  for (const ir::Node* node : result.graph->nodes()) result.ops.push_back(node->op_type());
  return result;
}

int CountOps(const std::vector<std::string>& ops, const std::string& op) {
  return static_cast<int>(std::count(ops.begin(), ops.end(), op));
}

void ExpectSameResultWithAndWithoutPasses(std::shared_ptr<const onnxserve::Model> model,
                                          const std::vector<std::pair<std::string, Tensor>>& feeds, int threads,
                                          double rtol, double atol) {
  SessionOptions optimized_options, plain;
  optimized_options.intra_op_threads = plain.intra_op_threads = threads;
  plain.optimize = false;
  auto optimized = Session::Create(model, optimized_options);
  auto unoptimized = Session::Create(model, plain);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  ASSERT_TRUE(unoptimized.ok()) << unoptimized.status();
  auto got = (*optimized)->Run(feeds);
  auto want = (*unoptimized)->Run(feeds);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    EXPECT_TRUE(TensorsClose((*want)[i], (*got)[i], rtol, atol)) << "output " << i << ", threads " << threads;
  }
}

onnx::AttributeProto IntAttr(const std::string& name, int64_t value) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::INT);
  attr.set_i(value);
  return attr;
}

onnx::AttributeProto FloatAttr(const std::string& name, float value) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::FLOAT);
  attr.set_f(value);
  return attr;
}

onnx::AttributeProto StringAttr(const std::string& name, const std::string& value) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::STRING);
  attr.set_s(value);
  return attr;
}

onnx::AttributeProto IntsAttr(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr.add_ints(v);
  return attr;
}

onnx::AttributeProto StringsAttr(const std::string& name, const std::vector<std::string>& values) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) attr.add_strings(v);
  return attr;
}

onnx::AttributeProto GraphAttr(const std::string& name, const onnx::GraphProto& graph) {
  onnx::AttributeProto attr;
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::GRAPH);
  *attr.mutable_g() = graph;
  return attr;
}

onnx::NodeProto NodeOf(const std::string& op, const std::vector<std::string>& inputs, const std::string& output) {
  onnx::NodeProto node;
  node.set_op_type(op);
  for (const auto& in : inputs) node.add_input(in);
  node.add_output(output);
  return node;
}

onnx::ValueInfoProto Declared(const std::string& name, const onnx::TypeProto& type) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  *info.mutable_type() = type;
  return info;
}

onnx::TypeProto TensorTypeOf(int elem_type) {
  onnx::TypeProto type;
  type.mutable_tensor_type()->set_elem_type(elem_type);
  return type;
}

onnx::TypeProto SequenceTypeOf(int elem_type) {
  onnx::TypeProto type;
  *type.mutable_sequence_type()->mutable_elem_type() = TensorTypeOf(elem_type);
  return type;
}

}  // namespace onnxserve::testing
