// What kernels that run a node's compiled subgraphs share (If, Loop, Scan, FlexAttention's modifiers).
#pragma once

#include <vector>

#include "runtime/exec/plan.h"
#include "runtime/registry/kernel.h"

namespace onnxserve {

// The enclosing-graph values `plan` reads, to be fed along with its inputs.
std::vector<NamedValue> OuterFeeds(const KernelContext& ctx, const ExecutionPlan& plan);

}  // namespace onnxserve
