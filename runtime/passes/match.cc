#include "runtime/passes/match.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/ops/fused_activation.h"
#include "runtime/registry/registry.h"

namespace onnxserve::passes {

bool IsOp(const ir::Node* node, std::string_view op_type) {
  return node != nullptr && node->domain() == "ai.onnx" && node->op_type() == op_type;
}

std::optional<double> ScalarConstant(const ir::Value* value, int64_t max_rank) {
  const Tensor* t = value == nullptr ? nullptr : value->constant();
  if (t == nullptr || t->NumElements() != 1 || t->rank() > max_rank) return std::nullopt;
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

namespace {

float FloatAttributeOr(const ir::Node* node, std::string_view name, float fallback) {
  const ir::Attribute* attr = node->FindAttribute(name);
  return attr == nullptr ? fallback : attr->f;
}

// Clip's bound: from attribute `name` before opset 11, from input `index` (a constant float scalar) from 11
// on; omitted, it is the float's `limit` in both (so an infinite input becomes finite); nullopt when not
// known at load.
std::optional<float> ClipBound(const ir::Node* node, std::string_view name, int index, float limit) {
  if (node->opset() < 11) return FloatAttributeOr(node, name, limit);
  const ir::Value* bound = node->input(index);
  if (bound == nullptr) return limit;
  const Tensor* t = bound->constant();
  if (t == nullptr || t->dtype() != DataType::kFloat || t->NumElements() != 1) return std::nullopt;
  return t->data<float>()[0];
}

std::optional<std::vector<float>> ActivationParams(const ir::Node* node) {
  const std::string& op = node->op_type();
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") return std::vector<float>{};
  if (op == "LeakyRelu") return std::vector<float>{FloatAttributeOr(node, "alpha", 0.01f)};
  if (op == "HardSigmoid") {
    return std::vector<float>{FloatAttributeOr(node, "alpha", 0.2f), FloatAttributeOr(node, "beta", 0.5f)};
  }
  if (op == "Gelu") {
    const ir::Attribute* approximate = node->FindAttribute("approximate");
    if (approximate == nullptr || approximate->s == "none") return std::vector<float>{};
    if (approximate->s == "tanh") return std::vector<float>{1.0f};
    return std::nullopt;  // the kernel reports it
  }
  if (op == "Clip") {
    constexpr float kMax = std::numeric_limits<float>::max();
    const std::optional<float> lo = ClipBound(node, "min", 1, -kMax), hi = ClipBound(node, "max", 2, kMax);
    if (!lo || !hi) return std::nullopt;
    return std::vector<float>{*lo, *hi};
  }
  return std::nullopt;
}

}  // namespace

std::optional<ActivationAttributes> FusibleActivation(const ir::Node* node) {
  if (node == nullptr || node->domain() != "ai.onnx" || node->input(0) == nullptr) return std::nullopt;
  std::optional<std::vector<float>> params = ActivationParams(node);
  if (!params || !ActivationOf(node->op_type(), *params).ok()) return std::nullopt;
  return ActivationAttributes{node->op_type(), *std::move(params)};
}

bool HasActivation(const ir::Node* node) { return node->FindAttribute("activation") != nullptr; }

void SetActivation(ir::Node* node, const ActivationAttributes& activation) {
  node->SetAttribute(ir::StringAttribute("activation", activation.name));
  if (activation.params.empty()) return;
  ir::Attribute params;
  params.name = "activation_params";
  params.type = ir::AttributeType::kFloats;
  params.floats = activation.params;
  node->SetAttribute(std::move(params));
}

void AbsorbReader(ir::Graph& graph, ir::Node* producer, ir::Node* reader, std::string_view fused_op,
                  std::vector<std::string>& changes) {
  changes.push_back(absl::StrCat("fused ", reader->Label(), " into ", producer->Label()));
  if (producer->op_type() != fused_op) graph.SetOp(producer, std::string(kInternal), std::string(fused_op), 1);
  graph.MoveBefore(producer, reader);
  graph.TransferOutput(reader, 0, producer, 0);
  graph.RemoveNode(reader);
}

}  // namespace onnxserve::passes
