#include "runtime/exec/session.h"

#include "absl/strings/str_cat.h"
#include "runtime/core/exception_status.h"
#include "runtime/core/memory_budget.h"
#include "runtime/core/status_macros.h"
#include "runtime/ir/builder.h"

namespace onnxserve {

Session::Session(std::shared_ptr<const Model> model, std::unique_ptr<ir::Graph> graph,
                 std::vector<passes::PassReport> pass_reports, std::unique_ptr<ExecutionPlan> plan,
                 const SessionOptions& options)
    : model_(std::move(model)), graph_(std::move(graph)), pass_reports_(std::move(pass_reports)),
      plan_(std::move(plan)), memory_budget_bytes_(options.memory_budget_bytes), pool_(options.intra_op_threads) {}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(std::shared_ptr<const Model> model,
                                                         const SessionOptions& options) {
  RETURN_IF_ERROR(KernelRegistry::Global().Validate());
  if (options.intra_op_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("intra_op_threads must be at least 1, got ", options.intra_op_threads));
  }
  if (options.memory_budget_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_budget_bytes must be 0 (no budget) or more, got ", options.memory_budget_bytes));
  }
  if (auto unsupported = FindUnsupportedNodes(*model); !unsupported.empty()) {
    return absl::UnimplementedError(DescribeUnsupported(unsupported));
  }
  // Kernels' throws are caught where they run; this catches the rest of building, optimizing and planning
  // (bookkeeping, the passes' own allocations), so that no model takes the process down at load.
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, CatchExceptions([&] { return ir::BuildGraph(*model); }));
  std::vector<passes::PassReport> reports;
  if (options.optimize) {
    ASSIGN_OR_RETURN(reports, CatchExceptions([&] { return passes::Optimize(*graph, passes::DefaultPasses()); }));
  }
  ASSIGN_OR_RETURN(auto plan, CatchExceptions([&] { return ExecutionPlan::Compile(*graph); }));
  return std::unique_ptr<Session>(new Session(std::move(model), std::move(graph), std::move(reports),
                                              std::move(plan), options));
}

absl::StatusOr<std::unique_ptr<Session>> Session::LoadFile(const std::string& path,
                                                           const SessionOptions& options) {
  ASSIGN_OR_RETURN(auto model, Model::LoadFromFile(path));
  return Create(std::move(model), options);
}

absl::StatusOr<std::vector<Tensor>> Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                 const std::vector<std::string>& output_names,
                                                 const RunLimits& limits) const {
  std::vector<NamedTensor> named;
  named.reserve(feeds.size());
  for (const auto& [name, tensor] : feeds) named.push_back({name, &tensor});
  // Set on this thread only: subgraphs run on it, and the pool carries the account to its workers.
  ScopedMemoryAccount account(memory_budget_bytes_ > 0 ? std::make_shared<MemoryAccount>(memory_budget_bytes_)
                                                       : nullptr);
  ASSIGN_OR_RETURN(std::vector<Tensor> all, plan_->Run(named, pool_, limits));
  if (output_names.empty()) return all;
  std::vector<Tensor> picked;
  picked.reserve(output_names.size());
  for (const auto& name : output_names) {
    size_t i = 0;
    while (i < outputs().size() && outputs()[i].name != name) ++i;
    if (i == outputs().size()) return absl::NotFoundError(absl::StrCat("model has no output \"", name, "\""));
    picked.push_back(all[i]);
  }
  return picked;
}

}  // namespace onnxserve
