// The kernel interface. A kernel is created once per node when a model compiles (parsing and validating
// attributes, packing constant weights) and then computed many times, possibly from many threads at once:
// Compute is const and keeps per-run state on the stack or in its outputs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/core/run_limits.h"
#include "runtime/core/tensor.h"
#include "runtime/core/thread_pool.h"
#include "runtime/core/value.h"
#include "runtime/ir/graph.h"

namespace onnxserve {

class ExecutionPlan;

// What a kernel may look at when it is created: the node (of the graph IR), its attributes, the opset it
// resolved through, constant inputs and compiled subgraphs.
class KernelInfo {
 public:
  KernelInfo(const ir::Node& node, std::vector<const Tensor*> constant_inputs,
             std::vector<std::pair<std::string, const ExecutionPlan*>> subgraphs)
      : node_(node), constant_inputs_(std::move(constant_inputs)), subgraphs_(std::move(subgraphs)) {}

  const ir::Node& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  // The model's opset version for the node's domain (the kernel's registered range holds it).
  int opset() const { return static_cast<int>(node_.opset()); }

  int num_inputs() const { return static_cast<int>(node_.inputs().size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs().size()); }
  // Whether input i is given (an optional input may be omitted or named "").
  bool HasInput(int i) const { return node_.input(i) != nullptr; }
  bool HasOutput(int i) const { return node_.output(i) != nullptr; }
  // The value of input i when it is known at load time (an initializer or a folded value), else nullptr.
  const Tensor* ConstantInput(int i) const {
    return i < static_cast<int>(constant_inputs_.size()) ? constant_inputs_[i] : nullptr;
  }

  bool HasAttr(std::string_view name) const { return FindAttr(name) != nullptr; }
  const ir::Attribute* FindAttr(std::string_view name) const { return node_.FindAttribute(name); }

  // Attribute getters: the one-argument form requires the attribute, the two-argument form defaults it.
  // Both fail when the attribute has another type. T: int64_t, float, std::string, std::vector<int64_t>,
  // std::vector<float>, std::vector<std::string>, Tensor.
  template <typename T> absl::StatusOr<T> Attr(std::string_view name) const;
  template <typename T> absl::StatusOr<T> Attr(std::string_view name, T default_value) const {
    if (!HasAttr(name)) return default_value;
    return Attr<T>(name);
  }

  // The compiled subgraph of a graph attribute, or nullptr.
  const ExecutionPlan* Subgraph(std::string_view attr) const;

 private:
  const ir::Node& node_;
  std::vector<const Tensor*> constant_inputs_;
  std::vector<std::pair<std::string, const ExecutionPlan*>> subgraphs_;
};

// What a kernel sees when it runs: its inputs, space for its outputs, the intra-op thread pool.
//
// Slots hold Values (runtime/core/value.h). Kernels that take tensors read Input(i), a tensor, and write
// Output(i, ...); the executor checks before Compute that such a kernel is given tensors only (an error
// naming the node otherwise). Kernels that take other kinds (OpKernel::TakesValues) read InputValue(i) and
// write SetOutputValue(i, ...).
class KernelContext {
 public:
  // The executor's form: inputs and outer-scope values as its slots hold them, nullptr where omitted. The
  // context refers to `inputs`, `outputs_wanted` and `inputs_last_read`, which outlive it: the executor
  // reuses its vectors from step to step, so that a run allocates nothing for its steps. `inputs_last_read`
  // (null: none) says which inputs are values the run computed and reads for the last time here, each
  // given once (OutputOver).
  KernelContext(absl::Span<const Value* const> inputs, std::vector<Value>* outputs,
                const std::vector<bool>& outputs_wanted, ThreadPool* pool,
                std::vector<std::pair<std::string, const Value*>> outer_scope, const RunLimits* limits = nullptr,
                const std::vector<bool>* inputs_last_read = nullptr)
      : inputs_(inputs), outputs_(outputs), outputs_wanted_(&outputs_wanted), pool_(pool),
        outer_scope_(std::move(outer_scope)), limits_(limits), inputs_last_read_(inputs_last_read) {}
  // Tensors only (constant folding runs a kernel on constant tensors): SetOutputValue of anything but a
  // tensor fails, so the kernel's Compute fails.
  KernelContext(const std::vector<const Tensor*>& inputs, std::vector<Tensor>* outputs,
                std::vector<bool> outputs_wanted, ThreadPool* pool,
                const std::vector<std::pair<std::string, const Tensor*>>& outer_scope,
                const RunLimits* limits = nullptr);
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Input i as a tensor, or nullptr when it is omitted (or, for kernels that take values, not a tensor).
  const Tensor* Input(int i) const {
    const Value* value = InputValue(i);
    return value != nullptr ? value->tensor() : nullptr;
  }
  // Input i of any kind, or nullptr when it is omitted.
  const Value* InputValue(int i) const { return i < num_inputs() ? inputs_[i] : nullptr; }
  // For kernels that take values, input i where the spec wants a tensor: nullptr when omitted, an error
  // naming the input when it holds another kind.
  absl::StatusOr<const Tensor*> TensorInput(int i) const;

  int num_outputs() const { return static_cast<int>(outputs_wanted_->size()); }
  // Whether output i exists in the node and is consumed (optional outputs may be skipped when not).
  bool OutputWanted(int i) const { return i < num_outputs() && (*outputs_wanted_)[i]; }
  // Allocates output i with the given type and shape and returns it for writing. Throws as Tensor's
  // constructor does for a shape past the size limits; a kernel whose output shape comes from data uses
  // CheckedOutput so that the error is a value that says which input asked for it.
  Tensor& Output(int i, DataType type, Shape shape) {
    SetOutput(i, Tensor(type, std::move(shape)));
    return *MutableOutput(i);
  }
  // Output, with the shape checked against the size limits (runtime/core/checked_size.h) before anything is
  // allocated.
  absl::StatusOr<Tensor*> CheckedOutput(int i, DataType type, Shape shape) {
    absl::StatusOr<Tensor> tensor = Tensor::Create(type, std::move(shape));
    if (!tensor.ok()) return tensor.status();
    SetOutput(i, *std::move(tensor));
    return MutableOutput(i);
  }
  // Output i in the storage of input `input` where nothing reads that input after this step: a tensor of
  // `type` and `shape` that the run computed, reads here for the last time and through no other input,
  // whose storage no other value, view, model or request shares. Otherwise a new tensor, as Output makes.
  // Only for kernels that compute correctly with the output over that input (each element of the input
  // read before that element of the output is written). A residual sum's output over its addend saves the
  // new buffer's first touch and a stream through memory.
  Tensor& OutputOver(int i, int input, DataType type, Shape shape);
  // Sets output i to an existing tensor (sharing storage with an input is allowed: nothing writes to it).
  // An output the node does not list (a hostile model's Constant without one) is made and then dropped.
  void SetOutput(int i, Tensor t);
  // Sets output i to a value of any kind; dropped, as above, when the node does not list it.
  absl::Status SetOutputValue(int i, Value value);

  ThreadPool& pool() const { return *pool_; }
  // The run's deadline and cancellation: kernels that iterate (Loop, Scan) check them and pass them on to
  // the subgraphs they run.
  const RunLimits& limits() const {
    static const RunLimits kNone;
    return limits_ != nullptr ? *limits_ : kNone;
  }
  // Values of enclosing graphs that this node's subgraphs read, by name.
  const std::vector<std::pair<std::string, const Value*>>& outer_scope() const { return outer_scope_; }

 private:
  Tensor* MutableOutput(int i);
  // Whether the node lists output i (it may list fewer than the kernel writes).
  bool NodeLists(int i) const;

  // The tensors-only form's inputs and outer-scope values as values, and what it refers to.
  std::vector<Value> wrapped_;
  std::vector<const Value*> wrapped_inputs_;
  std::vector<bool> owned_wanted_;
  absl::Span<const Value* const> inputs_;
  std::vector<Value>* outputs_ = nullptr;
  std::vector<Tensor>* tensor_outputs_ = nullptr;  // the tensors-only form's outputs
  const std::vector<bool>* outputs_wanted_;
  Tensor dropped_;  // what a kernel writes to an output its node does not list
  ThreadPool* pool_;
  std::vector<std::pair<std::string, const Value*>> outer_scope_;
  const RunLimits* limits_;
  const std::vector<bool>* inputs_last_read_ = nullptr;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual absl::Status Compute(KernelContext& ctx) const = 0;
  // Whether the kernel takes inputs of any kind (sequences, maps, optionals) and reads them through
  // KernelContext::InputValue. The executor gives the others tensors only.
  virtual bool TakesValues() const { return false; }
  // The kind of output i, known at load so that a tensor kernel reading a sequence fails there; kNone when it
  // depends on the inputs (the output's declared type is used then).
  virtual Value::Kind OutputKind(int /*i*/) const { return TakesValues() ? Value::Kind::kNone : Value::Kind::kTensor; }
};

// Inputs that must be present: an error naming the input when one is not.
absl::Status RequireInputs(const KernelContext& ctx, int count);

}  // namespace onnxserve
