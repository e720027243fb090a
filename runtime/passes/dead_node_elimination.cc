// Dead-node elimination: a node none of whose outputs is read (by a node, a subgraph or the graph's
// outputs) goes, last first, so that chains feeding only dead nodes go too. ONNX ops have no side effects.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/passes/pass.h"

namespace onnxserve::passes {
namespace {

bool AnyOutputUsed(const ir::Node& node) {
  return std::any_of(node.outputs().begin(), node.outputs().end(),
                     [](const ir::Value* out) { return out != nullptr && out->is_used(); });
}

class DeadNodeElimination final : public Pass {
 public:
  std::string_view name() const override { return "dead-node-elimination"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    std::vector<ir::Node*> nodes = graph.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (AnyOutputUsed(**it)) continue;
      changes.push_back(absl::StrCat("removed ", (*it)->Label(), ": nothing reads its outputs"));
      graph.RemoveNode(*it);
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> MakeDeadNodeElimination() { return std::make_unique<DeadNodeElimination>(); }

}  // namespace onnxserve::passes
