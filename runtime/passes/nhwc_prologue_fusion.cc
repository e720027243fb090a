// NHWC prologue fusion. A pointwise NhwcConv (1x1, stride 1, no pads, one group, no Z) whose maps only a
// depthwise NhwcConv reads becomes that convolution's prologue (runtime/math/nhwc_conv.h, NhwcPrologue):
// the depthwise node takes the pointwise one's X, weights, bias and activation, and computes the expanded
// maps band by band where they are too large to stay in cache between the two, as a MobileNet block's
// expansion is. Runs after channels-last, which makes the NhwcConv nodes.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"
#include "runtime/registry/registry.h"

namespace onnxserve::passes {
namespace {

// NhwcConv's inputs: X, W, B, Z, then the prologue's W and B.
constexpr int kX = 0, kW = 1, kB = 2, kZ = 3, kPrologueW = 4, kPrologueB = 5;

bool IsNhwcConvWithoutPrologue(const ir::Node* node) {
  return node->op_type() == "NhwcConv" && node->domain() == kInternal && node->input(kX) != nullptr &&
         node->input(kPrologueW) == nullptr && node->input(kW) != nullptr && node->input(kW)->constant() != nullptr;
}

// Whether the node's ints attribute `name` is absent or every element equals `value`.
bool AllOrAbsent(const ir::Node* node, std::string_view name, int64_t value) {
  const ir::Attribute* attr = node->FindAttribute(name);
  if (attr == nullptr) return true;
  for (int64_t v : attr->ints) {
    if (v != value) return false;
  }
  return true;
}

int64_t IntOr(const ir::Node* node, std::string_view name, int64_t fallback) {
  const ir::Attribute* attr = node->FindAttribute(name);
  return attr == nullptr ? fallback : attr->i;
}

// A 1x1 of one group at stride 1 without pads or Z: each output pixel is its input pixel's.
bool IsPointwise(const ir::Node* node) {
  if (!IsNhwcConvWithoutPrologue(node) || node->input(kZ) != nullptr) return false;
  const Tensor& w = *node->input(kW)->constant();
  const ir::Attribute* auto_pad = node->FindAttribute("auto_pad");
  return w.rank() == 4 && w.dim(2) == 1 && w.dim(3) == 1 && IntOr(node, "group", 1) == 1 &&
         AllOrAbsent(node, "strides", 1) && AllOrAbsent(node, "pads", 0) && AllOrAbsent(node, "dilations", 1) &&
         (auto_pad == nullptr || auto_pad->s == "NOTSET" || auto_pad->s == "VALID");
}

// A depthwise convolution (one channel and one map per group) of `channels` channels.
bool IsDepthwiseOf(const ir::Node* node, int64_t channels) {
  if (!IsNhwcConvWithoutPrologue(node)) return false;
  const Tensor& w = *node->input(kW)->constant();
  return channels > 1 && w.rank() == 4 && w.dim(0) == channels && w.dim(1) == 1 &&
         IntOr(node, "group", 1) == channels;
}

// The prologue's activation under the names NhwcConv reads it by.
void MoveActivation(const ir::Node* from, ir::Node* to) {
  if (const ir::Attribute* activation = from->FindAttribute("activation")) {
    to->SetAttribute(ir::StringAttribute("prologue_activation", activation->s));
  }
  if (const ir::Attribute* params = from->FindAttribute("activation_params")) {
    ir::Attribute renamed = *params;
    renamed.name = "prologue_activation_params";
    to->SetAttribute(std::move(renamed));
  }
}

class NhwcPrologueFusion final : public Pass {
 public:
  std::string_view name() const override { return "nhwc-prologue-fusion"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    RewriteUntilStable(graph, [&](ir::Node* node) { return FuseIntoReader(graph, node, changes); });
    return absl::OkStatus();
  }

 private:
  static bool FuseIntoReader(ir::Graph& graph, ir::Node* pointwise, std::vector<std::string>& changes) {
    if (!IsPointwise(pointwise) || pointwise->outputs().size() != 1) return false;
    ir::Value* expanded = pointwise->output(0);
    ir::Node* depthwise = expanded == nullptr ? nullptr : SoleReader(expanded);
    if (depthwise == nullptr || depthwise->input(kX) != expanded ||
        !IsDepthwiseOf(depthwise, pointwise->input(kW)->constant()->dim(0))) {
      return false;
    }
    changes.push_back(absl::StrCat(pointwise->Label(), " runs as the prologue of ", depthwise->Label()));
    graph.SetInput(depthwise, kX, pointwise->input(kX));
    graph.SetInput(depthwise, kPrologueW, pointwise->input(kW));
    if (ir::Value* bias = pointwise->input(kB)) graph.SetInput(depthwise, kPrologueB, bias);
    MoveActivation(pointwise, depthwise);
    graph.RemoveNode(pointwise);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeNhwcPrologueFusion() { return std::make_unique<NhwcPrologueFusion>(); }

}  // namespace onnxserve::passes
