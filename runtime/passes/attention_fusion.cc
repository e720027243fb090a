// Attention fusion. Exporters spell scaled dot-product attention as
//   Y = MatMul(Softmax(MatMul(Q, K) * s [+ mask], axis=-1), V)
// with the scale a Mul by s or a Div by 1/s (or none), Q, K and V Transposes that split the heads (K's also
// transposing it) and a Transpose of Y that merges them: those the kernel reads (writes) in place.
// Each intermediate is a [..., S, T] tensor written and read back whole; one ai.onnxserve FusedAttention
// (runtime/ops/nn/fused_attention.cc) keeps a block of score rows in cache instead. Every intermediate
// must have no other reader and Softmax must normalize the last axis (axis = -1, which also means the last
// axis under Softmax-1/11's 2-D coercion).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"
#include "runtime/registry/registry.h"

namespace onnxserve::passes {
namespace {

constexpr std::string_view kFusedAttention = "FusedAttention";

struct Match {
  ir::Value *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  // The absorbed Transposes' perms (empty: none): of Q, K and V, and of Y.
  std::vector<int64_t> q_perm, k_perm, v_perm, y_perm;
  float scale = 1.0f;
  std::vector<ir::Node*> nodes;  // in order; the last computes Y
};

// The node producing `value` when it is the ai.onnx op `op_type` and `value` has no other reader.
ir::Node* SoleProducer(const ir::Value* value, std::string_view op_type) {
  ir::Node* node = value == nullptr ? nullptr : value->producer();
  return IsOp(node, op_type) && OnlyReadBy(value, 1) && node->output(0) == value ? node : nullptr;
}

bool SoftmaxOverLastAxis(const ir::Node* softmax) {
  const ir::Attribute* axis = softmax->FindAttribute("axis");
  return axis != nullptr ? axis->i == -1 : softmax->opset() >= 13;
}

// A scalar float constant of rank <= 2, which leaves the scores' shape as it is when it broadcasts.
std::optional<double> ShapePreservingScalar(const ir::Value* value) {
  const Tensor* t = value == nullptr ? nullptr : value->constant();
  if (t == nullptr || t->dtype() != DataType::kFloat) return std::nullopt;
  return ScalarConstant(value, 2);
}

// The perm of the Transpose producing `value` (its only reader being the pattern) when the kernel can read
// through it: the last axis stays last (`last_two`: or becomes the second last, as K^T does), so each
// matrix row is contiguous. nullopt otherwise; without perm the rank, so the perm, is unknown.
std::optional<std::vector<int64_t>> ReadablePerm(const ir::Node* transpose, bool last_two) {
  const ir::Attribute* perm = transpose == nullptr ? nullptr : transpose->FindAttribute("perm");
  if (perm == nullptr || perm->ints.size() < 2) return std::nullopt;
  const int64_t last = static_cast<int64_t>(perm->ints.size()) - 1;
  if (perm->ints[last] == last || (last_two && perm->ints[last - 1] == last)) return perm->ints;
  return std::nullopt;
}

// When `value` is a Transpose's output that the kernel can read through, reads its input instead, prepending
// the Transpose to `nodes` and setting `perm`.
void AbsorbInputTranspose(ir::Value*& value, std::vector<int64_t>& perm, bool last_two,
                          std::vector<ir::Node*>& nodes) {
  ir::Node* transpose = SoleProducer(value, "Transpose");
  std::optional<std::vector<int64_t>> readable = ReadablePerm(transpose, last_two);
  if (!readable || transpose->input(0) == nullptr) return;
  value = transpose->input(0);
  perm = *std::move(readable);
  nodes.insert(nodes.begin(), transpose);
}

// Matches the scale (if any) and Q.K^T above `scores`, prepending their nodes to `m`.
bool MatchScaledProduct(ir::Value* scores, Match& m) {
  ir::Value* product = scores;
  if (ir::Node* mul = SoleProducer(scores, "Mul")) {
    for (int i = 0; i < 2 && product == scores; ++i) {
      if (std::optional<double> s = ShapePreservingScalar(mul->input(i))) {
        m.scale = static_cast<float>(*s);
        product = mul->input(1 - i);
      }
    }
    if (product == scores) return false;
    m.nodes.insert(m.nodes.begin(), mul);
  } else if (ir::Node* div = SoleProducer(scores, "Div")) {
    // The kernel multiplies by the reciprocal: one that overflows the float (of a denormal divisor) would
    // make zero scores NaN, where dividing them gives 0.
    std::optional<double> s = ShapePreservingScalar(div->input(1));
    if (!s || !std::isfinite(static_cast<float>(1 / *s))) return false;
    m.scale = static_cast<float>(1 / *s);
    product = div->input(0);
    m.nodes.insert(m.nodes.begin(), div);
  }
  ir::Node* qk = SoleProducer(product, "MatMul");
  if (qk == nullptr || qk->input(0) == nullptr || qk->input(1) == nullptr) return false;
  m.q = qk->input(0);
  m.k = qk->input(1);
  m.nodes.insert(m.nodes.begin(), qk);
  AbsorbInputTranspose(m.q, m.q_perm, false, m.nodes);
  AbsorbInputTranspose(m.k, m.k_perm, true, m.nodes);
  return true;
}

// Whether `value`, read through `perm` when a Transpose was absorbed, is known to have rank >= 2. The kernel
// multiplies matrices; MatMul also takes vectors, and then Softmax normalizes another axis than the keys'.
// Transposes with a perm, Reshapes to a constant shape, constants and graph inputs' declared shapes (the
// plan checks each feed against them) tell. Other values' declared shapes are not checked, so a model
// could declare a vector a matrix: an unknown rank keeps the graph as it is.
bool KnownMatrix(const ir::Value* value, const std::vector<int64_t>& perm) {
  if (!perm.empty()) return perm.size() >= 2;
  if (const Tensor* t = value->constant()) return t->rank() >= 2;
  const ir::Node* producer = value->producer();
  if (IsOp(producer, "Transpose")) {
    const ir::Attribute* producer_perm = producer->FindAttribute("perm");
    if (producer_perm != nullptr) return producer_perm->ints.size() >= 2;
  }
  if (IsOp(producer, "Reshape") && producer->opset() >= 5 && producer->input(1) != nullptr) {
    const Tensor* shape = producer->input(1)->constant();
    if (shape != nullptr) return shape->rank() == 1 && shape->NumElements() >= 2;
  }
  return value->is_graph_input() && value->type().is_tensor() && value->type().has_shape &&
         value->type().dims.size() >= 2;
}

bool OperandsAreMatrices(const Match& m) {
  return KnownMatrix(m.q, m.q_perm) && KnownMatrix(m.k, m.k_perm) && KnownMatrix(m.v, m.v_perm);
}

// Matches the pattern around `softmax`.
std::optional<Match> MatchAt(ir::Node* softmax) {
  if (!IsOp(softmax, "Softmax") || !SoftmaxOverLastAxis(softmax)) return std::nullopt;
  ir::Node* pv = SoleReader(softmax->output(0));
  if (!IsOp(pv, "MatMul") || pv->input(0) != softmax->output(0) || pv->input(1) == nullptr) return std::nullopt;
  Match m;
  m.v = pv->input(1);
  m.nodes = {softmax, pv};
  AbsorbInputTranspose(m.v, m.v_perm, false, m.nodes);
  ir::Node* merge = SoleReader(pv->output(0));
  if (std::optional<std::vector<int64_t>> perm = IsOp(merge, "Transpose") ? ReadablePerm(merge, false) : std::nullopt) {
    m.y_perm = *std::move(perm);
    m.nodes.push_back(merge);
  }
  ir::Value* scores = softmax->input(0);
  if (ir::Node* add = SoleProducer(scores, "Add"); add != nullptr && add->FindAttribute("broadcast") == nullptr) {
    m.nodes.insert(m.nodes.begin(), add);
    for (int i = 0; i < 2; ++i) {
      Match with_mask = m;
      with_mask.mask = add->input(1 - i);
      if (with_mask.mask != nullptr && MatchScaledProduct(add->input(i), with_mask) && OperandsAreMatrices(with_mask)) {
        return with_mask;
      }
    }
    return std::nullopt;
  }
  if (!MatchScaledProduct(scores, m) || !OperandsAreMatrices(m)) return std::nullopt;
  return m;
}

class AttentionFusion final : public Pass {
 public:
  std::string_view name() const override { return "attention-fusion"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    static const bool kHaveFusedAttention =
        KernelRegistry::Global().Find(kInternal, kFusedAttention, 1) != nullptr;
    if (!kHaveFusedAttention) return absl::OkStatus();
    RewriteUntilStable(graph, [&](ir::Node* node) {
      std::optional<Match> m = MatchAt(node);
      if (!m) return false;
      changes.push_back(absl::StrCat("fused ", m->nodes.size(), " nodes from ", m->nodes.front()->Label(), " to ",
                                     m->nodes.back()->Label(), " into FusedAttention",
                                     m->mask != nullptr ? " (masked)" : ""));
      std::vector<ir::Value*> inputs = {m->q, m->k, m->v};
      if (m->mask != nullptr) inputs.push_back(m->mask);
      std::vector<ir::Attribute> attributes = {ir::FloatAttribute("scale", m->scale)};
      const std::pair<const char*, const std::vector<int64_t>*> perms[] = {
          {"q_perm", &m->q_perm}, {"k_perm", &m->k_perm}, {"v_perm", &m->v_perm}, {"y_perm", &m->y_perm}};
      for (const auto& [name, perm] : perms) {
        if (!perm->empty()) attributes.push_back(ir::IntsAttribute(name, *perm));
      }
      ReplaceChain(graph, m->nodes,
                   {m->nodes.back()->name(), std::string(kInternal), std::string(kFusedAttention), 1,
                    std::move(inputs), std::move(attributes)});
      return true;
    });
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> MakeAttentionFusion() { return std::make_unique<AttentionFusion>(); }

}  // namespace onnxserve::passes
