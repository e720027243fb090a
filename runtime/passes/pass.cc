#include "runtime/passes/pass.h"

#include <cstdint>
#include <limits>

#include "runtime/core/checked_size.h"
#include "runtime/core/status_macros.h"

namespace onnxserve::passes {
namespace {

absl::Status RunOnGraphAndSubgraphs(const Pass& pass, ir::Graph& graph, std::vector<std::string>& changes) {
  for (ir::Node* node : graph.nodes()) {
    for (const auto& [attribute, subgraph] : node->subgraphs()) {
      RETURN_IF_ERROR(RunOnGraphAndSubgraphs(pass, *subgraph, changes));
    }
  }
  RETURN_IF_ERROR(pass.Run(graph, changes));
  graph.Compact();
  return absl::OkStatus();
}

// The bytes of the graph's constants, saturating at int64's end: the count of constants is the model's.
int64_t ConstantBytes(const ir::Graph& graph) {
  int64_t bytes = 0;
  for (const ir::Value* value : graph.constants()) {
    bytes = CheckedAdd(bytes, value->constant()->ByteSize()).value_or(std::numeric_limits<int64_t>::max());
  }
  return bytes;
}

}  // namespace

std::vector<std::unique_ptr<Pass>> DefaultPasses(const ir::Graph& graph) {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(MakeIdentityElimination());
  // Folding first: light models rebuild their weights with ConstantOfShape, and fusion needs them constant.
  passes.push_back(MakeConstantFolding(kConstantFoldingBudget, ConstantFoldingMemoryBudget(ConstantBytes(graph))));
  passes.push_back(MakeTransposeReshapeElimination());
  passes.push_back(MakeGeluFusion());
  passes.push_back(MakeConvFusion());
  passes.push_back(MakeGemmFusion());
  passes.push_back(MakeLayerNormFusion());
  passes.push_back(MakeAttentionFusion());
  passes.push_back(MakeChannelsLast());
  passes.push_back(MakeNhwcPrologueFusion());
  passes.push_back(MakeDeadNodeElimination());
  return passes;
}

absl::StatusOr<std::vector<PassReport>> Optimize(ir::Graph& graph,
                                                 const std::vector<std::unique_ptr<Pass>>& passes) {
  std::vector<PassReport> reports;
  for (const auto& pass : passes) {
    PassReport report{std::string(pass->name()), {}};
    RETURN_IF_ERROR(RunOnGraphAndSubgraphs(*pass, graph, report.changes));
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace onnxserve::passes
