// An ONNX model as onnxserve reads it: the ModelProto, its opset imports, and a validated Graph (with its
// subgraphs) whose initializers are decoded into shared read-only tensors.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "runtime/core/tensor.h"

namespace onnxserve {

inline constexpr std::string_view kOnnxDomain = "ai.onnx";
inline constexpr std::string_view kMlDomain = "ai.onnx.ml";
inline constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";
// Experimental ops, unversioned in the spec (FlexAttention).
inline constexpr std::string_view kPreviewDomain = "ai.onnx.preview";
// onnxserve's own fused kernels, which only the graph passes (runtime/passes/) emit.
inline constexpr std::string_view kInternalDomain = "ai.onnxserve";

// "" and "ai.onnx" name the same domain; onnxserve uses "ai.onnx" everywhere.
std::string CanonicalDomain(std::string_view domain);

// A graph input or output as declared. `dtype` is kUndefined when the declaration has no tensor type
// (sequences, maps, optionals) or leaves the element type unset; dims are -1 where dynamic or unknown.
struct ValueInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  bool is_tensor = true;
  bool has_shape = false;
  Shape dims;
  std::vector<std::string> dim_names;  // dim_param per dim, "" where fixed or anonymous

  std::string DebugString() const;  // "float[-1,3,224,224]"
};

class Graph {
 public:
  // Validates `proto` and decodes its initializers. `outer_scope` holds the names visible from enclosing
  // graphs (for subgraphs of If/Loop/Scan). `proto` must outlive the Graph.
  static absl::StatusOr<std::unique_ptr<Graph>> Build(const onnx::GraphProto& proto,
                                                      const std::string& model_dir,
                                                      const std::set<std::string>& outer_scope);

  const onnx::GraphProto& proto() const { return *proto_; }
  const std::string& name() const { return proto_->name(); }
  // Graph inputs that are not initializers, in declaration order.
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  const absl::flat_hash_map<std::string, Tensor>& initializers() const { return initializers_; }
  // Node indices in an order where every node comes after the producers of its inputs.
  const std::vector<int>& topological_order() const { return order_; }
  // Names this graph reads from enclosing graphs (including through its own subgraphs), sorted.
  const std::vector<std::string>& outer_scope_reads() const { return outer_reads_; }
  // The graph-valued attribute `attr` of node `node_index`, or nullptr.
  const Graph* Subgraph(int node_index, const std::string& attr) const;

 private:
  Graph() = default;
  absl::Status ReadValueInfos(const std::string& model_dir);
  absl::Status CheckNodesAndOrder(const std::set<std::string>& outer_scope, const std::string& model_dir);

  const onnx::GraphProto* proto_ = nullptr;
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
  absl::flat_hash_map<std::string, Tensor> initializers_;
  std::vector<int> order_;
  std::vector<std::string> outer_reads_;
  std::map<std::pair<int, std::string>, std::unique_ptr<Graph>> subgraphs_;
};

class Model {
 public:
  static absl::StatusOr<std::shared_ptr<const Model>> LoadFromFile(const std::string& path);
  // `model_dir` is where external data lives; empty forbids external data.
  static absl::StatusOr<std::shared_ptr<const Model>> LoadFromBytes(std::string_view bytes,
                                                                    const std::string& model_dir);
  static absl::StatusOr<std::shared_ptr<const Model>> FromProto(onnx::ModelProto proto,
                                                                const std::string& model_dir);

  // The proto as loaded, except that initializers keep only name, type and dims: their values live in
  // graph().initializers() (and its subgraphs').
  const onnx::ModelProto& proto() const { return proto_; }
  int64_t ir_version() const { return proto_.ir_version(); }
  // Opset version imported for a domain ("" and "ai.onnx" alike), or 0 when the model imports none.
  int64_t OpsetFor(std::string_view domain) const;
  const std::map<std::string, int64_t>& opsets() const { return opsets_; }
  const Graph& graph() const { return *graph_; }

 private:
  Model() = default;

  onnx::ModelProto proto_;
  std::map<std::string, int64_t> opsets_;
  std::unique_ptr<Graph> graph_;
};

}  // namespace onnxserve
