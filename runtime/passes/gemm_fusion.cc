// Gemm fusion. A MatMul or Gemm whose weight B is a constant 2-D float matrix (packed at load for the
// packed GEMM) and whose output has exactly one reader absorbs that reader into one ai.onnxserve FusedGemm:
//   MatMul -> Add of a constant float bias [N]: the bias becomes input C, added as each tile of Y is
//     stored (A of any rank >= 1: its leading dimensions fold into rows, as MatMul's do);
//   MatMul / Gemm -> an activation (match.h's FusibleActivation): applied while each tile is in cache.
// Chains compose (MatMul -> Add -> HardSwish becomes one node). The fused node takes the reader's place in
// the order.
#include "absl/strings/str_cat.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"
#include "runtime/registry/registry.h"

namespace onnxserve::passes {
namespace {

constexpr std::string_view kFusedGemm = "FusedGemm";

bool IsFusedGemm(const ir::Node* node) { return node->domain() == kInternal && node->op_type() == kFusedGemm; }

// B of `node` when it is a constant 2-D float matrix, else nullptr.
const Tensor* ConstantWeight(const ir::Node* node) {
  const Tensor* b = node->input(1) != nullptr ? node->input(1)->constant() : nullptr;
  return b != nullptr && b->dtype() == DataType::kFloat && b->rank() == 2 ? b : nullptr;
}

class GemmFusion final : public Pass {
 public:
  std::string_view name() const override { return "gemm-fusion"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    static const bool kHaveFusedGemm = KernelRegistry::Global().Find(kInternal, kFusedGemm, 1) != nullptr;
    if (!kHaveFusedGemm) return absl::OkStatus();
    for (ir::Node* node : graph.nodes()) {
      if (node->domain() != "ai.onnx" || node->output(0) == nullptr) continue;
      if (node->op_type() == "Add" && node->FindAttribute("broadcast") == nullptr) {
        FuseBias(graph, node, changes);
      } else if (std::optional<ActivationAttributes> activation = FusibleActivation(node)) {
        FuseActivation(graph, node, *activation, changes);
      }
    }
    return absl::OkStatus();
  }

 private:
  // The MatMul/Gemm/FusedGemm producing `value` when `value` has no other reader and the producer can take
  // more (constant 2-D float B, no activation yet), or nullptr. A Gemm before opset 7 broadcasts C only
  // when asked, which FusedGemm does not model: those stay.
  static ir::Node* FusibleProducer(const ir::Value* value) {
    if (value == nullptr || value->uses().size() != 1 || value->is_graph_output()) return nullptr;
    ir::Node* node = value->producer();
    if (node == nullptr || value != node->output(0) || ConstantWeight(node) == nullptr) return nullptr;
    const bool onnx = node->domain() == "ai.onnx";
    const bool fusible = (onnx && node->op_type() == "MatMul") ||
                         (onnx && node->op_type() == "Gemm" && node->opset() >= 7) || IsFusedGemm(node);
    return fusible && !HasActivation(node) ? node : nullptr;
  }

  // MatMul -> Add(bias): the bias must be a float vector of B's columns, so Add's result has MatMul's shape.
  static void FuseBias(ir::Graph& graph, ir::Node* add, std::vector<std::string>& changes) {
    if (add->input(0) == nullptr || add->input(1) == nullptr) return;  // the kernel reports the arity
    for (int k = 0; k < 2; ++k) {
      ir::Node* matmul = FusibleProducer(add->input(k));
      if (matmul == nullptr || matmul->op_type() != "MatMul") continue;
      ir::Value* bias = add->input(1 - k);
      const Tensor* c = bias->constant();
      const int64_t columns = ConstantWeight(matmul)->dim(1);
      if (c == nullptr || c->dtype() != DataType::kFloat || c->rank() != 1 || c->dim(0) != columns) continue;
      graph.SetInput(matmul, 2, bias);
      AbsorbReader(graph, matmul, add, kFusedGemm, changes);
      return;
    }
  }

  static void FuseActivation(ir::Graph& graph, ir::Node* node, const ActivationAttributes& activation,
                             std::vector<std::string>& changes) {
    ir::Node* gemm = FusibleProducer(node->input(0));
    if (gemm == nullptr) return;
    SetActivation(gemm, activation);
    AbsorbReader(graph, gemm, node, kFusedGemm, changes);
  }
};

}  // namespace

std::unique_ptr<Pass> MakeGemmFusion() { return std::make_unique<GemmFusion>(); }

}  // namespace onnxserve::passes
