// Constant folding: a deterministic node whose inputs are all known at load runs once, here, and its outputs
// become constants (light models rebuild all their weights with ConstantOfShape; exported graphs compute
// shapes from constants). A node that fails on its constants, or throws (say, an allocation too big to
// make), stays in the graph, so that the error surfaces, naming the node, when the model runs.
//
// Folding has budgets, one pass object's for the whole model (its graph and every subgraph): a few hundred
// bytes of model can spell hours of work on constants (a chain of large MatMuls of ConstantOfShape outputs)
// or tens of gigabytes of them (ConstantOfShape of 2^32 bytes, a dozen times), and a load cannot be cancelled,
// so an unbounded fold would keep a model, or a starting server, LOADING forever, or end the server's
// process. The time budget is the folding kernels' run limits, so a long kernel stops inside its work once it
// is spent; the memory budget is a run's memory account (runtime/core/memory_budget.h) over every fold, so
// the folded constants kept and a kernel's scratch count until freed. A node past either budget stays in the
// graph and runs per request, where deadlines, execution_timeout_ms and the run's memory budget reach it.

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/core/checked_size.h"
#include "runtime/core/exception_status.h"
#include "runtime/core/memory_budget.h"
#include "runtime/core/run_limits.h"
#include "runtime/ir/determinism.h"
#include "runtime/passes/pass.h"
#include "runtime/registry/registry.h"

namespace onnxserve::passes {
namespace {

bool InputsAreConstant(const ir::Node& node) {
  for (const ir::Value* in : node.inputs()) {
    if (in != nullptr && in->constant() == nullptr) return false;
  }
  return true;
}

// The node's outputs computed from its constant inputs, or nullopt when it cannot be folded.
std::optional<std::vector<Tensor>> Evaluate(const ir::Node& node, const RunLimits& budget) {
  const KernelDef* def = KernelRegistry::Global().Find(node.domain(), node.op_type(), node.opset());
  if (def == nullptr) return std::nullopt;
  std::vector<const Tensor*> inputs;
  for (const ir::Value* in : node.inputs()) inputs.push_back(in == nullptr ? nullptr : in->constant());
  if (!inputs.empty() && inputs[0] != nullptr && !def->Accepts(inputs[0]->dtype())) return std::nullopt;
  const KernelInfo info(node, inputs, {});
  auto kernel = CatchExceptions([&] { return def->create(info); });
  if (!kernel.ok()) return std::nullopt;
  // One worker is enough: folding runs once, at load.
  static ThreadPool fold_pool(1);
  std::vector<Tensor> outputs(node.outputs().size());
  KernelContext ctx(std::move(inputs), &outputs, std::vector<bool>(outputs.size(), true), &fold_pool, {}, &budget);
  const ScopedRunLimits stop_at_the_budget(&budget);
  if (!CatchExceptions([&] { return (*kernel)->Compute(ctx); }).ok()) return std::nullopt;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const ir::Value* out = node.outputs()[o];
    if (out != nullptr && out->is_used() && !outputs[o].defined()) return std::nullopt;
  }
  return outputs;
}

class ConstantFolding final : public Pass {
 public:
  ConstantFolding(absl::Duration budget, int64_t memory_bytes)
      : budget_(budget), limits_(absl::Now() + budget),
        account_(std::make_shared<MemoryAccount>(memory_bytes)) {}

  std::string_view name() const override { return "constant-folding"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    const ScopedMemoryAccount charge_the_folds(account_);
    for (ir::Node* node : graph.nodes()) {
      if (!node->subgraphs().empty() || ir::IsRandomOp(*node) || !InputsAreConstant(*node)) continue;
      std::optional<std::vector<Tensor>> outputs;
      if (limits_.Check().ok()) outputs = Evaluate(*node, limits_);
      if (!limits_.Check().ok()) {
        changes.push_back(absl::StrCat("stopped at ", node->Label(), ": the ", absl::FormatDuration(budget_),
                                       " budget is spent, the rest runs per request"));
        break;
      }
      if (!outputs) continue;
      changes.push_back(absl::StrCat("folded ", node->Label()));
      const std::vector<ir::Value*> values = node->outputs();
      for (size_t o = 0; o < values.size(); ++o) {
        if (values[o] != nullptr && (*outputs)[o].defined()) graph.MakeConstant(values[o], std::move((*outputs)[o]));
      }
      graph.RemoveNode(node);
    }
    return absl::OkStatus();
  }

 private:
  const absl::Duration budget_;
  const RunLimits limits_;
  const std::shared_ptr<MemoryAccount> account_;
};

}  // namespace

int64_t ConstantFoldingMemoryBudget(int64_t constant_bytes) {
  const int64_t four_times = CheckedMul(4, constant_bytes).value_or(std::numeric_limits<int64_t>::max());
  return std::max(kMinConstantFoldingBytes, four_times);
}

std::unique_ptr<Pass> MakeConstantFolding(absl::Duration budget, int64_t memory_bytes) {
  return std::make_unique<ConstantFolding>(budget, memory_bytes);
}

}  // namespace onnxserve::passes
