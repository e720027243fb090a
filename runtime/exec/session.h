// A Session is a loaded, compiled model ready to run: the public entry point of the runtime.
// Run() is thread-safe: many requests may run one Session at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/exec/plan.h"
#include "runtime/model/model.h"
#include "runtime/passes/pass.h"

namespace onnxserve {

struct SessionOptions {
  // Threads for one run's intra-op work. OpenBLAS runs single-threaded inside each task (runtime/ops/blas.cc)
  // and large GEMMs are split over this pool, so N here means N threads in all. Runs of one session share
  // the pool.
  int intra_op_threads = 1;
  // The bytes of tensor storage one run may hold at once (runtime/core/memory_budget.h); 0 means no budget.
  // A run that would pass it fails with RESOURCE_EXHAUSTED naming the node, and frees what it held.
  int64_t memory_budget_bytes = 0;
  // Run the graph passes (runtime/passes/) before planning. Off only to compare results with and without
  // them.
  bool optimize = true;
};

class Session {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Create(std::shared_ptr<const Model> model,
                                                         const SessionOptions& options = {});
  static absl::StatusOr<std::unique_ptr<Session>> LoadFile(const std::string& path,
                                                           const SessionOptions& options = {});

  const Model& model() const { return *model_; }
  const ExecutionPlan& plan() const { return *plan_; }
  // What each graph pass did when the session was created (empty without SessionOptions::optimize).
  const std::vector<passes::PassReport>& pass_reports() const { return pass_reports_; }
  // The graph's inputs (initializers excluded) and outputs, as declared.
  const std::vector<ValueInfo>& inputs() const { return model_->graph().inputs(); }
  const std::vector<ValueInfo>& outputs() const { return model_->graph().outputs(); }
  // Their declared types, which say which are tensors, sequences, maps or optionals.
  const std::vector<ir::Type>& input_types() const { return input_types_; }
  const std::vector<ir::Type>& output_types() const { return output_types_; }

  // Runs the model. `output_names` picks outputs and their order; empty means all, in graph order. The run
  // stops with DEADLINE_EXCEEDED or CANCELLED between steps once `limits` says so. Each call has a memory
  // budget of its own (SessionOptions::memory_budget_bytes), subgraph runs included; the outputs it returns
  // stay charged to it until they are freed, which matters to no one once the call has returned.
  absl::StatusOr<std::vector<Value>> RunValues(const std::vector<std::pair<std::string, Value>>& feeds,
                                               const std::vector<std::string>& output_names = {},
                                               const RunLimits& limits = {}) const;
  // RunValues for tensors: every output it returns must be a tensor, and asking for one that is not (a
  // sequence, map or optional) is INVALID_ARGUMENT naming it.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                          const std::vector<std::string>& output_names = {},
                                          const RunLimits& limits = {}) const;

 private:
  Session(std::shared_ptr<const Model> model, std::unique_ptr<ir::Graph> graph,
          std::vector<passes::PassReport> pass_reports, std::unique_ptr<ExecutionPlan> plan,
          const SessionOptions& options);

  std::shared_ptr<const Model> model_;
  std::unique_ptr<ir::Graph> graph_;  // what plan_ runs
  std::vector<passes::PassReport> pass_reports_;
  std::unique_ptr<ExecutionPlan> plan_;
  std::vector<ir::Type> input_types_;
  std::vector<ir::Type> output_types_;
  int64_t memory_budget_bytes_;
  mutable ThreadPool pool_;
};

}  // namespace onnxserve
