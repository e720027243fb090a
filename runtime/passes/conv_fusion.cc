// Conv fusion. A Conv with constant float weights whose output has exactly one reader absorbs that reader
// into one ai.onnxserve FusedConv node:
//   Conv -> BatchNormalization (inference, constant parameters): the scale and shift fold into W and B;
//   Conv -> Add / Sum of two (the residual of ResNet-like blocks): the other operand becomes input Z;
//   Conv -> an activation (Relu, Clip, LeakyRelu, HardSigmoid, HardSwish, Sigmoid, Tanh, Gelu; match.h's
//   FusibleActivation): applied while each output tile is still in cache.
// Chains compose (Conv -> BN -> Add -> Relu becomes one node). The fused node takes the reader's place in
// the order, so every value it reads (Z included) is computed before it.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"
#include "runtime/registry/registry.h"

namespace onnxserve::passes {
namespace {

int64_t IntAttribute(const ir::Node& node, std::string_view name, int64_t fallback) {
  const ir::Attribute* attr = node.FindAttribute(name);
  return attr == nullptr ? fallback : attr->i;
}

bool IsOnnx(const ir::Node& node) { return node.domain() == "ai.onnx"; }

bool HasZ(const ir::Node& conv) { return conv.input(3) != nullptr; }

// Whether a BatchNormalization node computes the inference formula with its statistics as given.
bool IsInferenceBatchNorm(const ir::Node& node) {
  for (size_t o = 1; o < node.outputs().size(); ++o) {
    if (node.outputs()[o] != nullptr) return false;
  }
  if (node.opset() < 7 && IntAttribute(node, "is_test", 0) == 0) return false;
  if (node.opset() < 9 && IntAttribute(node, "spatial", 1) != 1) return false;
  return IntAttribute(node, "training_mode", 0) == 0;
}

const Tensor* FloatVector(const ir::Value* value, int64_t size) {
  const Tensor* t = value == nullptr ? nullptr : value->constant();
  return t != nullptr && t->dtype() == DataType::kFloat && t->NumElements() == size ? t : nullptr;
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

class ConvFusion final : public Pass {
 public:
  std::string_view name() const override { return "conv-fusion"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    static const bool kHaveFusedConv = KernelRegistry::Global().Find(kInternal, "FusedConv", 1) != nullptr;
    if (!kHaveFusedConv) return absl::OkStatus();
    for (ir::Node* node : graph.nodes()) {
      if (!IsOnnx(*node) || node->output(0) == nullptr) continue;
      const std::string& op = node->op_type();
      if (op == "BatchNormalization") {
        FuseBatchNorm(graph, node, changes);
      } else if (std::optional<ActivationAttributes> activation = FusibleActivation(node)) {
        FuseActivation(graph, node, *activation, changes);
      } else if ((op == "Add" && node->FindAttribute("broadcast") == nullptr) ||
                 (op == "Sum" && node->inputs().size() == 2)) {
        FuseAdd(graph, node, changes);
      }
    }
    return absl::OkStatus();
  }

 private:
  // The Conv/FusedConv producing `value` when `value` has no other reader and the producer can take more
  // (constant float weights, no activation yet), or nullptr.
  static ir::Node* FusibleProducer(const ir::Value* value) {
    if (value == nullptr || value->uses().size() != 1 || value->is_graph_output()) return nullptr;
    ir::Node* conv = value->producer();
    if (conv == nullptr || value != conv->output(0)) return nullptr;
    const bool is_conv = (conv->op_type() == "Conv" && IsOnnx(*conv)) ||
                         (conv->op_type() == "FusedConv" && conv->domain() == kInternal);
    const Tensor* w = is_conv && conv->input(1) != nullptr ? conv->input(1)->constant() : nullptr;
    if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() < 3) return nullptr;
    if (HasActivation(conv)) return nullptr;  // nothing fuses after the activation
    return conv;
  }

  // `conv` becomes a FusedConv computing `reader`'s output in `reader`'s place; `reader` goes.
  static void Absorb(ir::Graph& graph, ir::Node* conv, ir::Node* reader, std::vector<std::string>& changes) {
    AbsorbReader(graph, conv, reader, "FusedConv", changes);
  }

  static void FuseBatchNorm(ir::Graph& graph, ir::Node* bn, std::vector<std::string>& changes) {
    ir::Node* conv = FusibleProducer(bn->input(0));
    if (conv == nullptr || HasZ(*conv) || !IsInferenceBatchNorm(*bn) || bn->inputs().size() < 5) return;
    const Tensor& w = *conv->input(1)->constant();
    const int64_t channels = w.dim(0);
    if (channels == 0) return;  // no maps: nothing to fold, and FoldBatchNorm divides by the maps
    const Tensor* b = nullptr;
    if (conv->input(2) != nullptr) {
      b = FloatVector(conv->input(2), channels);
      if (b == nullptr) return;
    }
    const Tensor* scale = FloatVector(bn->input(1), channels);
    const Tensor* shift = FloatVector(bn->input(2), channels);
    const Tensor* mean = FloatVector(bn->input(3), channels);
    const Tensor* var = FloatVector(bn->input(4), channels);
    if (scale == nullptr || shift == nullptr || mean == nullptr || var == nullptr) return;
    const ir::Attribute* epsilon = bn->FindAttribute("epsilon");
    auto [folded_w, folded_b] = FoldBatchNorm(w, b, *scale, *shift, *mean, *var, epsilon ? epsilon->f : 1e-5f);
    const std::string prefix = absl::StrCat(bn->output(0)->name(), "/onnxserve_folded_");
    graph.SetInput(conv, 1, graph.AddConstant(prefix + "W", std::move(folded_w)));
    graph.SetInput(conv, 2, graph.AddConstant(prefix + "B", std::move(folded_b)));
    Absorb(graph, conv, bn, changes);
  }

  static void FuseActivation(ir::Graph& graph, ir::Node* node, const ActivationAttributes& activation,
                             std::vector<std::string>& changes) {
    ir::Node* conv = FusibleProducer(node->input(0));
    if (conv == nullptr) return;
    SetActivation(conv, activation);
    Absorb(graph, conv, node, changes);
  }

  static void FuseAdd(ir::Graph& graph, ir::Node* add, std::vector<std::string>& changes) {
    // Arity is the kernel's to check; fusion must not read inputs that are absent.
    if (add->input(0) == nullptr || add->input(1) == nullptr) return;
    for (int k = 0; k < 2; ++k) {
      ir::Node* conv = FusibleProducer(add->input(k));
      if (conv == nullptr || HasZ(*conv)) continue;
      graph.SetInput(conv, 3, add->input(1 - k));
      Absorb(graph, conv, add, changes);
      return;
    }
  }
};

}  // namespace

std::unique_ptr<Pass> MakeConvFusion() { return std::make_unique<ConvFusion>(); }

}  // namespace onnxserve::passes
