// Gradient-1 (ai.onnx.preview.training): reverse-mode differentiation of the enclosing graph. The node's
// inputs are the values of the tensors its `xs` and `zs` attributes name; it outputs dy/dx for each x, y
// named by `y`. At load the kernel finds the nodes between those inputs and y (the "tape") by walking the
// graph IR from its own inputs' readers, and builds their kernels; each run recomputes the tape forward from
// its inputs (and constants), then accumulates gradients backward, in double, summing over broadcast dims.
//
// Differentiable here: Add, Sub, Mul, Div, Neg, Relu, Sigmoid, Tanh, Exp, Log, Identity, 2-D MatMul and
// Gemm. Any other operator on the tape is UNIMPLEMENTED at load, naming it and its node. A tape value that
// is neither computed from xs/zs nor constant (another graph input) is an error naming it.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/core/run_limits.h"
#include "runtime/ir/graph.h"
#include "runtime/ops/common.h"
#include "runtime/registry/registry.h"

namespace onnxserve {
namespace {

constexpr std::string_view kDifferentiable[] = {"Add", "Sub",     "Mul",  "Div", "Neg", "Relu",   "Sigmoid",
                                                "Tanh", "Exp", "Log", "Identity", "MatMul", "Gemm"};

// A gradient: one double per element of its value.
struct Grad {
  Shape shape;
  std::vector<double> v;
};

std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.NumElements()));
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

// d(out)/d(a), d(out)/d(b) of a broadcasting binary op, given dL/d(out): fn(g, a, b) returns the two
// contributions, summed into each input's element (which is how broadcast dims reduce).
template <typename Fn>
void BinaryVjp(const Tensor& a, const Tensor& b, const Grad& g, Grad& ga, Grad& gb, Fn fn) {
  const std::vector<double> av = Doubles(a), bv = Doubles(b);
  const std::array<std::vector<int64_t>, 2> strides = {BroadcastStrides(a.shape(), g.shape),
                                                       BroadcastStrides(b.shape(), g.shape)};
  ForEachBroadcast<2>(g.shape, strides, [&](int64_t o, const std::array<int64_t, 2>& at) {
    const auto [da, db] = fn(g.v[o], av[at[0]], bv[at[1]]);
    ga.v[at[0]] += da;
    gb.v[at[1]] += db;
  });
}

// Element-wise op y = f(x): fn(g, x, y) is dL/dx.
template <typename Fn>
void UnaryVjp(const Tensor& x, const Tensor& y, const Grad& g, Grad& gx, Fn fn) {
  const std::vector<double> xv = Doubles(x), yv = Doubles(y);
  for (size_t i = 0; i < xv.size(); ++i) gx.v[i] += fn(g.v[i], xv[i], yv[i]);
}

// C[m, n] += alpha * op(A) op(B) over k, with op a transpose when asked; A is [m,k] or [k,m] (ta), B [k,n]
// or [n,k] (tb), all row-major.
void MatMulAdd(const std::vector<double>& a, bool ta, const std::vector<double>& b, bool tb, int64_t m,
               int64_t n, int64_t k, double alpha, std::vector<double>& c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a[ta ? p * m + i : i * k + p] * b[tb ? j * k + p : p * n + j];
      c[i * n + j] += alpha * sum;
    }
    StopIfRunEnded(WorkOf({n, k}));
  }
}

struct GemmAttrs {
  double alpha = 1, beta = 1;
  bool trans_a = false, trans_b = false;
};

// Y = alpha op(A) op(B) + beta C: dA = alpha G op(B)^T (transposed back when trans_a), dB likewise, dC the
// sum of beta G over C's broadcast dims. MatMul is the 2-D case with alpha 1 and no C.
absl::Status MatrixVjp(const ir::Node& node, const GemmAttrs& attrs, const std::vector<const Tensor*>& in,
                       const Grad& g, std::vector<Grad*>& gin) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (a.rank() != 2 || b.rank() != 2) {
    return absl::UnimplementedError(absl::StrCat("Gradient: ", node.op_type(), " node \"", node.name(),
                                                 "\" of ", ShapeToString(a.shape()), " and ",
                                                 ShapeToString(b.shape()), ": only 2-D products are differentiated"));
  }
  const int64_t m = g.shape[0], n = g.shape[1], k = attrs.trans_a ? a.dim(0) : a.dim(1);
  const std::vector<double> av = Doubles(a), bv = Doubles(b);
  // op(A) is [m,k]: d op(A) = G op(B)^T; stored as A's layout, dA[i,p] (or [p,i] when transposed).
  std::vector<double> da(static_cast<size_t>(m * k), 0.0), db(static_cast<size_t>(k * n), 0.0);
  MatMulAdd(g.v, false, bv, !attrs.trans_b, m, k, n, attrs.alpha, da);  // G [m,n] x op(B)^T [n,k]
  MatMulAdd(av, !attrs.trans_a, g.v, false, k, n, m, attrs.alpha, db);  // op(A)^T [k,m] x G [m,n]
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) gin[0]->v[attrs.trans_a ? p * m + i : i * k + p] += da[i * k + p];
  }
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) gin[1]->v[attrs.trans_b ? j * k + p : p * n + j] += db[p * n + j];
  }
  if (in.size() > 2 && in[2] != nullptr) {
    const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(in[2]->shape(), g.shape)};
    ForEachBroadcast<1>(g.shape, strides, [&](int64_t o, const std::array<int64_t, 1>& at) {
      gin[2]->v[at[0]] += attrs.beta * g.v[o];
    });
  }
  return absl::OkStatus();
}

// Adds dL/d(inputs) of `node` given dL/d(output 0) `g`; `in` are its inputs, `out` its output 0.
absl::Status Backprop(const ir::Node& node, const GemmAttrs& gemm, const std::vector<const Tensor*>& in,
                      const Tensor& out, const Grad& g, std::vector<Grad*>& gin) {
  const std::string& op = node.op_type();
  using P = std::pair<double, double>;
  auto binary = [&](auto fn) { BinaryVjp(*in[0], *in[1], g, *gin[0], *gin[1], fn); };
  auto unary = [&](auto fn) { UnaryVjp(*in[0], out, g, *gin[0], fn); };
  if (op == "Add") {
    binary([](double d, double, double) { return P{d, d}; });
  } else if (op == "Sub") {
    binary([](double d, double, double) { return P{d, -d}; });
  } else if (op == "Mul") {
    binary([](double d, double a, double b) { return P{d * b, d * a}; });
  } else if (op == "Div") {
    binary([](double d, double a, double b) { return P{d / b, -d * a / (b * b)}; });
  } else if (op == "Neg") {
    unary([](double d, double, double) { return -d; });
  } else if (op == "Identity") {
    unary([](double d, double, double) { return d; });
  } else if (op == "Relu") {
    unary([](double d, double x, double) { return x > 0 ? d : 0.0; });
  } else if (op == "Sigmoid") {
    unary([](double d, double, double y) { return d * y * (1 - y); });
  } else if (op == "Tanh") {
    unary([](double d, double, double y) { return d * (1 - y * y); });
  } else if (op == "Exp") {
    unary([](double d, double, double y) { return d * y; });
  } else if (op == "Log") {
    unary([](double d, double x, double) { return d / x; });
  } else {
    return MatrixVjp(node, gemm, in, g, gin);  // MatMul, Gemm: the only others BuildTape lets through
  }
  return absl::OkStatus();
}

// Forward values of the tape, by IR value.
using ValueMap = absl::flat_hash_map<const ir::Value*, Tensor>;

// Gradients by value; a node map, so that the pointers RunBackward hands out stay valid as it inserts.
using GradMap = absl::node_hash_map<const ir::Value*, Grad>;

// One node of the tape, with its kernel and (Gemm) attributes.
struct TapeStep {
  const ir::Node* node;
  std::unique_ptr<OpKernel> kernel;
  GemmAttrs gemm;
};

class Gradient final : public OpKernel {
 public:
  absl::Status Init(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const std::vector<std::string> xs, info.Attr<std::vector<std::string>>("xs"));
    ASSIGN_OR_RETURN(const std::vector<std::string> zs, info.Attr<std::vector<std::string>>("zs", {}));
    ASSIGN_OR_RETURN(const std::string y, info.Attr<std::string>("y"));
    const size_t inputs = xs.size() + zs.size();
    if (info.num_inputs() != static_cast<int>(inputs) || info.num_outputs() != static_cast<int>(xs.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gradient: ", info.num_inputs(), " inputs and ", info.num_outputs(),
                       " outputs: expected one input per name in xs and zs (", inputs, ") and one output per x (",
                       xs.size(), ")"));
    }
    std::vector<std::string> names = xs;
    names.insert(names.end(), zs.begin(), zs.end());
    for (int i = 0; i < info.num_inputs(); ++i) {
      const ir::Value* v = info.node().input(i);
      if (v == nullptr || v->name() != names[i]) {
        return absl::UnimplementedError(absl::StrCat("Gradient: input ", i, " must be the value \"", names[i],
                                                     "\" itself (xs then zs)"));
      }
      seeds_.push_back(v);
    }
    num_xs_ = static_cast<int>(xs.size());
    ASSIGN_OR_RETURN(y_, FindY(info.node(), y));
    return BuildTape(info.node());
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ValueMap values;
    for (size_t i = 0; i < seeds_.size(); ++i) {
      RETURN_IF_ERROR(RequireInputs(ctx, static_cast<int>(i) + 1));
      values[seeds_[i]] = *ctx.Input(static_cast<int>(i));
    }
    for (const TapeStep& step : tape_) RETURN_IF_ERROR(RunForward(step, values, ctx.pool()));
    GradMap grads;
    const Tensor& y = values.at(y_);
    grads[y_] = Grad{y.shape(), std::vector<double>(static_cast<size_t>(y.NumElements()), 1.0)};  // dy/dy
    for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) RETURN_IF_ERROR(RunBackward(*it, values, grads));
    for (int i = 0; i < num_xs_; ++i) RETURN_IF_ERROR(WriteGradient(ctx, i, values.at(seeds_[i]), grads));
    return absl::OkStatus();
  }

 private:
  // The value named y among the outputs of nodes reachable from the seeds.
  absl::StatusOr<const ir::Value*> FindY(const ir::Node& self, const std::string& y) const {
    for (const ir::Value* seed : seeds_) {
      if (seed->name() == y) return seed;
    }
    std::vector<const ir::Value*> frontier(seeds_.begin(), seeds_.end());
    absl::flat_hash_set<const ir::Node*> seen;
    while (!frontier.empty()) {
      const ir::Value* v = frontier.back();
      frontier.pop_back();
      for (const ir::Use& use : v->uses()) {
        if (use.node == &self || !seen.insert(use.node).second) continue;
        for (const ir::Value* out : use.node->outputs()) {
          if (out == nullptr) continue;
          if (out->name() == y) return out;
          frontier.push_back(out);
        }
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("Gradient: y \"", y, "\" is not computed from xs and zs in the graph (nodes whose outputs "
                     "nothing reads are dropped at load: make y a graph output)"));
  }

  // The producers of y back to the seeds and constants, in an order where each follows its inputs'.
  absl::Status BuildTape(const ir::Node& self) {
    absl::flat_hash_set<const ir::Node*> done;
    std::vector<const ir::Node*> order;
    RETURN_IF_ERROR(Visit(y_, self, done, order));
    for (const ir::Node* node : order) {
      const auto* known = std::find(std::begin(kDifferentiable), std::end(kDifferentiable), node->op_type());
      if (node->domain() != kOnnx || known == std::end(kDifferentiable)) {
        return absl::UnimplementedError(absl::StrCat("Gradient: no derivative for ", node->domain(), " ",
                                                     node->op_type(), " (node \"", node->name(), "\")"));
      }
      const KernelDef* def = KernelRegistry::Global().Find(node->domain(), node->op_type(), node->opset());
      if (def == nullptr) return absl::InternalError(absl::StrCat("no kernel for ", node->op_type()));
      std::vector<const Tensor*> constants;
      for (const ir::Value* v : node->inputs()) constants.push_back(v != nullptr ? v->constant() : nullptr);
      KernelInfo info(*node, constants, {});
      TapeStep step{.node = node, .kernel = nullptr, .gemm = {}};
      ASSIGN_OR_RETURN(step.kernel, def->create(info));
      if (node->op_type() == "Gemm") {
        ASSIGN_OR_RETURN(step.gemm, ReadGemm(info));
      }
      tape_.push_back(std::move(step));
    }
    return absl::OkStatus();
  }

  absl::Status Visit(const ir::Value* v, const ir::Node& self, absl::flat_hash_set<const ir::Node*>& done,
                     std::vector<const ir::Node*>& order) const {
    if (std::find(seeds_.begin(), seeds_.end(), v) != seeds_.end() || v->constant() != nullptr) return absl::OkStatus();
    const ir::Node* producer = v->producer();
    if (producer == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("Gradient: y depends on \"", v->name(),
                                                     "\", which is neither in xs or zs nor a constant"));
    }
    if (producer == &self) return absl::InvalidArgumentError("Gradient: y depends on the Gradient node's own outputs");
    if (!done.insert(producer).second) return absl::OkStatus();
    for (const ir::Value* in : producer->inputs()) {
      if (in != nullptr) RETURN_IF_ERROR(Visit(in, self, done, order));
    }
    order.push_back(producer);
    return absl::OkStatus();
  }

  static absl::StatusOr<GemmAttrs> ReadGemm(const KernelInfo& info) {
    ASSIGN_OR_RETURN(const float alpha, info.Attr<float>("alpha", 1.0f));
    ASSIGN_OR_RETURN(const float beta, info.Attr<float>("beta", 1.0f));
    ASSIGN_OR_RETURN(const int64_t ta, info.Attr<int64_t>("transA", 0));
    ASSIGN_OR_RETURN(const int64_t tb, info.Attr<int64_t>("transB", 0));
    return GemmAttrs{.alpha = alpha, .beta = beta, .trans_a = ta != 0, .trans_b = tb != 0};
  }

  static absl::StatusOr<std::vector<const Tensor*>> TapeInputs(const ir::Node& node, const ValueMap& values) {
    std::vector<const Tensor*> in;
    for (const ir::Value* v : node.inputs()) {
      if (v == nullptr) {
        in.push_back(nullptr);
      } else if (auto it = values.find(v); it != values.end()) {
        in.push_back(&it->second);
      } else if (v->constant() != nullptr) {
        in.push_back(v->constant());
      } else {
        return absl::InternalError(absl::StrCat("Gradient: tape value \"", v->name(), "\" was not computed"));
      }
    }
    return in;
  }

  static absl::Status RunForward(const TapeStep& step, ValueMap& values,
                                 ThreadPool& pool) {
    ASSIGN_OR_RETURN(const std::vector<const Tensor*> in, TapeInputs(*step.node, values));
    std::vector<Tensor> outputs(step.node->outputs().size());
    KernelContext ctx(in, &outputs, std::vector<bool>(outputs.size(), true), &pool, {});
    RETURN_IF_ERROR(step.kernel->Compute(ctx));
    for (size_t i = 0; i < outputs.size(); ++i) {
      const ir::Value* out = step.node->output(static_cast<int>(i));
      if (out != nullptr) values[out] = outputs[i];
    }
    return absl::OkStatus();
  }

  static absl::Status RunBackward(const TapeStep& step, const ValueMap& values,
                                  GradMap& grads) {
    const ir::Value* out = step.node->output(0);
    const auto found = grads.find(out);
    if (found == grads.end()) return absl::OkStatus();  // y does not depend on this output
    // The element, not the iterator: inserting the inputs' gradients below invalidates iterators (a node
    // map keeps elements where they are).
    const Grad& g = found->second;
    ASSIGN_OR_RETURN(const std::vector<const Tensor*> in, TapeInputs(*step.node, values));
    std::vector<Grad*> gin;
    for (size_t i = 0; i < in.size(); ++i) {
      const ir::Value* v = step.node->input(static_cast<int>(i));
      Grad* slot = nullptr;
      if (v != nullptr) {
        auto [it, inserted] = grads.try_emplace(v);
        if (inserted) it->second = Grad{in[i]->shape(), std::vector<double>(in[i]->NumElements(), 0.0)};
        slot = &it->second;
      }
      gin.push_back(slot);
    }
    return Backprop(*step.node, step.gemm, in, values.at(out), g, gin);
  }

  // Output i: dy/dx_i in x_i's type and shape; zeros when y does not depend on x_i.
  absl::Status WriteGradient(KernelContext& ctx, int i, const Tensor& x, const GradMap& grads) const {
    const auto it = grads.find(seeds_[i]);
    Tensor& out = ctx.Output(i, x.dtype(), x.shape());
    return DispatchFloating(x, "Gradient: x", [&](auto tag) {
      using T = decltype(tag);
      T* o = out.data<T>();
      for (int64_t e = 0; e < x.NumElements(); ++e) {
        const double v = it != grads.end() ? it->second.v[e] : 0.0;
        o[e] = FromCompute<T>(static_cast<ComputeType<T>>(v));
      }
    });
  }

  std::vector<const ir::Value*> seeds_;  // xs then zs
  int num_xs_ = 0;
  const ir::Value* y_ = nullptr;
  std::vector<TapeStep> tape_;
};

constexpr DataType kGradientTypes[] = {DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                       DataType::kBFloat16};

REGISTER_KERNEL(kTraining, "Gradient", 1, kLatest, kGradientTypes, Gradient);

}  // namespace
}  // namespace onnxserve
