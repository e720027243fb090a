#include "runtime/registry/kernel.h"

#include "runtime/core/status_macros.h"

namespace onnxserve {
namespace {

absl::Status WrongType(const ir::Attribute& attr, const char* want) {
  return absl::InvalidArgumentError(absl::StrCat("attribute \"", attr.name, "\" should be ", want, ", got ",
                                                 ir::AttributeTypeName(attr.type)));
}

}  // namespace

#define ONNXSERVE_ATTR_GETTER(T, ENUM, NAME, EXPR)                                            \
  template <>                                                                                \
  absl::StatusOr<T> KernelInfo::Attr<T>(std::string_view name) const {                       \
    const ir::Attribute* attr = FindAttr(name);                                              \
    if (attr == nullptr) {                                                                   \
      return absl::InvalidArgumentError(                                                     \
          absl::StrCat("required attribute \"", std::string(name), "\" is missing"));         \
    }                                                                                        \
    if (attr->type != ir::AttributeType::ENUM) return WrongType(*attr, NAME);                \
    return EXPR;                                                                             \
  }

ONNXSERVE_ATTR_GETTER(int64_t, kInt, "INT", attr->i)
ONNXSERVE_ATTR_GETTER(float, kFloat, "FLOAT", attr->f)
ONNXSERVE_ATTR_GETTER(std::string, kString, "STRING", attr->s)
ONNXSERVE_ATTR_GETTER(std::vector<int64_t>, kInts, "INTS", attr->ints)
ONNXSERVE_ATTR_GETTER(std::vector<float>, kFloats, "FLOATS", attr->floats)
ONNXSERVE_ATTR_GETTER(std::vector<std::string>, kStrings, "STRINGS", attr->strings)

#undef ONNXSERVE_ATTR_GETTER

template <>
absl::StatusOr<Tensor> KernelInfo::Attr<Tensor>(std::string_view name) const {
  const ir::Attribute* attr = FindAttr(name);
  if (attr == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("required attribute \"", std::string(name), "\" is missing"));
  }
  if (attr->type != ir::AttributeType::kTensor) return WrongType(*attr, "TENSOR");
  if (!attr->t_status.ok()) return attr->t_status;
  return attr->t;
}

const ExecutionPlan* KernelInfo::Subgraph(std::string_view attr) const {
  for (const auto& [name, plan] : subgraphs_) {
    if (name == attr) return plan;
  }
  return nullptr;
}

KernelContext::KernelContext(const std::vector<const Tensor*>& inputs, std::vector<Tensor>* outputs,
                             std::vector<bool> outputs_wanted, ThreadPool* pool,
                             const std::vector<std::pair<std::string, const Tensor*>>& outer_scope,
                             const RunLimits* limits)
    : owned_wanted_(std::move(outputs_wanted)),
      tensor_outputs_(outputs),
      outputs_wanted_(&owned_wanted_),
      pool_(pool),
      limits_(limits) {
  // Reserved first: wrapped_inputs_ and outer_scope_ point into it.
  wrapped_.reserve(inputs.size() + outer_scope.size());
  for (const Tensor* t : inputs) {
    wrapped_inputs_.push_back(t == nullptr ? nullptr : &wrapped_.emplace_back(*t));
  }
  inputs_ = wrapped_inputs_;
  for (const auto& [name, t] : outer_scope) {
    outer_scope_.push_back({name, t == nullptr ? nullptr : &wrapped_.emplace_back(*t)});
  }
}

bool KernelContext::NodeLists(int i) const {
  const size_t listed = tensor_outputs_ != nullptr ? tensor_outputs_->size() : outputs_->size();
  return i >= 0 && static_cast<size_t>(i) < listed;
}

void KernelContext::SetOutput(int i, Tensor t) {
  if (!NodeLists(i)) {
    dropped_ = std::move(t);
  } else if (tensor_outputs_ != nullptr) {
    (*tensor_outputs_)[i] = std::move(t);
  } else {
    (*outputs_)[i] = Value(std::move(t));
  }
}

absl::Status KernelContext::SetOutputValue(int i, Value value) {
  if (!NodeLists(i)) return absl::OkStatus();
  if (tensor_outputs_ == nullptr) {
    (*outputs_)[i] = std::move(value);
    return absl::OkStatus();
  }
  if (!value.is_tensor()) {
    return absl::FailedPreconditionError(absl::StrCat("output ", i, " is a ", ValueKindName(value.kind()),
                                                      " where only tensors can be held"));
  }
  (*tensor_outputs_)[i] = *value.tensor();
  return absl::OkStatus();
}

absl::StatusOr<const Tensor*> KernelContext::TensorInput(int i) const {
  const Value* value = InputValue(i);
  if (value == nullptr || value->is_tensor()) return value == nullptr ? nullptr : value->tensor();
  return absl::InvalidArgumentError(absl::StrCat("input ", i, " is ", value->DebugString(), ", expected a tensor"));
}

Tensor& KernelContext::OutputOver(int i, int input, DataType type, Shape shape) {
  const Tensor* over = Input(input);
  const bool last_read = inputs_last_read_ != nullptr && input >= 0 &&
                         static_cast<size_t>(input) < inputs_last_read_->size() && (*inputs_last_read_)[input];
  if (last_read && over != nullptr && NodeLists(i) && type != DataType::kString && over->dtype() == type &&
      over->shape() == shape && over->OwnsStorageAlone()) {
    SetOutput(i, *over);
    return *MutableOutput(i);
  }
  return Output(i, type, std::move(shape));
}

Tensor* KernelContext::MutableOutput(int i) {
  if (!NodeLists(i)) return &dropped_;
  return tensor_outputs_ != nullptr ? &(*tensor_outputs_)[i] : (*outputs_)[i].mutable_tensor();
}

absl::Status RequireInputs(const KernelContext& ctx, int count) {
  for (int i = 0; i < count; ++i) {
    if (ctx.Input(i) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("required input ", i, " is missing"));
    }
  }
  return absl::OkStatus();
}

}  // namespace onnxserve
