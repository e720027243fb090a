// Small models the server-side fuzz targets run against, built in code so the targets need no files.
#pragma once

#include <memory>
#include <string>

#include "onnx/onnx_pb.h"
#include "runtime/exec/session.h"

namespace onnxserve::fuzz {

// One Identity per input, over a dynamic batch dimension N: x FP32 [N,4], s BYTES [N], i INT64 [N,3],
// h FP16 [N,2], b BOOL [N,1] -> x_out, s_out, i_out, h_out, b_out. Every KServe payload form is reachable.
inline onnx::ModelProto MixedModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(14);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("mixed");
  struct Io {
    const char* name;
    onnx::TensorProto::DataType type;
    int dims[2];  // 0 ends
  };
  const Io ios[] = {{"x", onnx::TensorProto::FLOAT, {4, 0}},  {"s", onnx::TensorProto::STRING, {0, 0}},
                    {"i", onnx::TensorProto::INT64, {3, 0}},  {"h", onnx::TensorProto::FLOAT16, {2, 0}},
                    {"b", onnx::TensorProto::BOOL, {1, 0}}};
  auto declare = [](onnx::ValueInfoProto* info, const std::string& name, const Io& io) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(io.type);
    tensor->mutable_shape()->add_dim()->set_dim_param("N");
    for (int d : io.dims) {
      if (d == 0) break;
      tensor->mutable_shape()->add_dim()->set_dim_value(d);
    }
  };
  for (const Io& io : ios) {
    declare(graph.add_input(), io.name, io);
    declare(graph.add_output(), std::string(io.name) + "_out", io);
    onnx::NodeProto* node = graph.add_node();
    node->set_op_type("Identity");
    node->add_input(io.name);
    node->add_output(std::string(io.name) + "_out");
  }
  return model;
}

inline std::unique_ptr<Session> MixedSession() {
  auto model = Model::FromProto(MixedModel(), "");
  if (!model.ok()) return nullptr;
  auto session = Session::Create(*std::move(model));
  return session.ok() ? *std::move(session) : nullptr;
}

}  // namespace onnxserve::fuzz
