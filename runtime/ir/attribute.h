// A node attribute, decoded from the model once when the graph is built. Graph-valued attributes are not
// here: they become subgraphs of the node (ir::Node::subgraphs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/core/tensor.h"
#include "runtime/ir/type.h"

namespace onnxserve::ir {

enum class AttributeType {
  kFloat, kInt, kString, kTensor, kGraph, kSparseTensor, kTypeProto,
  kFloats, kInts, kStrings, kTensors, kGraphs, kSparseTensors, kTypeProtos, kUndefined
};

// "INT", "FLOATS", ... as ONNX spells the attribute types (for error messages).
const char* AttributeTypeName(AttributeType type);

struct Attribute {
  std::string name;
  AttributeType type = AttributeType::kUndefined;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  // kTensor: the decoded value, or why it could not be decoded (reported when a kernel asks for it, so a
  // malformed attribute only fails the ops that read it).
  Tensor t;
  absl::Status t_status;
  // kTypeProto / kTypeProtos.
  std::vector<Type> types;
};

}  // namespace onnxserve::ir
