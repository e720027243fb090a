#include "runtime/ir/builder.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/core/exception_status.h"
#include "runtime/core/status_macros.h"
#include "runtime/model/tensor_proto.h"

namespace onnxserve::ir {
namespace {

DataType ElementType(int32_t onnx_type) {
  auto type = DataTypeFromOnnx(onnx_type);
  return type.ok() ? *type : DataType::kUndefined;
}

// The declared types of the graph's values: inputs, outputs and value_info.
absl::flat_hash_map<std::string, Type> DeclaredTypes(const onnx::GraphProto& proto) {
  absl::flat_hash_map<std::string, Type> types;
  for (const auto* list : {&proto.input(), &proto.output(), &proto.value_info()}) {
    for (const auto& info : *list) {
      if (info.has_type()) types[info.name()] = TypeFromProto(info.type());
    }
  }
  return types;
}

class Builder {
 public:
  explicit Builder(const Model& model) : model_(model) {}

  absl::StatusOr<std::unique_ptr<Graph>> Build(const onnxserve::Graph& source) {
    const onnx::GraphProto& proto = source.proto();
    auto graph = std::make_unique<Graph>(proto.name());
    const auto types = DeclaredTypes(proto);
    auto declared = [&](const std::string& name) {
      auto it = types.find(name);
      return it == types.end() ? Type{} : it->second;
    };
    for (const std::string& name : source.outer_scope_reads()) graph->AddOuterScopeValue(name);
    for (const auto& [name, tensor] : source.initializers()) graph->AddConstant(name, tensor);
    for (const ValueInfo& info : source.inputs()) graph->AddInput(info, declared(info.name));
    for (int index : source.topological_order()) {
      RETURN_IF_ERROR(AddNode(source, index, *graph));
    }
    for (const ValueInfo& info : source.outputs()) {
      ASSIGN_OR_RETURN(Value * value, Find(*graph, info.name));
      graph->AddOutput(value, info);
    }
    for (Node* node : graph->nodes()) {
      for (Value* out : node->outputs()) {
        if (out != nullptr) out->set_type(declared(out->name()));
      }
    }
    graph->SetOuterScopeReads(source.outer_scope_reads());
    return graph;
  }

 private:
  absl::Status AddNode(const onnxserve::Graph& source, int index, Graph& graph) {
    const onnx::NodeProto& proto = source.proto().node(index);
    NodeSpec spec{proto.name(), proto.domain(), proto.op_type(), model_.OpsetFor(proto.domain()), {}, {}};
    for (const std::string& name : proto.input()) {
      Value* value = nullptr;
      if (!name.empty()) {
        ASSIGN_OR_RETURN(value, Find(graph, name));
      }
      spec.inputs.push_back(value);
    }
    for (const auto& attr : proto.attribute()) {
      if (attr.type() != onnx::AttributeProto::GRAPH) spec.attributes.push_back(AttributeFromProto(attr));
    }
    std::vector<std::string> outputs(proto.output().begin(), proto.output().end());
    Node* node = graph.AddNode(std::move(spec), outputs, index);
    for (const auto& attr : proto.attribute()) {
      const onnxserve::Graph* body = source.Subgraph(index, attr.name());
      if (body == nullptr) continue;
      ASSIGN_OR_RETURN(std::unique_ptr<Graph> subgraph, Build(*body));
      for (const std::string& name : subgraph->outer_scope_reads()) {
        ASSIGN_OR_RETURN(Value * value, Find(graph, name));
        graph.AddImplicitInput(node, value);
      }
      graph.AddSubgraph(node, attr.name(), std::move(subgraph));
    }
    return absl::OkStatus();
  }

  // The model's graph was validated, so every name resolves; this guards the builder's own bookkeeping.
  static absl::StatusOr<Value*> Find(const Graph& graph, const std::string& name) {
    Value* value = graph.FindValue(name);
    if (value == nullptr) {
      return absl::InternalError(absl::StrCat("graph \"", graph.name(), "\": no value \"", name, "\""));
    }
    return value;
  }

  const Model& model_;
};

}  // namespace

Type TypeFromProto(const onnx::TypeProto& proto) {
  switch (proto.value_case()) {
    case onnx::TypeProto::kTensorType: {
      Type type = Type::Tensor(ElementType(proto.tensor_type().elem_type()));
      if (proto.tensor_type().has_shape()) {
        type.has_shape = true;
        for (const auto& dim : proto.tensor_type().shape().dim()) {
          type.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
        }
      }
      return type;
    }
    case onnx::TypeProto::kSparseTensorType:
      return Type{Type::Kind::kSparseTensor, ElementType(proto.sparse_tensor_type().elem_type()), false, {}, nullptr};
    case onnx::TypeProto::kSequenceType:
      return Type::Of(Type::Kind::kSequence, TypeFromProto(proto.sequence_type().elem_type()));
    case onnx::TypeProto::kOptionalType:
      return Type::Of(Type::Kind::kOptional, TypeFromProto(proto.optional_type().elem_type()));
    case onnx::TypeProto::kMapType: {
      Type type = Type::Of(Type::Kind::kMap, TypeFromProto(proto.map_type().value_type()));
      type.elem = ElementType(proto.map_type().key_type());
      return type;
    }
    default:
      return Type{};
  }
}

Attribute AttributeFromProto(const onnx::AttributeProto& proto) {
  Attribute attr;
  attr.name = proto.name();
  switch (proto.type()) {
    case onnx::AttributeProto::FLOAT: attr.type = AttributeType::kFloat; break;
    case onnx::AttributeProto::INT: attr.type = AttributeType::kInt; break;
    case onnx::AttributeProto::STRING: attr.type = AttributeType::kString; break;
    case onnx::AttributeProto::TENSOR: attr.type = AttributeType::kTensor; break;
    case onnx::AttributeProto::GRAPH: attr.type = AttributeType::kGraph; break;
    case onnx::AttributeProto::SPARSE_TENSOR: attr.type = AttributeType::kSparseTensor; break;
    case onnx::AttributeProto::TYPE_PROTO: attr.type = AttributeType::kTypeProto; break;
    case onnx::AttributeProto::FLOATS: attr.type = AttributeType::kFloats; break;
    case onnx::AttributeProto::INTS: attr.type = AttributeType::kInts; break;
    case onnx::AttributeProto::STRINGS: attr.type = AttributeType::kStrings; break;
    case onnx::AttributeProto::TENSORS: attr.type = AttributeType::kTensors; break;
    case onnx::AttributeProto::GRAPHS: attr.type = AttributeType::kGraphs; break;
    case onnx::AttributeProto::SPARSE_TENSORS: attr.type = AttributeType::kSparseTensors; break;
    case onnx::AttributeProto::TYPE_PROTOS: attr.type = AttributeType::kTypeProtos; break;
    default: attr.type = AttributeType::kUndefined; break;
  }
  attr.i = proto.i();
  attr.f = proto.f();
  attr.s = proto.s();
  attr.ints.assign(proto.ints().begin(), proto.ints().end());
  attr.floats.assign(proto.floats().begin(), proto.floats().end());
  attr.strings.assign(proto.strings().begin(), proto.strings().end());
  if (attr.type == AttributeType::kTensor) {
    // Decoding allocates what the attribute declares; a failure is kept for the kernel that reads it.
    absl::StatusOr<Tensor> tensor = CatchExceptions([&] { return TensorFromProto(proto.t()); });
    if (tensor.ok()) {
      attr.t = *std::move(tensor);
    } else {
      attr.t_status = tensor.status();
    }
  }
  if (proto.has_tp()) attr.types.push_back(TypeFromProto(proto.tp()));
  for (const auto& tp : proto.type_protos()) attr.types.push_back(TypeFromProto(tp));
  return attr;
}

absl::StatusOr<std::unique_ptr<Graph>> BuildGraph(const Model& model) {
  return Builder(model).Build(model.graph());
}

Node* AddNodeFromProto(Graph& graph, const onnx::NodeProto& proto, int64_t opset) {
  NodeSpec spec{proto.name(), proto.domain(), proto.op_type(), opset, {}, {}};
  for (const std::string& name : proto.input()) {
    Value* value = name.empty() ? nullptr : graph.FindValue(name);
    if (value == nullptr && !name.empty()) {
      ValueInfo info;
      info.name = name;
      value = graph.AddInput(info, Type{});
    }
    spec.inputs.push_back(value);
  }
  for (const auto& attr : proto.attribute()) spec.attributes.push_back(AttributeFromProto(attr));
  return graph.AddNode(std::move(spec), {proto.output().begin(), proto.output().end()});
}

}  // namespace onnxserve::ir
