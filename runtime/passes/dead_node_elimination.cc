// Dead-node elimination: a node none of whose outputs is read (by a node, a subgraph or the graph's
// outputs) goes, last first, so that chains feeding only dead nodes go too. ONNX ops have no side effects.
#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "runtime/passes/pass.h"

namespace onnxserve::passes {
namespace {

// Whether a node not in `dead` (or the graph's outputs) reads one of `node`'s outputs.
bool ReadByTheLiving(const ir::Node& node, const absl::flat_hash_set<const ir::Node*>& dead) {
  return std::any_of(node.outputs().begin(), node.outputs().end(), [&](const ir::Value* out) {
    return out != nullptr && (out->is_graph_output() ||
                              std::any_of(out->uses().begin(), out->uses().end(),
                                          [&](const ir::Use& use) { return !dead.contains(use.node); }));
  });
}

class DeadNodeElimination final : public Pass {
 public:
  std::string_view name() const override { return "dead-node-elimination"; }

  // Decides last first, then removes all at once: a model of many dead nodes costs one scan, not one per node.
  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    std::vector<ir::Node*> nodes = graph.nodes();
    absl::flat_hash_set<const ir::Node*> dead;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (ReadByTheLiving(**it, dead)) continue;
      changes.push_back(absl::StrCat("removed ", (*it)->Label(), ": nothing reads its outputs"));
      dead.insert(*it);
    }
    if (!dead.empty()) graph.RemoveNodes(dead);
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> MakeDeadNodeElimination() { return std::make_unique<DeadNodeElimination>(); }

}  // namespace onnxserve::passes
