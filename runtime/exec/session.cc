#include "runtime/exec/session.h"

#include <algorithm>

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
      plan_(std::move(plan)), memory_budget_bytes_(options.memory_budget_bytes), pool_(options.intra_op_threads) {
  const onnx::GraphProto& proto = model_->graph().proto();
  for (const ValueInfo& info : inputs()) {
    for (const auto& declared : proto.input()) {
      if (declared.name() == info.name) input_types_.push_back(ir::TypeFromProto(declared.type()));
    }
  }
  for (const auto& declared : proto.output()) output_types_.push_back(ir::TypeFromProto(declared.type()));
}

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
    ASSIGN_OR_RETURN(reports, CatchExceptions([&] { return passes::Optimize(*graph, passes::DefaultPasses(*graph)); }));
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

absl::StatusOr<std::vector<Value>> Session::RunValues(const std::vector<std::pair<std::string, Value>>& feeds,
                                                      const std::vector<std::string>& output_names,
                                                      const RunLimits& limits) const {
  std::vector<NamedValue> named;
  named.reserve(feeds.size());
  for (const auto& [name, value] : feeds) named.push_back({name, &value});
  // Set on this thread only: subgraphs run on it, and the pool carries the account to its workers.
  ScopedMemoryAccount account(memory_budget_bytes_ > 0 ? std::make_shared<MemoryAccount>(memory_budget_bytes_)
                                                       : nullptr);
  ASSIGN_OR_RETURN(std::vector<Value> all, plan_->Run(named, pool_, limits));
  if (output_names.empty()) return all;
  std::vector<Value> picked;
  picked.reserve(output_names.size());
  for (const auto& name : output_names) {
    size_t i = 0;
    while (i < outputs().size() && outputs()[i].name != name) ++i;
    if (i == outputs().size()) return absl::NotFoundError(absl::StrCat("model has no output \"", name, "\""));
    picked.push_back(all[i]);
  }
  return picked;
}

absl::StatusOr<std::vector<Tensor>> Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                 const std::vector<std::string>& output_names,
                                                 const RunLimits& limits) const {
  std::vector<std::string> names = output_names;
  if (names.empty()) {
    for (const ValueInfo& info : outputs()) names.push_back(info.name);
  }
  for (size_t i = 0; i < outputs().size(); ++i) {
    const bool asked = std::find(names.begin(), names.end(), outputs()[i].name) != names.end();
    if (asked && !output_types_[i].is_tensor() && output_types_[i].kind != ir::Type::Kind::kUnknown) {
      return absl::InvalidArgumentError(absl::StrCat("output \"", outputs()[i].name, "\" is ",
                                                     output_types_[i].DebugString(), ", not a tensor"));
    }
  }
  std::vector<std::pair<std::string, Value>> values(feeds.begin(), feeds.end());
  ASSIGN_OR_RETURN(std::vector<Value> results, RunValues(values, names, limits));
  std::vector<Tensor> tensors;
  tensors.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].is_tensor()) {
      return absl::InvalidArgumentError(absl::StrCat("output \"", names[i], "\" is ", results[i].DebugString(),
                                                     ", not a tensor"));
    }
    tensors.push_back(*results[i].tensor());
  }
  return tensors;
}

}  // namespace onnxserve
