// Gelu fusion: exporters before opset 20 spell the exact GELU out as
//   y = Mul(Mul(x, Add(Erf(Div(x, sqrt(2))), 1)), 0.5)       (or x * 0.5 first, or Mul(x, 1/sqrt(2)))
// five kernels and five passes over the activations; one Gelu (opset 20) does it in one.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"

namespace onnxserve::passes {
namespace {

bool Near(std::optional<double> value, double want) {
  return value.has_value() && std::abs(*value - want) <= 1e-4 * std::abs(want);
}

// The constants must be of rank 0: Gelu gives x's shape, and a one-element constant of rank r widens an x of
// lower rank, whose rank is not known here.
std::optional<double> GeluConstant(const ir::Value* value) { return ScalarConstant(value, 0); }

// The index of `node`'s input that is a scalar constant near `want`, or -1.
int ConstantInputNear(const ir::Node* node, double want) {
  for (int i = 0; i < 2; ++i) {
    if (Near(GeluConstant(node->input(i)), want)) return i;
  }
  return -1;
}

struct Match {
  ir::Value* x = nullptr;
  std::vector<ir::Node*> nodes;  // in order; the last computes y
};

// Matches the pattern around `erf`.
std::optional<Match> MatchAt(ir::Node* erf) {
  if (!IsOp(erf, "Erf") || erf->input(0) == nullptr || !OnlyReadBy(erf->input(0), 1)) return std::nullopt;
  Match m;
  ir::Node* scale = erf->input(0)->producer();
  if (IsOp(scale, "Div") && Near(GeluConstant(scale->input(1)), std::sqrt(2.0))) {
    m.x = scale->input(0);
  } else if (IsOp(scale, "Mul")) {
    const int k = ConstantInputNear(scale, 1 / std::sqrt(2.0));
    if (k < 0) return std::nullopt;
    m.x = scale->input(1 - k);
  } else {
    return std::nullopt;
  }
  ir::Node* add_one = SoleReader(erf->output(0));
  if (!IsOp(add_one, "Add") || ConstantInputNear(add_one, 1.0) < 0) return std::nullopt;
  ir::Node* times = SoleReader(add_one->output(0));
  ir::Value* other = OtherInput(times, add_one->output(0));
  if (!IsOp(times, "Mul") || other == nullptr) return std::nullopt;
  m.nodes = {scale, erf, add_one};
  if (other == m.x) {
    // (x * (1 + erf)) * 0.5
    ir::Node* half = SoleReader(times->output(0));
    if (!IsOp(half, "Mul") || ConstantInputNear(half, 0.5) < 0) return std::nullopt;
    m.nodes.insert(m.nodes.end(), {times, half});
    return m;
  }
  // (x * 0.5) * (1 + erf)
  ir::Node* half = other->producer();
  if (!IsOp(half, "Mul") || !OnlyReadBy(other, 1)) return std::nullopt;
  const int k = ConstantInputNear(half, 0.5);
  if (k < 0 || half->input(1 - k) != m.x) return std::nullopt;
  m.nodes.insert(m.nodes.begin(), half);
  m.nodes.push_back(times);
  return m;
}

class GeluFusion final : public Pass {
 public:
  std::string_view name() const override { return "gelu-fusion"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    RewriteUntilStable(graph, [&](ir::Node* node) {
      std::optional<Match> m = MatchAt(node);
      if (!m) return false;
      changes.push_back(absl::StrCat("fused ", m->nodes.size(), " nodes from ", m->nodes.front()->Label(), " to ",
                                     m->nodes.back()->Label(), " into Gelu"));
      ReplaceChain(graph, m->nodes, {m->nodes.back()->name(), "ai.onnx", "Gelu", 20, {m->x}, {}});
      return true;
    });
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> MakeGeluFusion() { return std::make_unique<GeluFusion>(); }

}  // namespace onnxserve::passes
