// Builds the graph IR from a loaded model: the one place past loading that reads the ModelProto. The model's
// graph is already validated (names defined once, inputs defined, no cycle) and ordered
// (runtime/model/model.h); the builder turns names into values, attributes into ir::Attribute and
// graph-valued attributes into subgraphs.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "runtime/ir/graph.h"
#include "runtime/model/model.h"

namespace onnxserve::ir {

absl::StatusOr<std::unique_ptr<Graph>> BuildGraph(const Model& model);

// One node read from its proto into `graph` with its opset: inputs it names that `graph` lacks become graph
// inputs. For kernel benchmarks and tests that build a kernel without a model; graph attributes are not read.
Node* AddNodeFromProto(Graph& graph, const onnx::NodeProto& proto, int64_t opset);

Attribute AttributeFromProto(const onnx::AttributeProto& proto);
Type TypeFromProto(const onnx::TypeProto& proto);

}  // namespace onnxserve::ir
