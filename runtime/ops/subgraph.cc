#include "runtime/ops/subgraph.h"

namespace onnxserve {

std::vector<NamedTensor> OuterFeeds(const KernelContext& ctx, const ExecutionPlan& plan) {
  std::vector<NamedTensor> feeds;
  for (const auto& name : plan.graph().outer_scope_reads()) {
    for (const auto& [outer_name, tensor] : ctx.outer_scope()) {
      if (outer_name == name) feeds.push_back({name, tensor});
    }
  }
  return feeds;
}

}  // namespace onnxserve
