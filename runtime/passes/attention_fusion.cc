// Attention fusion. Exporters spell scaled dot-product attention as
//   Y = MatMul(Softmax(MatMul(Q, K) * s [+ mask], axis=-1), V)
// with K often a Transpose swapping its last two dims and the scale a Mul by s or a Div by 1/s (or none).
// Each intermediate is a [..., S, T] tensor written and read back whole; one ai.onnxserve FusedAttention
// (runtime/ops/nn/fused_attention.cc) keeps a block of score rows in cache instead. Every intermediate
// must have no other reader and Softmax must normalize the last axis (axis = -1, which also means the last
// axis under Softmax-1/11's 2-D coercion).
#include "absl/strings/str_cat.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"
#include "runtime/registry/registry.h"

namespace onnxserve::passes {
namespace {

constexpr std::string_view kFusedAttention = "FusedAttention";

struct Match {
  ir::Value *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  bool k_transposed = false;
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
  if (t == nullptr || t->dtype() != DataType::kFloat || t->rank() > 2) return std::nullopt;
  return ScalarConstant(value);
}

// A Transpose swapping the last two of its dims (given as perm, so the rank is known).
bool SwapsLastTwoDims(const ir::Node* transpose) {
  const ir::Attribute* perm = transpose->FindAttribute("perm");
  if (perm == nullptr || perm->ints.size() < 2) return false;
  const int64_t rank = static_cast<int64_t>(perm->ints.size());
  for (int64_t i = 0; i < rank - 2; ++i) {
    if (perm->ints[i] != i) return false;
  }
  return perm->ints[rank - 2] == rank - 1 && perm->ints[rank - 1] == rank - 2;
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
    std::optional<double> s = ShapePreservingScalar(div->input(1));
    if (!s || *s == 0) return false;
    m.scale = static_cast<float>(1 / *s);
    product = div->input(0);
    m.nodes.insert(m.nodes.begin(), div);
  }
  ir::Node* qk = SoleProducer(product, "MatMul");
  if (qk == nullptr || qk->input(0) == nullptr || qk->input(1) == nullptr) return false;
  m.q = qk->input(0);
  m.k = qk->input(1);
  m.nodes.insert(m.nodes.begin(), qk);
  if (ir::Node* transpose = SoleProducer(m.k, "Transpose"); transpose != nullptr && SwapsLastTwoDims(transpose)) {
    m.k = transpose->input(0);
    m.k_transposed = true;
    m.nodes.insert(m.nodes.begin(), transpose);
  }
  return m.k != nullptr;
}

// Matches the pattern around `softmax`.
std::optional<Match> MatchAt(ir::Node* softmax) {
  if (!IsOp(softmax, "Softmax") || !SoftmaxOverLastAxis(softmax)) return std::nullopt;
  ir::Node* pv = SoleReader(softmax->output(0));
  if (!IsOp(pv, "MatMul") || pv->input(0) != softmax->output(0) || pv->input(1) == nullptr) return std::nullopt;
  Match m;
  m.v = pv->input(1);
  m.nodes = {softmax, pv};
  ir::Value* scores = softmax->input(0);
  if (ir::Node* add = SoleProducer(scores, "Add"); add != nullptr && add->FindAttribute("broadcast") == nullptr) {
    m.nodes.insert(m.nodes.begin(), add);
    for (int i = 0; i < 2; ++i) {
      Match with_mask = m;
      with_mask.mask = add->input(1 - i);
      if (with_mask.mask != nullptr && MatchScaledProduct(add->input(i), with_mask)) return with_mask;
    }
    return std::nullopt;
  }
  if (!MatchScaledProduct(scores, m)) return std::nullopt;
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
      ReplaceChain(graph, m->nodes,
                   {m->nodes.back()->name(), std::string(kInternal), std::string(kFusedAttention), 1,
                    std::move(inputs),
                    {ir::FloatAttribute("scale", m->scale), ir::IntAttribute("k_transposed", m->k_transposed)}});
      return true;
    });
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> MakeAttentionFusion() { return std::make_unique<AttentionFusion>(); }

}  // namespace onnxserve::passes
