// GraphBuilder: a small ONNX model written in a few lines, for tests of the graph IR, its passes and the
// plan.
//
//   auto model = GraphBuilder().Input("x", {2}).Node("Relu", {"x"}, "y").Output("y").Load();
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/tensor.h"
#include "runtime/ir/graph.h"
#include "runtime/model/model.h"
#include "runtime/passes/pass.h"

namespace onnxserve::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(int opset = 15);

  // A float graph input of the given static shape.
  GraphBuilder& Input(const std::string& name, const Shape& shape);
  GraphBuilder& Initializer(const std::string& name, const Tensor& value);
  // A node named after its first output; "" skips an optional input or output.
  GraphBuilder& NodeWith(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                         std::vector<onnx::AttributeProto> attributes = {});
  GraphBuilder& Node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
    return NodeWith(op, std::move(inputs), std::vector<std::string>{output});
  }
  GraphBuilder& Output(const std::string& name);

  const onnx::ModelProto& proto() const { return model_; }
  std::shared_ptr<const Model> Load() const;

 private:
  onnx::ModelProto model_;
};

// The model's graph IR after one pass: its nodes' ops in order and the pass's report.
struct PassResult {
  std::unique_ptr<ir::Graph> graph;
  std::vector<std::string> ops;
  std::vector<std::string> changes;
};
PassResult RunPass(const onnxserve::Model& model, const passes::Pass& pass);

// How many of `ops` (a plan's StepOps, a PassResult's ops) are `op`.
int CountOps(const std::vector<std::string>& ops, const std::string& op);

// Runs `model` with and without the graph passes, on `threads` threads, and checks both give the same
// outputs to the tolerances (TensorsClose's).
void ExpectSameResultWithAndWithoutPasses(std::shared_ptr<const onnxserve::Model> model,
                                          const std::vector<std::pair<std::string, Tensor>>& feeds, int threads = 1,
                                          double rtol = 1e-5, double atol = 1e-6);

onnx::AttributeProto IntAttr(const std::string& name, int64_t value);
onnx::AttributeProto FloatAttr(const std::string& name, float value);
onnx::AttributeProto IntsAttr(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto StringAttr(const std::string& name, const std::string& value);
onnx::AttributeProto StringsAttr(const std::string& name, const std::vector<std::string>& values);
onnx::AttributeProto GraphAttr(const std::string& name, const onnx::GraphProto& graph);

// Pieces of hand-written subgraphs: a node with one output ("" skips an input), a graph input or output of
// a type, and the types of tensors and sequences of tensors of an element type (onnx::TensorProto numbering).
onnx::NodeProto NodeOf(const std::string& op, const std::vector<std::string>& inputs, const std::string& output);
onnx::ValueInfoProto Declared(const std::string& name, const onnx::TypeProto& type);
onnx::TypeProto TensorTypeOf(int elem_type);
onnx::TypeProto SequenceTypeOf(int elem_type);

}  // namespace onnxserve::testing
