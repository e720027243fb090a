// Channels-last. Convolutions that feed one another run in NHWC on oneDNN (runtime/math/nhwc_conv.h) and
// pass their maps on in NHWC, so neither packs nor reorders anything between them: a Conv or FusedConv of
// 2-D float constant weights, of one group or depthwise, becomes an ai.onnxserve NhwcConv, and the ops
// between such convolutions that pass maps through (activations, Add, Mul, GlobalAveragePool, MaxPool) run
// on the NHWC maps as they are. Where a group of them meets the rest of the graph a ToNhwc or FromNhwc node
// changes the layout, one per value however many readers it has. A group of fewer than two convolutions, or
// of small ones (kMinGroupWork), stays in NCHW: its layout changes and oneDNN's calls would cost what the
// layout saves; so does a group of dense convolutions only, where oneDNN's dense kernels only tie ours
// (NhwcDenseConvsWin: AVX2). oneDNN already runs a lone 3x3, reorders included, in runtime/math/dnnl_conv.h.
//
// The pass runs only when oneDNN is built in and the CPU has AVX2 or AVX-512 (NhwcConvAvailable()).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "runtime/math/nhwc_conv.h"
#include "runtime/passes/match.h"
#include "runtime/passes/pass.h"
#include "runtime/registry/registry.h"

namespace onnxserve::passes {
namespace {

// The input indices of a convolution that carry feature maps: X and Z.
constexpr int kX = 0, kZ = 3;

bool IsConv(const ir::Node& node) {
  return (node.op_type() == "Conv" && node.domain() == "ai.onnx") ||
         (node.op_type() == "FusedConv" && node.domain() == kInternal);
}

// Whether `node`'s one output can stay in NHWC: read by nodes only (not a graph output nor a
// subgraph, which read it by name in NCHW).
bool OutputStaysInside(const ir::Node& node) {
  if (node.outputs().size() != 1 || node.output(0) == nullptr || node.output(0)->is_graph_output()) return false;
  const std::vector<ir::Use>& uses = node.output(0)->uses();
  return std::none_of(uses.begin(), uses.end(), [](const ir::Use& use) { return use.index < 0; });
}

int64_t GroupOf(const ir::Node& node) {
  const ir::Attribute* group = node.FindAttribute("group");
  return group == nullptr ? 1 : group->i;
}

// Whether `node` is a convolution NhwcConv runs: 2-D, float constant non-empty W, one group or depthwise, its
// result read by nodes only (not a graph output nor a subgraph, which read it by name in NCHW).
bool Convertible(const ir::Node& node) {
  if (!IsConv(node) || node.input(kX) == nullptr || !OutputStaysInside(node)) return false;
  const Tensor* w = node.input(1) != nullptr ? node.input(1)->constant() : nullptr;
  // An empty W (no maps) is a valid convolution that NhwcConv does not take.
  if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() != 4 || w->NumElements() == 0) return false;
  const int64_t group = GroupOf(node);
  if (group != 1 && !(w->dim(1) == 1 && w->dim(0) == group)) return false;
  return true;
}

int64_t Maps(const ir::Node& conv) { return conv.input(1)->constant()->dim(0); }

// A group whose convolutions average fewer multiply-adds per image than this stays in NCHW: oneDNN's call
// costs more than its kernels save there (the keyword spotter's 64 x 25 x 5 maps: its 1x1s take 3.9 us in
// oneDNN and 4.5 us in ours, but 6 us with oneDNN's call around them).
constexpr double kMinGroupWork = 1 << 22;

// The spatial dims [H, W] that the model's declared shapes and the attributes of convolutions, pools and
// elementwise ops give each value of the graph, where they give them.
using SpatialDims = std::pair<int64_t, int64_t>;

std::vector<int64_t> IntsOr(const ir::Node& node, std::string_view name, std::vector<int64_t> fallback) {
  const ir::Attribute* attr = node.FindAttribute(name);
  return attr == nullptr ? fallback : attr->ints;
}

// The output dims of a window op (Conv, MaxPool, AveragePool) over `in` with the node's attributes and
// a kernel of `kernel` (from W or kernel_shape); nullopt where the padding mode needs more than this.
std::optional<SpatialDims> WindowOutput(const ir::Node& node, SpatialDims in, const std::vector<int64_t>& kernel) {
  const ir::Attribute* auto_pad = node.FindAttribute("auto_pad");
  if (kernel.size() != 2 || (auto_pad != nullptr && auto_pad->s != "NOTSET")) return std::nullopt;
  const std::vector<int64_t> strides = IntsOr(node, "strides", {1, 1});
  const std::vector<int64_t> dilations = IntsOr(node, "dilations", {1, 1});
  const std::vector<int64_t> pads = IntsOr(node, "pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) return std::nullopt;
  const int64_t dims[2] = {in.first, in.second};
  int64_t out[2];
  for (int d = 0; d < 2; ++d) {
    // In double: a heuristic over attributes a model chose, which need not fit in int64 when multiplied.
    const double extent = (static_cast<double>(kernel[d]) - 1) * static_cast<double>(dilations[d]) + 1;
    const double span = static_cast<double>(dims[d]) + static_cast<double>(pads[d]) + static_cast<double>(pads[d + 2]);
    if (strides[d] < 1 || span < extent || span > 1e12) return std::nullopt;
    out[d] = static_cast<int64_t>((span - extent) / static_cast<double>(strides[d])) + 1;
  }
  return SpatialDims{out[0], out[1]};
}

// Ops whose output has the spatial dims of their first input.
bool KeepsSpatialDims(const ir::Node& node) {
  static const absl::flat_hash_set<std::string> kOps = {
      "Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Tanh", "Gelu", "Add", "Mul",
      "Sum", "BatchNormalization", "Concat", "Identity", "Dropout", "PRelu", "Elu", "Selu", "Softplus"};
  return kOps.contains(node.op_type());
}

absl::flat_hash_map<const ir::Value*, SpatialDims> KnownSpatialDims(const std::vector<ir::Node*>& order,
                                                                      const ir::Graph& graph) {
  absl::flat_hash_map<const ir::Value*, SpatialDims> known;
  for (const ir::Value* input : graph.input_values()) {
    const ir::Type& type = input->type();
    if (type.is_tensor() && type.has_shape && type.dims.size() == 4 && type.dims[2] > 0 && type.dims[3] > 0) {
      known[input] = {type.dims[2], type.dims[3]};
    }
  }
  for (const ir::Node* node : order) {
    const ir::Value* x = node->input(0);
    auto it = x == nullptr ? known.end() : known.find(x);
    if (it == known.end() || node->output(0) == nullptr) continue;
    std::optional<SpatialDims> out;
    if (IsConv(*node) && node->input(1) != nullptr && node->input(1)->constant() != nullptr &&
        node->input(1)->constant()->rank() == 4) {
      const Tensor& w = *node->input(1)->constant();
      out = WindowOutput(*node, it->second, {w.dim(2), w.dim(3)});
    } else if (node->domain() == "ai.onnx" && (node->op_type() == "MaxPool" || node->op_type() == "AveragePool")) {
      out = WindowOutput(*node, it->second, IntsOr(*node, "kernel_shape", {}));
    } else if (node->domain() == "ai.onnx" && node->op_type() == "GlobalAveragePool") {
      out = SpatialDims{1, 1};
    } else if (KeepsSpatialDims(*node)) {
      out = it->second;
    }
    if (out) known[node->output(0)] = *out;
  }
  return known;
}

// Multiply-adds per image of `conv` when the dims of its input are known.
std::optional<double> ConvWork(const ir::Node& conv, const absl::flat_hash_map<const ir::Value*, SpatialDims>& known) {
  auto it = known.find(conv.output(0));
  if (it == known.end()) return std::nullopt;
  const Tensor& w = *conv.input(1)->constant();
  return static_cast<double>(w.NumElements()) * static_cast<double>(it->second.first) *
         static_cast<double>(it->second.second);
}

// Ops that pass maps through in NHWC, computing there what they compute in NCHW: activations (elementwise),
// Add and Mul of two maps of equal channels (NCHW broadcasting of such maps, a squeeze-excite block's
// [N,C,1,1] scale, is the same broadcasting of [N,1,1,C] in NHWC) or of a map and one number,
// GlobalAveragePool, which becomes NhwcGlobalAveragePool, and MaxPool, NhwcMaxPool.
bool IsActivation(const ir::Node& node) {
  static const absl::flat_hash_set<std::string> kOps = {"Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish",
                                                        "Sigmoid", "Tanh"};
  return node.domain() == "ai.onnx" && kOps.contains(node.op_type());
}
bool IsMapArithmetic(const ir::Node& node) {
  return node.domain() == "ai.onnx" && (node.op_type() == "Add" || node.op_type() == "Mul") &&
         node.inputs().size() == 2 && node.FindAttribute("broadcast") == nullptr;
}
bool IsGlobalPool(const ir::Node& node) {
  return node.domain() == "ai.onnx" && node.op_type() == "GlobalAveragePool";
}
// A 2-D MaxPool, which becomes NhwcMaxPool with its attributes. Before opset 10 MaxPool has no ceil_mode
// or dilations, and its kernel ignores them when a model sets them anyway: such a node stays.
bool IsMaxPool2D(const ir::Node& node) {
  if (node.domain() != "ai.onnx" || node.op_type() != "MaxPool") return false;
  const ir::Attribute* kernel = node.FindAttribute("kernel_shape");
  const bool later_attributes = node.FindAttribute("ceil_mode") != nullptr || node.FindAttribute("dilations") != nullptr;
  return kernel != nullptr && kernel->ints.size() == 2 && (node.opset() >= 10 || !later_attributes);
}

// The inputs through which `node` takes maps in the layout (the others are parameters: W, B, Clip's bounds).
std::vector<int> MapInputs(const ir::Node& node) {
  if (IsConv(node) || (node.op_type() == "NhwcConv" && node.domain() == kInternal)) return {kX, kZ};
  if (IsMapArithmetic(node)) return {0, 1};
  return {0};
}

// Whether `value` is one number of rank 4 at most, which broadcasts alike in every layout. Of rank 5 it
// makes the map [1, N, C, H, W], which the layout cannot hold.
bool IsScalarConstant(const ir::Value* value) {
  const Tensor* t = value == nullptr ? nullptr : value->constant();
  return t != nullptr && t->NumElements() == 1 && t->rank() <= 4;
}

class ChannelsLast final : public Pass {
 public:
  std::string_view name() const override { return "channels-last"; }

  absl::Status Run(ir::Graph& graph, std::vector<std::string>& changes) const override {
    static const bool kHaveKernels = KernelRegistry::Global().Find(kInternal, "NhwcConv", 1) != nullptr;
    if (!NhwcConvAvailable() || !kHaveKernels) return absl::OkStatus();
    const std::vector<ir::Node*> order = graph.nodes();
    const absl::flat_hash_map<const ir::Node*, int64_t> members = Members(order, graph);
    if (members.empty()) return absl::OkStatus();
    absl::flat_hash_map<const ir::Node*, int> position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
    absl::flat_hash_map<ir::Value*, ir::Value*> nhwc_copy;  // an NCHW value -> its ToNhwc output
    for (ir::Node* node : order) {
      if (!members.contains(node)) continue;
      if (IsConv(*node)) {
        for (int index : {kX, kZ}) {
          ir::Value* value = node->input(index);
          if (value == nullptr || members.contains(value->producer())) continue;
          graph.SetInput(node, index, NhwcCopy(graph, value, node, nhwc_copy, changes));
        }
        graph.SetOp(node, std::string(kInternal), "NhwcConv", 1);
      } else {
        for (int index : MapInputs(*node)) {
          ir::Value* value = node->input(index);
          if (value == nullptr || IsScalarConstant(value) || members.contains(value->producer())) continue;
          graph.SetInput(node, index, NhwcCopy(graph, value, node, nhwc_copy, changes));
        }
        if (IsGlobalPool(*node)) graph.SetOp(node, std::string(kInternal), "NhwcGlobalAveragePool", 1);
        if (IsMaxPool2D(*node)) graph.SetOp(node, std::string(kInternal), "NhwcMaxPool", 1);
      }
      changes.push_back(absl::StrCat(node->Label(), " runs in NHWC"));
    }
    for (ir::Node* node : order) {
      if (members.contains(node)) ToNchwForOthers(graph, node, members, position, changes);
    }
    return absl::OkStatus();
  }

 private:
  // The nodes that run in the layout, with the channels of what each computes: convertible convolutions
  // and the ops between them that pass maps through, in groups connected by the maps they pass on, of at
  // least two convolutions that average kMinGroupWork or more where their sizes are known.
  static absl::flat_hash_map<const ir::Node*, int64_t> Members(const std::vector<ir::Node*>& order,
                                                                const ir::Graph& graph) {
    // In order, so that a node's producers are decided before it. A convolution of one known pixel (a
    // squeeze-excite block's) is a matrix-vector product, which our packed GEMM runs better than oneDNN,
    // so it stays out and the scale it makes joins through a layout change of C numbers. A pass-through op
    // joins when every map it reads comes from a candidate, of equal channels; Add and Mul may also read one
    // number, or a map of a convolution that stays out, of those channels.
    const absl::flat_hash_map<const ir::Value*, SpatialDims> known = KnownSpatialDims(order, graph);
    absl::flat_hash_map<const ir::Node*, int64_t> candidates;
    for (const ir::Node* node : order) {
      if (IsConv(*node)) {
        auto out = known.find(node->output(0));
        const bool one_pixel = out != known.end() && out->second == SpatialDims{1, 1};
        // A residual Z from outside would need its shape to be Y's, which only a candidate's map can be
        // expected to have (anything else may be a [C,1,1] bias that the fused Add broadcasts).
        const ir::Value* z = node->input(kZ);
        const bool z_inside = z == nullptr || candidates.contains(z->producer());
        if (Convertible(*node) && !one_pixel && z_inside) candidates[node] = Maps(*node);
        continue;
      }
      if (!(IsActivation(*node) || IsMapArithmetic(*node) || IsGlobalPool(*node) || IsMaxPool2D(*node)) ||
          !OutputStaysInside(*node)) {
        continue;
      }
      std::optional<int64_t> channels;
      std::vector<int64_t> outside;  // the channels of maps from convolutions that stay out
      bool joins = true;
      for (int index : MapInputs(*node)) {
        const ir::Value* value = node->input(index);
        if (IsMapArithmetic(*node) && IsScalarConstant(value)) continue;
        const ir::Node* producer = value == nullptr ? nullptr : value->producer();
        auto it = candidates.find(producer);
        if (it != candidates.end()) {
          joins &= !channels || *channels == it->second;
          channels = it->second;
        } else if (IsMapArithmetic(*node) && producer != nullptr && Convertible(*producer) &&
                   producer->input(kZ) == nullptr) {
          // Without Z: a fused Add's operand may widen the result past [N, M, H, W] (a rank-5 number does).
          outside.push_back(Maps(*producer));
        } else {
          joins = false;
        }
      }
      for (int64_t c : outside) joins &= channels && *channels == c;
      if (joins && channels) candidates[node] = *channels;
    }
    absl::flat_hash_map<const ir::Node*, int64_t> members;
    absl::flat_hash_set<const ir::Node*> seen;
    for (const ir::Node* start : order) {
      if (!candidates.contains(start) || seen.contains(start)) continue;
      std::vector<const ir::Node*> group = {start};
      seen.insert(start);
      for (size_t i = 0; i < group.size(); ++i) {
        for (const ir::Node* next : Neighbours(*group[i])) {
          if (candidates.contains(next) && seen.insert(next).second) group.push_back(next);
        }
      }
      double work = 0;
      int convs = 0, sized = 0;
      bool depthwise = false;
      for (const ir::Node* node : group) {
        if (!IsConv(*node)) continue;
        ++convs;
        depthwise |= GroupOf(*node) > 1;
        if (std::optional<double> w = ConvWork(*node, known)) work += *w, ++sized;
      }
      if (convs < 2 || (sized > 0 && work / sized < kMinGroupWork)) continue;
      if (!depthwise && !NhwcDenseConvsWin()) continue;
      for (const ir::Node* node : group) members[node] = candidates.at(node);
    }
    return members;
  }

  // The nodes `node` passes maps to or takes them from: the producers of its map inputs, the readers of
  // its output that read it as a map.
  static std::vector<const ir::Node*> Neighbours(const ir::Node& node) {
    std::vector<const ir::Node*> neighbours;
    for (int index : MapInputs(node)) {
      const ir::Value* value = node.input(index);
      if (value != nullptr && value->producer() != nullptr) neighbours.push_back(value->producer());
    }
    for (const ir::Use& use : node.output(0)->uses()) {
      const std::vector<int> maps = MapInputs(*use.node);
      if (std::find(maps.begin(), maps.end(), use.index) != maps.end()) neighbours.push_back(use.node);
    }
    return neighbours;
  }

  // `value` in NHWC, made before `reader` by a ToNhwc node on its first request.
  static ir::Value* NhwcCopy(ir::Graph& graph, ir::Value* value, ir::Node* reader,
                             absl::flat_hash_map<ir::Value*, ir::Value*>& nhwc_copy,
                             std::vector<std::string>& changes) {
    if (auto it = nhwc_copy.find(value); it != nhwc_copy.end()) return it->second;
    ir::Node* to_nhwc = graph.AddNode({.name = absl::StrCat(value->name(), "/onnxserve_to_nhwc"),
                                       .domain = std::string(kInternal),
                                       .op_type = "ToNhwc",
                                       .opset = 1,
                                       .inputs = {value},
                                       .attributes = {}},
                                      {graph.UniqueName(absl::StrCat(value->name(), "/onnxserve_nhwc"))});
    graph.MoveBefore(to_nhwc, reader);
    to_nhwc->output(0)->set_type(ir::Type::Tensor(DataType::kFloat));
    changes.push_back(absl::StrCat(to_nhwc->Label(), " changes \"", value->name(), "\" to NHWC"));
    return nhwc_copy[value] = to_nhwc->output(0);
  }

  // The readers of `node`'s output that do not take it in NHWC (non-members, or members reading it as a
  // parameter) read it through one FromNhwc node, placed before the first of them.
  static void ToNchwForOthers(ir::Graph& graph, ir::Node* node,
                              const absl::flat_hash_map<const ir::Node*, int64_t>& members,
                              const absl::flat_hash_map<const ir::Node*, int>& position,
                              std::vector<std::string>& changes) {
    ir::Value* nhwc = node->output(0);
    std::vector<ir::Use> others;
    for (const ir::Use& use : nhwc->uses()) {
      const std::vector<int> maps = MapInputs(*use.node);
      const bool as_map = std::find(maps.begin(), maps.end(), use.index) != maps.end();
      if (!(members.contains(use.node) && as_map)) others.push_back(use);
    }
    nhwc->set_type(ir::Type::Tensor(DataType::kFloat));
    if (others.empty()) return;
    ir::Node* from_nhwc = graph.AddNode({.name = absl::StrCat(nhwc->name(), "/onnxserve_from_nhwc"),
                                         .domain = std::string(kInternal),
                                         .op_type = "FromNhwc",
                                         .opset = 1,
                                         .inputs = {nhwc},
                                         .attributes = {}},
                                        {graph.UniqueName(absl::StrCat(nhwc->name(), "/onnxserve_nchw"))});
    const ir::Use first = *std::min_element(others.begin(), others.end(), [&](const ir::Use& a, const ir::Use& b) {
      return position.at(a.node) < position.at(b.node);
    });
    graph.MoveBefore(from_nhwc, first.node);
    for (const ir::Use& use : others) graph.SetInput(use.node, use.index, from_nhwc->output(0));
    changes.push_back(absl::StrCat(from_nhwc->Label(), " changes \"", nhwc->name(), "\" back to NCHW for ",
                                   others.size(), others.size() == 1 ? " reader" : " readers"));
  }
};

}  // namespace

std::unique_ptr<Pass> MakeChannelsLast() { return std::make_unique<ChannelsLast>(); }

}  // namespace onnxserve::passes
