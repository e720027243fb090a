#include "runtime/passes/match.h"

namespace onnxserve::passes {

bool IsOp(const ir::Node* node, std::string_view op_type) {
  return node != nullptr && node->domain() == "ai.onnx" && node->op_type() == op_type;
}

std::optional<double> ScalarConstant(const ir::Value* value) {
  const Tensor* t = value == nullptr ? nullptr : value->constant();
  if (t == nullptr || t->NumElements() != 1) return std::nullopt;
  if (t->dtype() == DataType::kFloat) return t->data<float>()[0];
  if (t->dtype() == DataType::kDouble) return t->data<double>()[0];
  return std::nullopt;
}

bool OnlyReadBy(const ir::Value* value, int readers) {
  if (value == nullptr || value->is_graph_output() || static_cast<int>(value->uses().size()) != readers) {
    return false;
  }
  for (const ir::Use& use : value->uses()) {
    if (use.index < 0) return false;
  }
  return true;
}

ir::Node* SoleReader(const ir::Value* value) { return OnlyReadBy(value, 1) ? value->uses()[0].node : nullptr; }

ir::Value* OtherInput(const ir::Node* node, const ir::Value* known) {
  if (node == nullptr || node->inputs().size() != 2) return nullptr;
  if (node->input(0) == known && node->input(1) != known) return node->input(1);
  if (node->input(1) == known && node->input(0) != known) return node->input(0);
  return nullptr;
}

std::optional<std::vector<int64_t>> KeptReduceAxes(const ir::Node* node) {
  const ir::Attribute* keepdims = node->FindAttribute("keepdims");
  if (keepdims != nullptr && keepdims->i != 1) return std::nullopt;
  if (node->opset() < 18) {
    const ir::Attribute* axes = node->FindAttribute("axes");
    if (axes == nullptr) return std::nullopt;
    return axes->ints;
  }
  const ir::Value* axes = node->input(1);
  const Tensor* t = axes == nullptr ? nullptr : axes->constant();
  if (t == nullptr || t->dtype() != DataType::kInt64) return std::nullopt;
  return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->NumElements());
}

ir::Node* ReplaceChain(ir::Graph& graph, const std::vector<ir::Node*>& chain, ir::NodeSpec spec) {
  ir::Node* last = chain.back();
  ir::Node* fused = graph.AddNode(std::move(spec), {""});
  graph.MoveBefore(fused, last);
  graph.TransferOutput(last, 0, fused, 0);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) graph.RemoveNode(*it);
  return fused;
}

}  // namespace onnxserve::passes
