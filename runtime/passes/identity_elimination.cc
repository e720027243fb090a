// Identity elimination: readers of an Identity's output (or of an inference-mode Dropout's, which the spec
// defines as the identity) read its input instead, and the node goes. An output that is a graph output
// keeps its node, since the graph must produce a value of that name; so does one that a subgraph reads by
// name.
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "runtime/passes/pass.h"

namespace onnxserve::passes {
namespace {

bool IsOnnx(const ir::Node& node) { return node.domain() == "ai.onnx"; }

// Dropout from version 7 on is the identity at inference unless training_mode (version 12+) is given; its
// mask output must be unused.
bool IsInferenceDropout(const ir::Node& node) {
  if (node.op_type() != "Dropout" || node.opset() < 7) return false;
  if (node.input(2) != nullptr) return false;
  return node.output(1) == nullptr || !node.output(1)->is_used();
}

bool ReadByName(const ir::Value& value) {
  for (const ir::Use& use : value.uses()) {
    if (use.index < 0) return true;
  }
  return false;
}

class IdentityElimination final : public Pass {
 public:
  std::string_view name() const override { return "identity-elimination"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    // Removed all at once: a model of many Identities costs one scan of the graph, not one per node.
    absl::flat_hash_set<const ir::Node*> removed;
    for (ir::Node* node : graph.nodes()) {
      if (!IsOnnx(*node) || (node->op_type() != "Identity" && !IsInferenceDropout(*node))) continue;
      ir::Value* in = node->input(0);
      ir::Value* out = node->output(0);
      if (in == nullptr || out == nullptr || out->is_graph_output() || ReadByName(*out)) continue;
      graph.ReplaceAllUses(out, in);
      changes.push_back(absl::StrCat("removed ", node->Label(), ": readers of \"", out->name(), "\" read \"",
                                     in->name(), "\""));
      removed.insert(node);
    }
    if (!removed.empty()) graph.RemoveNodes(removed);
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> MakeIdentityElimination() { return std::make_unique<IdentityElimination>(); }

}  // namespace onnxserve::passes
