// An ExecutionPlan is an optimized graph (runtime/ir/, rewritten by runtime/passes/) compiled once: nodes
// in order with their kernels created, every value given a slot, and for each node the slots whose last
// reader it is, so that intermediate buffers go back to the allocator's cache the moment nothing needs them
// and a later node of about their size reuses them while they are in cache. Run() is const and keeps all
// per-run state in a local frame: one plan serves many threads.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/core/value.h"
#include "runtime/ir/graph.h"
#include "runtime/model/model.h"
#include "runtime/registry/registry.h"

namespace onnxserve {

// An unsupported node, as reported by FindUnsupportedNodes and by a failed Compile.
struct UnsupportedNode {
  std::string domain;
  std::string op_type;
  int64_t opset;
  std::string node;  // the node's name or "#index"
  std::string registered;  // "1-12, 13+" or "" when the op is not registered at all
};

// Every node of the model (subgraphs included) that has no kernel at the model's opset.
std::vector<UnsupportedNode> FindUnsupportedNodes(const Model& model);
// One message listing every unsupported (domain, op_type, opset) with the nodes that use it.
std::string DescribeUnsupported(const std::vector<UnsupportedNode>& nodes);

using NamedValue = std::pair<std::string, const Value*>;

class ExecutionPlan {
 public:
  // Compiles `graph` (a model's main graph or one of its subgraphs) and its subgraphs. The plan keeps
  // pointers into `graph`, which must outlive it.
  static absl::StatusOr<std::unique_ptr<ExecutionPlan>> Compile(const ir::Graph& graph);

  const ir::Graph& graph() const { return *graph_; }
  // The kernels one run executes, in order ("FusedConv", "Relu", ...).
  std::vector<std::string> StepOps() const;

  // Runs the graph. `feeds` holds the graph inputs and, for subgraphs, the outer-scope values the graph
  // reads, by name. Returns the graph outputs in graph order. Inputs are checked against the graph's
  // declared types (kind, element type, static dims); an input declared optional also takes its element.
  // `limits` is checked before every step.
  absl::StatusOr<std::vector<Value>> Run(const std::vector<NamedValue>& feeds, ThreadPool& pool,
                                         const RunLimits& limits = {}) const;

 private:
  struct Step {
    const KernelDef* def;
    std::unique_ptr<OpKernel> kernel;
    std::string op_type;
    std::vector<int> inputs;   // slot per node input, -1 when omitted
    std::vector<int> outputs;  // slot per node output, -1 when unnamed
    std::vector<bool> outputs_wanted;
    std::vector<std::pair<std::string, int>> outer_scope;  // values its subgraphs read
    std::vector<int> release_after;  // slots whose last reader this step is
    std::vector<bool> inputs_last_read;  // per input: a slot of release_after given to this input only
    std::string label;  // "node \"name\" (Op-13)" for error messages
    const ir::Node* node;
  };

  ExecutionPlan() = default;
  int SlotOf(const ir::Value* value);
  absl::StatusOr<Step> MakeStep(const ir::Node& node);
  void PlanReleases();
  absl::Status CheckInputKinds(const Step& step) const;
  absl::Status CheckInputValues(const Step& step, const std::vector<const Value*>& inputs) const;
  absl::Status CheckFeed(size_t input, const Value& value) const;

  const ir::Graph* graph_ = nullptr;
  absl::flat_hash_map<const ir::Value*, int> slots_;
  // The kind of each value known at load (constants, what kernels produce), where the declaration says none.
  absl::flat_hash_map<const ir::Value*, Value::Kind> kinds_;
  absl::flat_hash_map<std::string, int> feed_slots_;  // graph inputs and outer-scope values, by name
  std::vector<std::unique_ptr<ExecutionPlan>> subplans_;
  std::vector<Step> steps_;
  std::vector<std::pair<int, Value>> constants_;
  std::vector<int> input_slots_;   // per graph input
  std::vector<int> output_slots_;  // per graph output
  std::vector<std::pair<std::string, int>> outer_slots_;  // outer-scope values read, by name
};

}  // namespace onnxserve
