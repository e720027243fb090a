// Graph passes: each rewrites the graph IR (runtime/ir/graph.h) in one way that keeps every output's value,
// and says what it did. Optimize runs the default pipeline over a graph and its subgraphs before the
// executor plans it; `onnxserve check MODEL --plan` prints the reports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/ir/graph.h"

namespace onnxserve::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Rewrites `graph` (not its subgraphs), appending one line per change to `changes`.
  virtual absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const = 0;
};

// What one pass did over a graph and its subgraphs.
struct PassReport {
  std::string pass;
  std::vector<std::string> changes;
};

// In order: identity elimination, constant folding, Transpose/Reshape elimination (so that fusion sees the
// shortest chains), Gelu fusion (so that a Gelu can then fuse into the Conv or MatMul before it), Conv
// fusion, Gemm fusion, LayerNormalization fusion, attention fusion, channels-last (it
// reads the fused convolutions), NHWC prologue fusion (it reads channels-last's convolutions), dead-node
// elimination. For one model:
// `graph` sets constant folding's memory budget, and the passes' budgets cover its subgraphs too.
std::vector<std::unique_ptr<Pass>> DefaultPasses(const ir::Graph& graph);

// Runs each pass over `graph`, subgraphs first; one report per pass.
absl::StatusOr<std::vector<PassReport>> Optimize(ir::Graph& graph,
                                                 const std::vector<std::unique_ptr<Pass>>& passes);

std::unique_ptr<Pass> MakeIdentityElimination();
// Folding stops once `budget` of wall time is spent, counted from the pass's creation, and leaves a node
// unfolded when folding it would hold more than `memory_bytes` of folded constants and scratch at once (see
// constant_folding.cc). One pass object serves one model.
inline constexpr absl::Duration kConstantFoldingBudget = absl::Seconds(10);
inline constexpr int64_t kMinConstantFoldingBytes = int64_t{1} << 30;
// What folding a graph whose constants take `constant_bytes` may hold: 4x those (a quantized model's weights
// dequantize to 4x theirs), and at least kMinConstantFoldingBytes.
int64_t ConstantFoldingMemoryBudget(int64_t constant_bytes);
std::unique_ptr<Pass> MakeConstantFolding(absl::Duration budget = kConstantFoldingBudget,
                                          int64_t memory_bytes = kMinConstantFoldingBytes);
std::unique_ptr<Pass> MakeConvFusion();
std::unique_ptr<Pass> MakeGemmFusion();
std::unique_ptr<Pass> MakeLayerNormFusion();
std::unique_ptr<Pass> MakeGeluFusion();
std::unique_ptr<Pass> MakeAttentionFusion();
std::unique_ptr<Pass> MakeTransposeReshapeElimination();
std::unique_ptr<Pass> MakeDeadNodeElimination();
std::unique_ptr<Pass> MakeChannelsLast();
std::unique_ptr<Pass> MakeNhwcPrologueFusion();

}  // namespace onnxserve::passes
