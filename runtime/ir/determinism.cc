#include "runtime/ir/determinism.h"

#include <string>
#include <string_view>

namespace onnxserve::ir {
namespace {

// Dropout's mode, as its versions decide it (runtime/ops/nn/dropout.cc): only training draws a mask.
bool DropoutMayTrain(const Node& node) {
  if (node.opset() < 7) {
    const Attribute* is_test = node.FindAttribute("is_test");
    return is_test == nullptr || is_test->i == 0;
  }
  if (node.opset() < 12) return false;
  const Value* training = node.input(2);
  if (training == nullptr) return false;
  const Tensor* known = training->constant();
  return known == nullptr || known->dtype() != DataType::kBool || known->NumElements() != 1 || *known->data<bool>();
}

}  // namespace

bool IsRandomOp(const Node& node) {
  static constexpr std::string_view kRandom[] = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                 "RandomUniformLike", "Bernoulli", "Multinomial", "Dropout"};
  for (std::string_view op : kRandom) {
    if (node.op_type() == op) return true;
  }
  return false;
}

const Node* FindRandomNode(const Graph& graph) {
  for (const Node* node : graph.nodes()) {
    if (IsRandomOp(*node) && (node->op_type() != "Dropout" || DropoutMayTrain(*node))) return node;
    for (const auto& [attribute, subgraph] : node->subgraphs()) {
      if (const Node* found = FindRandomNode(*subgraph); found != nullptr) return found;
    }
  }
  return nullptr;
}

}  // namespace onnxserve::ir
