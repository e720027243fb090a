#include "runtime/model/model.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/exception_status.h"
#include "runtime/core/status_macros.h"
#include "runtime/model/tensor_proto.h"

namespace onnxserve {
namespace {

constexpr char kNotAModel[] = "not a valid ONNX ModelProto (protobuf parse failed)";

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? absl::StrCat("#", index, " (", node.op_type(), ")")
                             : absl::StrCat("\"", node.name(), "\" (", node.op_type(), ")");
}

ValueInfo ReadValueInfo(const onnx::ValueInfoProto& proto) {
  ValueInfo info;
  info.name = proto.name();
  if (!proto.type().has_tensor_type()) {
    info.is_tensor = false;
    return info;
  }
  const auto& tensor_type = proto.type().tensor_type();
  auto dtype = DataTypeFromOnnx(tensor_type.elem_type());
  if (dtype.ok()) info.dtype = *dtype;
  if (tensor_type.has_shape()) {
    info.has_shape = true;
    for (const auto& dim : tensor_type.shape().dim()) {
      info.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      info.dim_names.push_back(dim.has_dim_param() ? dim.dim_param() : "");
    }
  }
  return info;
}

// Names a node reads: its inputs and, for nodes with subgraphs, what those read from outside.
std::vector<std::string> NodeReads(const onnx::NodeProto& node, const std::vector<const Graph*>& subgraphs) {
  std::vector<std::string> reads;
  for (const auto& in : node.input()) {
    if (!in.empty()) reads.push_back(in);
  }
  for (const Graph* g : subgraphs) {
    for (const auto& name : g->outer_scope_reads()) reads.push_back(name);
  }
  return reads;
}

// Once decoded, an initializer's payload in the proto is never read again; keeping it would hold every weight
// twice for the model's lifetime. Move-assigning a header-only TensorProto frees the old fields outright
// (clear_*() would keep their capacity).
void DropInitializerPayloads(onnx::GraphProto& graph) {
  for (auto& init : *graph.mutable_initializer()) {
    onnx::TensorProto header;
    header.set_name(init.name());
    header.set_data_type(init.data_type());
    *header.mutable_dims() = init.dims();
    init = std::move(header);
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) DropInitializerPayloads(*attr.mutable_g());
      for (auto& subgraph : *attr.mutable_graphs()) DropInitializerPayloads(subgraph);
    }
  }
}

}  // namespace

std::string CanonicalDomain(std::string_view domain) {
  return domain.empty() || domain == "ai.onnx" ? std::string(kOnnxDomain) : std::string(domain);
}

std::string ValueInfo::DebugString() const {
  if (!is_tensor) return "non-tensor";
  return absl::StrCat(DataTypeName(dtype), has_shape ? ShapeToString(dims) : "[?]");
}

absl::StatusOr<std::unique_ptr<Graph>> Graph::Build(const onnx::GraphProto& proto,
                                                    const std::string& model_dir,
                                                    const std::set<std::string>& outer_scope) {
  std::unique_ptr<Graph> graph(new Graph);
  graph->proto_ = &proto;
  RETURN_IF_ERROR(graph->ReadValueInfos(model_dir));
  RETURN_IF_ERROR(graph->CheckNodesAndOrder(outer_scope, model_dir));
  return graph;
}

absl::Status Graph::ReadValueInfos(const std::string& model_dir) {
  if (proto_->sparse_initializer_size() > 0) {
    return absl::UnimplementedError(absl::StrCat("graph \"", name(), "\": sparse initializers (\"",
                                                 proto_->sparse_initializer(0).values().name(),
                                                 "\") are not supported"));
  }
  for (const auto& init : proto_->initializer()) {
    if (init.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("graph \"", name(), "\": initializer without a name"));
    }
    auto tensor = TensorFromProto(init, model_dir);
    if (!tensor.ok()) {
      return absl::Status(tensor.status().code(),
                          absl::StrCat("initializer \"", init.name(), "\": ", tensor.status().message()));
    }
    if (!initializers_.emplace(init.name(), *std::move(tensor)).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate initializer \"", init.name(), "\""));
    }
  }
  std::set<std::string> seen;
  for (const auto& in : proto_->input()) {
    if (!seen.insert(in.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate graph input \"", in.name(), "\""));
    }
    if (!initializers_.contains(in.name())) inputs_.push_back(ReadValueInfo(in));
  }
  for (const auto& out : proto_->output()) outputs_.push_back(ReadValueInfo(out));
  return absl::OkStatus();
}

absl::Status Graph::CheckNodesAndOrder(const std::set<std::string>& outer_scope,
                                       const std::string& model_dir) {
  const int num_nodes = proto_->node_size();
  // Every name defined in this graph, and which node produces it (-1 for inputs and initializers).
  std::map<std::string, int> producer;
  for (const auto& in : proto_->input()) producer[in.name()] = -1;
  for (const auto& [name, tensor] : initializers_) producer[name] = -1;
  for (int i = 0; i < num_nodes; ++i) {
    const auto& node = proto_->node(i);
    for (const auto& out : node.output()) {
      if (out.empty()) continue;
      if (!producer.emplace(out, i).second) {
        return absl::InvalidArgumentError(absl::StrCat("node ", NodeLabel(node, i), ": output \"", out,
                                                       "\" is already defined in graph \"", name(), "\""));
      }
    }
  }

  std::set<std::string> visible = outer_scope;
  for (const auto& [name, index] : producer) visible.insert(name);

  std::set<std::string> outer_reads;
  std::vector<std::vector<int>> consumers(num_nodes);
  std::vector<int> pending(num_nodes, 0);
  for (int i = 0; i < num_nodes; ++i) {
    const auto& node = proto_->node(i);
    std::vector<const Graph*> node_subgraphs;
    std::set<std::string_view> attribute_names;
    for (const auto& attr : node.attribute()) {
      // Attributes are looked up by name, and a second subgraph of the same name would replace (and free)
      // the first one while node_subgraphs still points to it.
      if (!attribute_names.insert(attr.name()).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("node ", NodeLabel(node, i), ": attribute \"", attr.name(), "\" appears twice"));
      }
      std::vector<const onnx::GraphProto*> bodies;
      if (attr.has_g()) bodies.push_back(&attr.g());
      for (const auto& g : attr.graphs()) bodies.push_back(&g);
      for (const auto* body : bodies) {
        auto sub = Graph::Build(*body, model_dir, visible);
        if (!sub.ok()) {
          return absl::Status(sub.status().code(), absl::StrCat("node ", NodeLabel(node, i), " attribute \"",
                                                                attr.name(), "\": ", sub.status().message()));
        }
        node_subgraphs.push_back(sub->get());
        subgraphs_[{i, attr.name()}] = *std::move(sub);
      }
    }
    std::set<int> deps;
    for (const auto& in : NodeReads(node, node_subgraphs)) {
      auto it = producer.find(in);
      if (it == producer.end()) {
        if (!outer_scope.contains(in)) {
          return absl::InvalidArgumentError(absl::StrCat("node ", NodeLabel(node, i), ": input \"", in,
                                                         "\" is not defined in graph \"", name(), "\""));
        }
        outer_reads.insert(in);
      } else if (it->second >= 0 && deps.insert(it->second).second) {
        consumers[it->second].push_back(i);
        ++pending[i];
      }
    }
  }

  // Kahn's algorithm, preferring the file's order among ready nodes for stable plans.
  std::set<int> ready;
  for (int i = 0; i < num_nodes; ++i) {
    if (pending[i] == 0) ready.insert(i);
  }
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order_.push_back(i);
    for (int c : consumers[i]) {
      if (--pending[c] == 0) ready.insert(c);
    }
  }
  if (static_cast<int>(order_.size()) != num_nodes) {
    std::vector<std::string> stuck;
    for (int i = 0; i < num_nodes && stuck.size() < 5; ++i) {
      if (pending[i] > 0) stuck.push_back(NodeLabel(proto_->node(i), i));
    }
    return absl::InvalidArgumentError(absl::StrCat("graph \"", name(), "\" has a cycle through node(s) ",
                                                   absl::StrJoin(stuck, ", ")));
  }

  for (const auto& out : outputs_) {
    if (!producer.contains(out.name)) {
      if (!outer_scope.contains(out.name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph \"", name(), "\": output \"", out.name, "\" is not produced by any node"));
      }
      outer_reads.insert(out.name);
    }
  }
  outer_reads_.assign(outer_reads.begin(), outer_reads.end());
  return absl::OkStatus();
}

const Graph* Graph::Subgraph(int node_index, const std::string& attr) const {
  auto it = subgraphs_.find({node_index, attr});
  return it == subgraphs_.end() ? nullptr : it->second.get();
}

absl::StatusOr<std::shared_ptr<const Model>> Model::LoadFromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open model file ", path));
  // Parsed straight from the stream: a copy of the file's bytes in memory would raise the peak of a load
  // by the model's size.
  onnx::ModelProto proto;
  if (!proto.ParseFromIstream(&in)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", kNotAModel));
  }
  const std::string dir = std::filesystem::absolute(path).parent_path().string();
  auto model = FromProto(std::move(proto), dir);
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  }
  return model;
}

absl::StatusOr<std::shared_ptr<const Model>> Model::LoadFromBytes(std::string_view bytes,
                                                                  const std::string& model_dir) {
  onnx::ModelProto proto;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(kNotAModel);
  }
  return FromProto(std::move(proto), model_dir);
}

absl::StatusOr<std::shared_ptr<const Model>> Model::FromProto(onnx::ModelProto proto,
                                                              const std::string& model_dir) {
  std::shared_ptr<Model> model(new Model);
  model->proto_ = std::move(proto);
  if (!model->proto_.has_graph()) return absl::InvalidArgumentError("model has no graph");
  if (model->proto_.ir_version() < 3 && model->proto_.opset_import_size() == 0) {
    // IR versions before 3 had no opset_import; they mean ai.onnx opset 1.
    model->opsets_[std::string(kOnnxDomain)] = 1;
  }
  for (const auto& opset : model->proto_.opset_import()) {
    if (opset.version() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("opset_import for domain \"", opset.domain(), "\" has version ", opset.version()));
    }
    model->opsets_[CanonicalDomain(opset.domain())] = opset.version();
  }
  // Decoding initializers allocates what the model declares and parses external data offsets; whatever
  // throws there fails the load instead of the process.
  ASSIGN_OR_RETURN(model->graph_,
                   CatchExceptions([&] { return Graph::Build(model->proto_.graph(), model_dir, {}); }));
  DropInitializerPayloads(*model->proto_.mutable_graph());
  return std::shared_ptr<const Model>(std::move(model));
}

int64_t Model::OpsetFor(std::string_view domain) const {
  auto it = opsets_.find(CanonicalDomain(domain));
  return it == opsets_.end() ? 0 : it->second;
}

}  // namespace onnxserve
