#include "runtime/exec/plan.h"

#include <map>
#include <set>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/exception_status.h"
#include "runtime/core/status_macros.h"

namespace onnxserve {
namespace {

std::string NodeName(const onnx::NodeProto& node, int index) {
  if (!node.name().empty()) return node.name();
  return index < 0 ? std::string("(fused)") : absl::StrCat("#", index);
}

void CollectUnsupported(const Model& model, const Graph& graph, std::vector<UnsupportedNode>& out) {
  const auto& registry = KernelRegistry::Global();
  for (int i = 0; i < graph.proto().node_size(); ++i) {
    const auto& node = graph.proto().node(i);
    const int64_t opset = model.OpsetFor(node.domain());
    if (registry.Find(node.domain(), node.op_type(), opset) == nullptr) {
      std::vector<std::string> ranges;
      for (const KernelDef* def : registry.Versions(node.domain(), node.op_type())) {
        ranges.push_back(def->VersionRange());
      }
      out.push_back({CanonicalDomain(node.domain()), node.op_type(), opset, NodeName(node, i),
                     absl::StrJoin(ranges, ", ")});
    }
    for (const auto& attr : node.attribute()) {
      if (const Graph* sub = graph.Subgraph(i, attr.name())) CollectUnsupported(model, *sub, out);
    }
  }
}

std::string InputName(const ir::Node& node, int index) {
  const ir::Value* in = node.input(index);
  return absl::StrCat("input ", index, in != nullptr ? absl::StrCat(" (\"", in->name(), "\")") : "");
}

// Whether `value` may be fed where `type` is declared: its kind (an optional also takes its element, as
// ONNX's optional ops do), and for tensors of a sequence or optional, their element type.
bool MatchesDeclared(const ir::Type& type, const Value& value) {
  const Value::Kind kind = type.value_kind();
  if (kind == Value::Kind::kNone) return true;
  if (kind == Value::Kind::kOptional) {
    if (!value.is_optional()) return type.inner == nullptr || MatchesDeclared(*type.inner, value);
    return !value.has_element() || type.inner == nullptr || MatchesDeclared(*type.inner, value.element());
  }
  if (value.kind() != kind) return false;
  if (kind == Value::Kind::kSequence && type.inner != nullptr && type.inner->is_tensor() &&
      type.inner->elem != DataType::kUndefined) {
    for (const Value& element : value.elements()) {
      if (!MatchesDeclared(*type.inner, element)) return false;
    }
  }
  if (kind == Value::Kind::kTensor && type.elem != DataType::kUndefined) return type.elem == value.tensor()->dtype();
  return true;
}

}  // namespace

std::vector<UnsupportedNode> FindUnsupportedNodes(const Model& model) {
  std::vector<UnsupportedNode> out;
  CollectUnsupported(model, model.graph(), out);
  return out;
}

std::string DescribeUnsupported(const std::vector<UnsupportedNode>& nodes) {
  std::map<std::tuple<std::string, std::string, int64_t>, std::pair<std::string, std::vector<std::string>>>
      grouped;
  for (const auto& n : nodes) {
    auto& entry = grouped[{n.domain, n.op_type, n.opset}];
    entry.first = n.registered;
    entry.second.push_back(absl::StrCat("\"", n.node, "\""));
  }
  std::vector<std::string> parts;
  for (const auto& [key, entry] : grouped) {
    const auto& [domain, op, opset] = key;
    std::string known = entry.first.empty() ? "not implemented"
                                            : absl::StrCat("registered versions ", entry.first);
    if (opset == 0) known = absl::StrCat("the model imports no opset for domain ", domain);
    parts.push_back(absl::StrCat(domain, " ", op, " (opset ", opset, ", ", known,
                                 ") used by node(s) ", absl::StrJoin(entry.second, ", ")));
  }
  return absl::StrCat("unsupported operators: ", absl::StrJoin(parts, "; "));
}

int ExecutionPlan::SlotOf(const ir::Value* value) {
  auto [it, inserted] = slots_.emplace(value, static_cast<int>(slots_.size()));
  return it->second;
}

absl::StatusOr<std::unique_ptr<ExecutionPlan>> ExecutionPlan::Compile(const ir::Graph& graph) {
  std::unique_ptr<ExecutionPlan> plan(new ExecutionPlan);
  plan->graph_ = &graph;
  for (const ir::Value* constant : graph.constants()) plan->kinds_[constant] = Value::Kind::kTensor;
  for (const ir::Value* in : graph.input_values()) {
    plan->input_slots_.push_back(plan->SlotOf(in));
    plan->feed_slots_[in->name()] = plan->input_slots_.back();
  }
  for (const ir::Value* constant : graph.constants()) {
    plan->constants_.push_back({plan->SlotOf(constant), Value(*constant->constant())});
  }
  for (const std::string& name : graph.outer_scope_reads()) {
    const int slot = plan->SlotOf(graph.FindValue(name));
    plan->outer_slots_.push_back({name, slot});
    plan->feed_slots_[name] = slot;
  }
  for (const ir::Node* node : graph.nodes()) {
    ASSIGN_OR_RETURN(Step step, plan->MakeStep(*node));
    plan->steps_.push_back(std::move(step));
  }
  for (const ir::Value* out : graph.output_values()) plan->output_slots_.push_back(plan->SlotOf(out));
  plan->PlanReleases();
  return plan;
}

absl::StatusOr<ExecutionPlan::Step> ExecutionPlan::MakeStep(const ir::Node& node) {
  Step step;
  step.op_type = node.op_type();
  step.def = KernelRegistry::Global().Find(node.domain(), node.op_type(), node.opset());
  if (step.def == nullptr) {
    return absl::UnimplementedError(absl::StrCat(node.Label(), ": no kernel for ", node.domain(), " ",
                                                 node.op_type(), " at opset ", node.opset()));
  }
  step.label = node.Label(step.def->since_version);
  step.node = &node;

  std::vector<std::pair<std::string, const ExecutionPlan*>> subgraphs;
  for (const auto& [attribute, subgraph] : node.subgraphs()) {
    auto subplan = Compile(*subgraph);
    if (!subplan.ok()) {
      return absl::Status(subplan.status().code(), absl::StrCat(step.label, " attribute \"", attribute,
                                                                "\": ", subplan.status().message()));
    }
    subgraphs.push_back({attribute, subplan->get()});
    subplans_.push_back(*std::move(subplan));
  }
  for (const ir::Value* value : node.implicit_inputs()) step.outer_scope.push_back({value->name(), SlotOf(value)});

  std::vector<const Tensor*> constant_inputs;
  for (const ir::Value* in : node.inputs()) {
    step.inputs.push_back(in == nullptr ? -1 : SlotOf(in));
    constant_inputs.push_back(in == nullptr ? nullptr : in->constant());
  }
  for (const ir::Value* out : node.outputs()) {
    step.outputs.push_back(out == nullptr ? -1 : SlotOf(out));
    step.outputs_wanted.push_back(out != nullptr && out->is_used());
  }
  KernelInfo info(node, std::move(constant_inputs), std::move(subgraphs));
  // Creating a kernel may allocate from sizes the model gives (packed weights, tables).
  auto kernel = CatchExceptions([&] { return step.def->create(info); });
  if (!kernel.ok()) {
    return absl::Status(kernel.status().code(), absl::StrCat(step.label, ": ", kernel.status().message()));
  }
  step.kernel = *std::move(kernel);
  RETURN_IF_ERROR(CheckInputKinds(step));
  for (size_t o = 0; o < node.outputs().size(); ++o) {
    const ir::Value* out = node.outputs()[o];
    if (out == nullptr) continue;
    const Value::Kind produced = step.kernel->OutputKind(static_cast<int>(o));
    kinds_[out] = produced != Value::Kind::kNone ? produced : out->type().value_kind();
  }
  return step;
}

// A kernel that takes tensors, reading a value known at load to be of another kind, is a load error.
absl::Status ExecutionPlan::CheckInputKinds(const Step& step) const {
  if (step.kernel->TakesValues()) return absl::OkStatus();
  for (int i = 0; i < static_cast<int>(step.node->inputs().size()); ++i) {
    const ir::Value* in = step.node->input(i);
    if (in == nullptr) continue;
    auto it = kinds_.find(in);
    const Value::Kind kind = it != kinds_.end() ? it->second : in->type().value_kind();
    if (kind != Value::Kind::kNone && kind != Value::Kind::kTensor) {
      return absl::InvalidArgumentError(absl::StrCat(step.label, ": ", InputName(*step.node, i), " is a ",
                                                     ValueKindName(kind), "; the kernel takes tensors"));
    }
  }
  return absl::OkStatus();
}

// The run-time side of CheckInputKinds, for values whose kind was not known at load.
absl::Status ExecutionPlan::CheckInputValues(const Step& step, const std::vector<const Value*>& inputs) const {
  if (step.kernel->TakesValues()) return absl::OkStatus();
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    if (inputs[i] != nullptr && !inputs[i]->is_tensor()) {
      return absl::InvalidArgumentError(absl::StrCat(step.label, ": ", InputName(*step.node, i), " is ",
                                                     inputs[i]->DebugString(), "; the kernel takes tensors"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> ExecutionPlan::StepOps() const {
  std::vector<std::string> ops;
  for (const Step& step : steps_) ops.push_back(step.op_type);
  return ops;
}

void ExecutionPlan::PlanReleases() {
  // Only values computed by steps are owned by a run; graph outputs are kept to the end.
  std::vector<int> last_reader(slots_.size(), -1);
  std::vector<bool> owned(slots_.size(), false);
  for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
    for (int slot : steps_[s].outputs) {
      if (slot >= 0) {
        owned[slot] = true;
        last_reader[slot] = std::max(last_reader[slot], s);
      }
    }
    for (int slot : steps_[s].inputs) {
      if (slot >= 0) last_reader[slot] = s;
    }
    for (const auto& [name, slot] : steps_[s].outer_scope) last_reader[slot] = s;
  }
  for (int slot : output_slots_) owned[slot] = false;
  for (int slot = 0; slot < static_cast<int>(slots_.size()); ++slot) {
    if (owned[slot] && last_reader[slot] >= 0) steps_[last_reader[slot]].release_after.push_back(slot);
  }
  for (Step& step : steps_) {
    step.inputs_last_read.assign(step.inputs.size(), false);
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int slot = step.inputs[i];
      const bool released = absl::c_linear_search(step.release_after, slot);
      const bool read_once = absl::c_count(step.inputs, slot) == 1 &&
                             absl::c_none_of(step.outer_scope, [&](const auto& outer) { return outer.second == slot; });
      step.inputs_last_read[i] = slot >= 0 && released && read_once;
    }
  }
}

absl::Status ExecutionPlan::CheckFeed(size_t input, const Value& value) const {
  const ValueInfo& info = graph_->inputs()[input];
  const ir::Type& declared = graph_->input_values()[input]->type();
  bool ok = MatchesDeclared(declared, value);
  if (ok && info.is_tensor && info.has_shape) {
    const Tensor& tensor = *value.tensor();
    ok = static_cast<int64_t>(info.dims.size()) == tensor.rank();
    for (size_t d = 0; ok && d < info.dims.size(); ++d) {
      ok = info.dims[d] < 0 || info.dims[d] == tensor.dim(static_cast<int64_t>(d));
    }
  }
  if (!ok) {
    const std::string expected = info.is_tensor ? info.DebugString() : declared.DebugString();
    return absl::InvalidArgumentError(absl::StrCat("input \"", info.name, "\": expected ", expected, ", got ",
                                                   value.DebugString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Value>> ExecutionPlan::Run(const std::vector<NamedValue>& feeds, ThreadPool& pool,
                                                      const RunLimits& limits) const {
  std::vector<const Value*> view(slots_.size(), nullptr);
  std::vector<Value> owned(slots_.size());
  for (const auto& [slot, value] : constants_) view[slot] = &value;
  for (const auto& [name, value] : feeds) {
    auto it = feed_slots_.find(name);
    if (it == feed_slots_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" is not an input of graph \"",
                                                     graph_->name(), "\""));
    }
    view[it->second] = value;
  }
  for (size_t i = 0; i < input_slots_.size(); ++i) {
    const ValueInfo& info = graph_->inputs()[i];
    if (view[input_slots_[i]] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("missing input \"", info.name, "\""));
    }
    RETURN_IF_ERROR(CheckFeed(i, *view[input_slots_[i]]));
  }
  for (const auto& [name, slot] : outer_slots_) {
    if (view[slot] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("missing outer-scope value \"", name, "\""));
    }
  }

  const ScopedRunLimits stop_kernels_with_the_run(&limits);
  // One pair of vectors for every step's inputs and outputs, so that a run allocates nothing for its steps
  // once they have grown to the widest (a model of tens of microseconds ran 3% in malloc and free).
  std::vector<const Value*> inputs;
  std::vector<Value> outputs;
  for (const Step& step : steps_) {
    if (absl::Status status = limits.Check(); !status.ok()) {
      return absl::Status(status.code(), absl::StrCat(status.message(), " before ", step.label));
    }
    RestartWorkCount();
    inputs.clear();
    for (int slot : step.inputs) inputs.push_back(slot < 0 ? nullptr : view[slot]);
    RETURN_IF_ERROR(CheckInputValues(step, inputs));
    const Tensor* first = inputs.empty() || inputs[0] == nullptr ? nullptr : inputs[0]->tensor();
    if (first != nullptr && !step.def->Accepts(first->dtype())) {
      return absl::UnimplementedError(absl::StrCat(step.label, ": no kernel for element type ",
                                                   DataTypeName(first->dtype())));
    }
    std::vector<std::pair<std::string, const Value*>> outer;
    for (const auto& [name, slot] : step.outer_scope) outer.push_back({name, view[slot]});
    outputs.assign(step.outputs.size(), Value());
    KernelContext ctx(inputs, &outputs, step.outputs_wanted, &pool, std::move(outer), &limits, &step.inputs_last_read);
    absl::Status status = CatchExceptions([&] { return step.kernel->Compute(ctx); });
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat(step.label, ": ", status.message()));
    }
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const int slot = step.outputs[o];
      if (slot < 0) continue;
      if (!outputs[o].defined()) {
        // A model's fault (a Relu given two outputs), found when something reads the one never made.
        if (!step.outputs_wanted[o]) continue;
        return absl::InvalidArgumentError(absl::StrCat(step.label, " makes no output ", o, " (\"",
                                                       step.node->output(o)->name(),
                                                       "\"): the node lists more outputs than the op has"));
      }
      owned[slot] = std::move(outputs[o]);
      view[slot] = &owned[slot];
    }
    for (int slot : step.release_after) {
      owned[slot] = Value();
      view[slot] = nullptr;
    }
  }

  std::vector<Value> results;
  results.reserve(output_slots_.size());
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    const Value* value = view[output_slots_[i]];
    if (value == nullptr) {
      return absl::InternalError(absl::StrCat("output \"", graph_->outputs()[i].name, "\" was not computed"));
    }
    results.push_back(*value);
  }
  return results;
}

}  // namespace onnxserve
