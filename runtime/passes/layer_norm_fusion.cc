// LayerNormalization fusion: exporters of opsets before 17 spell layer normalization out in primitives,
//   mean = ReduceMean(x, axes)           d = Sub(x, mean)
//   var  = ReduceMean(Pow(d, 2) or Mul(d, d), axes)
//   n    = Div(d, Sqrt(Add(var, epsilon)))
//   y    = Add(Mul(n, gamma), beta)      (the affine part optional)
// nine kernels and four full passes over the activations; one LayerNormalization (opset 17) does it in one.
// The axes must be the trailing ones, given negative (-1, or -2 and -1, ...), since shapes are not known
// here; gamma, beta, epsilon and the exponent must be constants of no more dims than the normalized axes,
// so that they cannot widen y past x's rank. (A gamma or beta that widens a normalized dim of 1 still can:
// LayerNormalization computes that case as the Mul and Add do.)
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"

namespace onnxserve::passes {
namespace {

// The first normalized axis when `axes` are the trailing ones counted from the end (-k .. -1), else 0.
int64_t TrailingAxis(std::vector<int64_t> axes) {
  std::sort(axes.begin(), axes.end());
  const int64_t k = static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < k; ++i) {
    if (axes[i] != i - k) return 0;
  }
  return k == 0 ? 0 : -k;
}

// Whether `value` is a constant of rank at most `normalized_rank`: broadcast against x, it then spans the
// normalized axes only, as LayerNormalization's Scale, B and epsilon do.
bool FitsNormalizedRank(const ir::Value* value, int64_t normalized_rank) {
  return value != nullptr && value->constant() != nullptr && value->constant()->rank() <= normalized_rank;
}

struct Match {
  ir::Value* x = nullptr;
  ir::Value* scale = nullptr;  // nullptr: 1
  ir::Value* bias = nullptr;
  int64_t axis = 0;
  float epsilon = 0;
  DataType dtype = DataType::kFloat;  // x's, which epsilon's tells
  std::vector<ir::Node*> nodes;  // the primitives, in order; the last computes y
};

// Matches the pattern around `div`, the node that divides by the standard deviation.
std::optional<Match> MatchAt(ir::Node* div) {
  Match m;
  if (!IsOp(div, "Div")) return std::nullopt;
  ir::Value* d = div->input(0);
  ir::Node* sqrt = div->input(1) ? div->input(1)->producer() : nullptr;
  if (!IsOp(sqrt, "Sqrt") || !OnlyReadBy(sqrt->output(0), 1)) return std::nullopt;
  ir::Node* add_eps = sqrt->input(0) ? sqrt->input(0)->producer() : nullptr;
  if (!IsOp(add_eps, "Add") || !OnlyReadBy(add_eps->output(0), 1)) return std::nullopt;
  // Constants of any rank match here; their ranks are checked once the normalized axes are known.
  constexpr int64_t kAnyRank = std::numeric_limits<int64_t>::max();
  const int eps_index = ScalarConstant(add_eps->input(1), kAnyRank) ? 1 : 0;
  ir::Value* var = add_eps->input(1 - eps_index);
  ir::Value* eps = add_eps->input(eps_index);
  std::optional<double> epsilon = ScalarConstant(eps, kAnyRank);
  if (!epsilon) return std::nullopt;
  ir::Node* var_mean = var ? var->producer() : nullptr;
  if (!IsOp(var_mean, "ReduceMean") || !OnlyReadBy(var, 1)) return std::nullopt;
  ir::Node* square = var_mean->input(0) ? var_mean->input(0)->producer() : nullptr;
  if (square == nullptr || !OnlyReadBy(square->output(0), 1)) return std::nullopt;
  const bool is_pow = IsOp(square, "Pow") && square->input(0) == d && ScalarConstant(square->input(1), kAnyRank) == 2.0;
  const bool is_mul = IsOp(square, "Mul") && square->input(0) == d && square->input(1) == d;
  if (!is_pow && !is_mul) return std::nullopt;
  // d is read by the square (once or twice) and by div.
  if (!OnlyReadBy(d, is_mul ? 3 : 2)) return std::nullopt;
  ir::Node* sub = d ? d->producer() : nullptr;
  if (!IsOp(sub, "Sub")) return std::nullopt;
  m.x = sub->input(0);
  ir::Node* mean = sub->input(1) ? sub->input(1)->producer() : nullptr;
  if (!IsOp(mean, "ReduceMean") || mean->input(0) != m.x || !OnlyReadBy(mean->output(0), 1)) return std::nullopt;
  const auto mean_axes = KeptReduceAxes(mean);
  const auto var_axes = KeptReduceAxes(var_mean);
  if (!mean_axes || !var_axes || *mean_axes != *var_axes) return std::nullopt;
  m.axis = TrailingAxis(*mean_axes);
  if (m.axis == 0) return std::nullopt;
  // x has at least the normalized axes' rank (the ReduceMeans take them); a constant of more would widen
  // what the primitives compute past x's shape, which LayerNormalization keeps.
  const int64_t normalized_rank = -m.axis;
  if (!FitsNormalizedRank(eps, normalized_rank) || (is_pow && !FitsNormalizedRank(square->input(1), normalized_rank))) {
    return std::nullopt;
  }
  // LayerNormalization's epsilon is a float: one it cannot hold (a double's 1e-300 is 0 as a float, which
  // makes a constant row 0 * inf) stays spelled out.
  m.epsilon = static_cast<float>(*epsilon);
  if (!std::isfinite(m.epsilon) || (m.epsilon == 0) != (*epsilon == 0)) return std::nullopt;
  m.dtype = eps->constant()->dtype();
  m.nodes = {mean, sub, square, var_mean, add_eps, sqrt, div};

  // The affine part: Mul by a constant gamma, then Add of a constant beta.
  ir::Node* mul = SoleReader(div->output(0));
  ir::Value* gamma = OtherInput(mul, div->output(0));
  if (IsOp(mul, "Mul") && FitsNormalizedRank(gamma, normalized_rank)) {
    m.scale = gamma;
    m.nodes.push_back(mul);
    ir::Node* add = SoleReader(mul->output(0));
    ir::Value* beta = OtherInput(add, mul->output(0));
    if (IsOp(add, "Add") && FitsNormalizedRank(beta, normalized_rank)) {
      m.bias = beta;
      m.nodes.push_back(add);
    }
  }
  return m;
}

// The Scale of a normalization without the affine part, of x's type (float or double, as epsilon is).
Tensor One(DataType dtype) { return dtype == DataType::kDouble ? Tensor::Scalar(1.0) : Tensor::Scalar(1.0f); }

class LayerNormFusion final : public Pass {
 public:
  std::string_view name() const override { return "layer-norm-fusion"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    RewriteUntilStable(graph, [&](ir::Node* node) {
      std::optional<Match> m = MatchAt(node);
      if (!m) return false;
      ir::Value* scale = m->scale ? m->scale : graph.AddConstant("onnxserve_layer_norm_one", One(m->dtype));
      changes.push_back(absl::StrCat("fused ", m->nodes.size(), " nodes from ", m->nodes.front()->Label(), " to ",
                                     m->nodes.back()->Label(), " into LayerNormalization"));
      ReplaceChain(graph, m->nodes,
                   {m->nodes.back()->name(), "ai.onnx", "LayerNormalization", 17, {m->x, scale, m->bias},
                    {ir::IntAttribute("axis", m->axis), ir::FloatAttribute("epsilon", m->epsilon)}});
      return true;
    });
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> MakeLayerNormFusion() { return std::make_unique<LayerNormFusion>(); }

}  // namespace onnxserve::passes
