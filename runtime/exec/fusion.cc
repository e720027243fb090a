// Peephole fusion while a plan compiles. A Conv (with constant float weights) whose output has exactly one
// reader absorbs that reader into one ai.onnxserve FusedConv step:
//   Conv -> BatchNormalization (inference, constant parameters): the scale and shift fold into W and B;
//   Conv -> Add / Sum of two (the residual of ResNet-like blocks): the other operand becomes input Z;
//   Conv -> Relu: the activation is applied while each output tile is still in cache.
// Chains compose (Conv -> BN -> Add -> Relu becomes one step). The fused step takes the reader's place in
// the order, so every value it reads (Z included) is computed before it.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/exec/plan.h"

namespace onnxserve {
namespace {

bool InOnnxDomain(const onnx::NodeProto& node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

int64_t IntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* attr = FindAttribute(node, name);
  return attr == nullptr ? fallback : attr->i();
}

std::string Activation(const onnx::NodeProto& node) {
  const auto* attr = FindAttribute(node, "activation");
  return attr == nullptr ? "" : attr->s();
}

bool HasZ(const onnx::NodeProto& node) { return node.input_size() > 3 && !node.input(3).empty(); }

// Whether a BatchNormalization node computes the inference formula with its statistics as given.
bool IsInferenceBatchNorm(const onnx::NodeProto& node, int64_t opset) {
  for (int o = 1; o < node.output_size(); ++o) {
    if (!node.output(o).empty()) return false;
  }
  if (opset < 7 && IntAttribute(node, "is_test", 0) == 0) return false;
  if (opset < 9 && IntAttribute(node, "spatial", 1) != 1) return false;
  return IntAttribute(node, "training_mode", 0) == 0;
}

bool IsFloatVector(const Tensor* t, int64_t size) {
  return t != nullptr && t->dtype() == DataType::kFloat && t->NumElements() == size;
}

// W' = W * s, B' = (B - mean) * s + shift with s = scale / sqrt(var + epsilon), per output channel.
std::pair<Tensor, Tensor> FoldBatchNorm(const Tensor& w, const Tensor* b, const Tensor& scale, const Tensor& shift,
                                        const Tensor& mean, const Tensor& var, float epsilon) {
  const int64_t channels = w.dim(0);
  const int64_t per_channel = w.NumElements() / channels;
  Tensor folded_w(DataType::kFloat, w.shape());
  Tensor folded_b(DataType::kFloat, {channels});
  for (int64_t m = 0; m < channels; ++m) {
    const double s = scale.data<float>()[m] / std::sqrt(static_cast<double>(var.data<float>()[m]) + epsilon);
    const float* src = w.data<float>() + m * per_channel;
    float* dst = folded_w.data<float>() + m * per_channel;
    for (int64_t i = 0; i < per_channel; ++i) dst[i] = static_cast<float>(src[i] * s);
    const double bias = b == nullptr ? 0.0 : b->data<float>()[m];
    folded_b.data<float>()[m] = static_cast<float>((bias - mean.data<float>()[m]) * s + shift.data<float>()[m]);
  }
  return {std::move(folded_w), std::move(folded_b)};
}

}  // namespace

absl::StatusOr<bool> ExecutionPlan::TryFuseIntoProducer(const Model& model, const onnx::NodeProto& node) {
  static const bool kHaveFusedConv = KernelRegistry::Global().Find(kInternal, "FusedConv", 1) != nullptr;
  if (!kHaveFusedConv || !InOnnxDomain(node) || node.output_size() < 1 || node.output(0).empty()) return false;
  const std::string& op = node.op_type();
  const bool is_add = (op == "Add" && !FindAttribute(node, "broadcast")) || (op == "Sum" && node.input_size() == 2);
  if (op != "BatchNormalization" && op != "Relu" && !is_add) return false;
  // Arity is the kernel's to check when the node gets its step; fusion must not read inputs that are absent.
  if (node.input_size() < (is_add ? 2 : 1)) return false;

  // The Conv/FusedConv step producing `value`, when `node` is that value's only reader, or -1.
  auto fusible_producer = [&](const std::string& value) -> int {
    auto reads = reads_.find(value);
    auto producer = producer_step_.find(value);
    if (reads == reads_.end() || reads->second != 1 || producer == producer_step_.end()) return -1;
    const onnx::NodeProto& conv = *steps_[producer->second].node;
    const bool is_conv = (conv.op_type() == "Conv" && InOnnxDomain(conv)) ||
                         (conv.op_type() == "FusedConv" && conv.domain() == kInternalDomain);
    const Tensor* w = is_conv && conv.input_size() > 1 ? Constant(conv.input(1)) : nullptr;
    if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() < 3) return -1;
    if (!Activation(conv).empty()) return -1;  // nothing fuses after the activation
    return producer->second;
  };

  int producer = -1;
  onnx::NodeProto fused;
  if (op == "BatchNormalization") {
    producer = fusible_producer(node.input(0));
    if (producer < 0 || !IsInferenceBatchNorm(node, model.OpsetFor(node.domain())) || node.input_size() < 5) {
      return false;
    }
    fused = *steps_[producer].node;
    if (HasZ(fused)) return false;  // the shift would apply to Z too
    const Tensor& w = *Constant(fused.input(1));
    const int64_t channels = w.dim(0);
    const Tensor* b = fused.input_size() > 2 && !fused.input(2).empty() ? Constant(fused.input(2)) : nullptr;
    const Tensor *scale = Constant(node.input(1)), *shift = Constant(node.input(2)),
                 *mean = Constant(node.input(3)), *var = Constant(node.input(4));
    if ((fused.input_size() > 2 && !fused.input(2).empty() && !IsFloatVector(b, channels)) ||
        !IsFloatVector(scale, channels) || !IsFloatVector(shift, channels) || !IsFloatVector(mean, channels) ||
        !IsFloatVector(var, channels)) {
      return false;
    }
    const auto* eps_attr = FindAttribute(node, "epsilon");
    auto [folded_w, folded_b] = FoldBatchNorm(w, b, *scale, *shift, *mean, *var, eps_attr ? eps_attr->f() : 1e-5f);
    const std::string prefix = absl::StrCat(node.output(0), "/onnxserve_folded_");
    for (auto& [suffix, tensor] : {std::pair<std::string, Tensor*>{"W", &folded_w}, {"B", &folded_b}}) {
      folded_.push_back(std::move(*tensor));
      constants_.push_back({SlotOf(prefix + suffix), &folded_.back()});
      constant_values_[prefix + suffix] = &folded_.back();
    }
    while (fused.input_size() < 3) fused.add_input("");
    fused.set_input(1, prefix + "W");
    fused.set_input(2, prefix + "B");
  } else if (op == "Relu") {
    producer = fusible_producer(node.input(0));
    if (producer < 0) return false;
    fused = *steps_[producer].node;
    auto* attr = fused.add_attribute();
    attr->set_name("activation");
    attr->set_type(onnx::AttributeProto::STRING);
    attr->set_s("Relu");
  } else {
    for (int k = 0; k < 2 && producer < 0; ++k) {
      const int candidate = fusible_producer(node.input(k));
      if (candidate < 0 || HasZ(*steps_[candidate].node)) continue;
      producer = candidate;
      fused = *steps_[producer].node;
      while (fused.input_size() < 4) fused.add_input("");
      fused.set_input(3, node.input(1 - k));
    }
    if (producer < 0) return false;
  }

  if (fused.op_type() == "Conv") {
    fused.set_op_type("FusedConv");
    fused.set_domain(std::string(kInternalDomain));
  }
  fused.set_output(0, node.output(0));
  fused_nodes_.push_back(std::move(fused));
  ASSIGN_OR_RETURN(Step step, MakeStep(model, fused_nodes_.back(), -1, 1));
  steps_.erase(steps_.begin() + producer);
  for (auto& [value, index] : producer_step_) {
    if (index > producer) --index;
  }
  AppendStep(std::move(step));
  return true;
}

}  // namespace onnxserve
