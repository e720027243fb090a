#include "runtime/ops/subgraph.h"

namespace onnxserve {

std::vector<NamedValue> OuterFeeds(const KernelContext& ctx, const ExecutionPlan& plan) {
  std::vector<NamedValue> feeds;
  for (const auto& name : plan.graph().outer_scope_reads()) {
    for (const auto& [outer_name, value] : ctx.outer_scope()) {
      if (outer_name == name) feeds.push_back({name, value});
    }
  }
  return feeds;
}

}  // namespace onnxserve
