// Transpose/Reshape elimination: layout shuffles that cancel or compose, each rewritten only when it is
// provably the same tensor (shapes known where the rewrite depends on them) and no graph output loses its
// producer:
//   Transpose(Transpose(x)) -> one Transpose with the composed perm, or x when it is the identity;
//   Reshape(Reshape(x), s) -> Reshape(x, s) when s is constant without a 0 that copies an input dim;
//   Reshape / Flatten / Squeeze to the shape x already has (x's dims certain at load) -> x;
//   Transpose that only moves size-1 dims (x's dims certain at load) -> Reshape, a copy-free view.
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"

namespace onnxserve::passes {
namespace {

std::optional<std::vector<int64_t>> Perm(const ir::Node* transpose) {
  const ir::Attribute* perm = transpose->FindAttribute("perm");
  if (perm == nullptr) return std::nullopt;  // reverses the dims: depends on the rank
  return perm->ints;
}

bool IsIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// x's dims when they are certain at load: a constant's, or a graph input's when declared in full (the plan
// checks each feed against them). value_info declarations of other values are not checked, so not trusted.
std::optional<Shape> StaticDims(const ir::Value* value) {
  if (value == nullptr) return std::nullopt;
  if (value->constant() != nullptr) return value->constant()->shape();
  if (!value->is_graph_input() || !value->type().is_tensor() || !value->type().has_shape) return std::nullopt;
  for (int64_t d : value->type().dims) {
    if (d < 0) return std::nullopt;
  }
  return value->type().dims;
}

// A constant int64 shape input.
std::optional<std::vector<int64_t>> ConstantShape(const ir::Value* value) {
  const Tensor* t = value == nullptr ? nullptr : value->constant();
  if (t == nullptr || t->dtype() != DataType::kInt64 || t->rank() != 1) return std::nullopt;
  return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->NumElements());
}

bool AllowsZero(const ir::Node* reshape) {
  const ir::Attribute* allowzero = reshape->FindAttribute("allowzero");
  return allowzero != nullptr && allowzero->i != 0;
}

// Whether a value may be bypassed: readers other than the graph's outputs and subgraphs (which read it by
// name) can be pointed elsewhere.
bool Bypassable(const ir::Value* value) {
  if (value == nullptr || value->is_graph_output()) return false;
  for (const ir::Use& use : value->uses()) {
    if (use.index < 0) return false;
  }
  return true;
}

// What Reshape(x, shape) gives for x of `dims` (0 copies x's dim unless allowzero, one -1 is inferred), or
// nullopt when the shape is invalid for x (the kernel then reports it).
std::optional<Shape> ReshapedDims(const Shape& dims, const std::vector<int64_t>& shape, bool allowzero) {
  Shape out;
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == 0 && !allowzero) {
      if (i >= dims.size()) return std::nullopt;
      d = dims[i];
    }
    if (d == -1) {
      if (inferred >= 0) return std::nullopt;
      inferred = static_cast<int>(i);
    } else if (d < 0) {
      return std::nullopt;
    } else {
      known *= d;
    }
    out.push_back(d);
  }
  const int64_t total = NumElements(dims);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) return std::nullopt;
    out[inferred] = total / known;
  } else if (known != total) {
    return std::nullopt;
  }
  return out;
}

// The shape `node` (Reshape, Flatten or Squeeze) gives its input, when known at load.
std::optional<Shape> OutputDims(const ir::Node* node, const Shape& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (IsOp(node, "Reshape") && node->opset() >= 5) {
    std::optional<std::vector<int64_t>> shape = ConstantShape(node->input(1));
    if (!shape) return std::nullopt;
    return ReshapedDims(dims, *shape, AllowsZero(node));
  }
  if (IsOp(node, "Flatten")) {
    const ir::Attribute* attr = node->FindAttribute("axis");
    int64_t axis = attr == nullptr ? 1 : attr->i;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return std::nullopt;
    const int64_t outer = std::accumulate(dims.begin(), dims.begin() + axis, int64_t{1}, std::multiplies<>());
    const int64_t inner = std::accumulate(dims.begin() + axis, dims.end(), int64_t{1}, std::multiplies<>());
    return Shape{outer, inner};
  }
  if (IsOp(node, "Squeeze") && node->FindAttribute("axes") == nullptr && node->input(1) == nullptr) {
    Shape out;
    for (int64_t d : dims) {
      if (d != 1) out.push_back(d);
    }
    return out;
  }
  return std::nullopt;
}

class TransposeReshapeElimination final : public Pass {
 public:
  std::string_view name() const override { return "transpose-reshape-elimination"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    RewriteUntilStable(graph, [&](ir::Node* node) {
      return ComposeTransposes(graph, node, changes) || CollapseReshapes(graph, node, changes) ||
             DropNoOpReshape(graph, node, changes) || TransposeToReshape(graph, node, changes);
    });
    return absl::OkStatus();
  }

 private:
  // Readers of `node`'s output read `replacement` instead, and `node` goes.
  static void Bypass(ir::Graph& graph, ir::Node* node, ir::Value* replacement, const std::string& why,
                     std::vector<std::string>& changes) {
    changes.push_back(absl::StrCat("removed ", node->Label(), " (", why, "): readers of \"", node->output(0)->name(),
                                   "\" read \"", replacement->name(), "\""));
    graph.ReplaceAllUses(node->output(0), replacement);
    graph.RemoveNode(node);
  }

  static bool ComposeTransposes(ir::Graph& graph, ir::Node* second, std::vector<std::string>& changes) {
    if (!IsOp(second, "Transpose") || second->input(0) == nullptr) return false;
    ir::Node* first = second->input(0)->producer();
    if (!IsOp(first, "Transpose") || !OnlyReadBy(first->output(0), 1) || first->input(0) == nullptr) return false;
    const std::optional<std::vector<int64_t>> p1 = Perm(first), p2 = Perm(second);
    if (!p1 || !p2 || p1->size() != p2->size()) return false;
    std::vector<int64_t> composed;
    for (int64_t axis : *p2) {
      if (axis < 0 || axis >= static_cast<int64_t>(p1->size())) return false;  // the kernel reports it
      composed.push_back((*p1)[axis]);
    }
    ir::Value* x = first->input(0);
    if (IsIdentityPerm(composed)) {
      if (!Bypassable(second->output(0))) return false;
      Bypass(graph, second, x, absl::StrCat("it undoes ", first->Label()), changes);
      graph.RemoveNode(first);
      return true;
    }
    changes.push_back(absl::StrCat("composed ", first->Label(), " into ", second->Label(), ": perm [",
                                   absl::StrJoin(composed, ","), "]"));
    ir::Attribute perm = *second->FindAttribute("perm");
    perm.ints = composed;
    second->SetAttribute(std::move(perm));
    graph.SetInput(second, 0, x);
    graph.RemoveNode(first);
    return true;
  }

  static bool CollapseReshapes(ir::Graph& graph, ir::Node* second, std::vector<std::string>& changes) {
    if (!IsOp(second, "Reshape") || second->opset() < 5 || second->input(0) == nullptr) return false;
    ir::Node* first = second->input(0)->producer();
    if (!IsOp(first, "Reshape") || !OnlyReadBy(first->output(0), 1) || first->input(0) == nullptr) return false;
    std::optional<std::vector<int64_t>> shape = ConstantShape(second->input(1));
    if (!shape) return false;
    // A 0 in the second shape copies a dim of its input, which is the first Reshape's output.
    if (!AllowsZero(second) && std::find(shape->begin(), shape->end(), 0) != shape->end()) return false;
    changes.push_back(absl::StrCat("removed ", first->Label(), ": ", second->Label(), " reshapes its input"));
    graph.SetInput(second, 0, first->input(0));
    graph.RemoveNode(first);
    return true;
  }

  static bool DropNoOpReshape(ir::Graph& graph, ir::Node* node, std::vector<std::string>& changes) {
    if (node->input(0) == nullptr || node->output(0) == nullptr || !Bypassable(node->output(0))) return false;
    std::optional<Shape> dims = StaticDims(node->input(0));
    if (!dims) return false;
    std::optional<Shape> out = OutputDims(node, *dims);
    if (!out || *out != *dims) return false;
    Bypass(graph, node, node->input(0), "its input already has that shape", changes);
    return true;
  }

  static bool TransposeToReshape(ir::Graph& graph, ir::Node* transpose, std::vector<std::string>& changes) {
    if (!IsOp(transpose, "Transpose") || transpose->opset() < 5 || transpose->output(0) == nullptr) return false;
    std::optional<Shape> dims = StaticDims(transpose->input(0));
    std::optional<std::vector<int64_t>> perm = Perm(transpose);
    if (!dims || !perm || perm->size() != dims->size() || IsIdentityPerm(*perm)) return false;
    Shape out;
    int64_t last_moved = -1;  // the input axis of the last dim of size > 1 seen in output order
    for (int64_t axis : *perm) {
      if (axis < 0 || axis >= static_cast<int64_t>(dims->size())) return false;
      const int64_t d = (*dims)[axis];
      if (d == 0) return false;  // Reshape would read a 0 as "copy the input's dim"
      if (d != 1) {
        if (axis < last_moved) return false;  // dims of size > 1 change order: the data moves
        last_moved = axis;
      }
      out.push_back(d);
    }
    ir::Value* shape = graph.AddConstant(absl::StrCat(transpose->output(0)->name(), "_shape"),
                                         Tensor::FromVector<int64_t>({static_cast<int64_t>(out.size())}, out));
    changes.push_back(absl::StrCat("made ", transpose->Label(), " a Reshape: it moves only dims of size 1"));
    ir::Node* reshape =
        graph.AddNode({transpose->name(), "ai.onnx", "Reshape", transpose->opset(), {transpose->input(0), shape}, {}},
                      {""});
    graph.MoveBefore(reshape, transpose);
    graph.TransferOutput(transpose, 0, reshape, 0);
    graph.RemoveNode(transpose);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeTransposeReshapeElimination() { return std::make_unique<TransposeReshapeElimination>(); }

}  // namespace onnxserve::passes
