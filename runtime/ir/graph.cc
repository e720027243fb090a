#include "runtime/ir/graph.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onnxserve::ir {

onnxserve::Value::Kind Type::value_kind() const {
  switch (kind) {
    case Kind::kTensor: return onnxserve::Value::Kind::kTensor;
    case Kind::kSequence: return onnxserve::Value::Kind::kSequence;
    case Kind::kMap: return onnxserve::Value::Kind::kMap;
    case Kind::kOptional: return onnxserve::Value::Kind::kOptional;
    default: return onnxserve::Value::Kind::kNone;
  }
}

std::string Type::DebugString() const {
  switch (kind) {
    case Kind::kTensor:
      return absl::StrCat(DataTypeName(elem), has_shape ? ShapeToString(dims) : "[?]");
    case Kind::kSparseTensor:
      return absl::StrCat("sparse(", DataTypeName(elem), ")");
    case Kind::kSequence:
      return absl::StrCat("seq(", inner ? inner->DebugString() : "?", ")");
    case Kind::kOptional:
      return absl::StrCat("optional(", inner ? inner->DebugString() : "?", ")");
    case Kind::kMap:
      return absl::StrCat("map(", DataTypeName(elem), ",", inner ? inner->DebugString() : "?", ")");
    case Kind::kUnknown:
      break;
  }
  return "?";
}

const char* AttributeTypeName(AttributeType type) {
  static constexpr const char* kNames[] = {"FLOAT",  "INT",    "STRING",  "TENSOR",  "GRAPH",
                                           "SPARSE_TENSOR", "TYPE_PROTO", "FLOATS", "INTS", "STRINGS",
                                           "TENSORS", "GRAPHS", "SPARSE_TENSORS", "TYPE_PROTOS", "UNDEFINED"};
  return kNames[static_cast<int>(type)];
}

Attribute IntAttribute(std::string name, int64_t value) {
  Attribute attr;
  attr.name = std::move(name);
  attr.type = AttributeType::kInt;
  attr.i = value;
  return attr;
}

Attribute FloatAttribute(std::string name, float value) {
  Attribute attr;
  attr.name = std::move(name);
  attr.type = AttributeType::kFloat;
  attr.f = value;
  return attr;
}

Attribute IntsAttribute(std::string name, std::vector<int64_t> values) {
  Attribute attr;
  attr.name = std::move(name);
  attr.type = AttributeType::kInts;
  attr.ints = std::move(values);
  return attr;
}

Attribute StringAttribute(std::string name, std::string value) {
  Attribute attr;
  attr.name = std::move(name);
  attr.type = AttributeType::kString;
  attr.s = std::move(value);
  return attr;
}

std::string Node::Label(int since_version) const {
  const std::string who = !name_.empty()       ? absl::StrCat("\"", name_, "\"")
                          : source_index_ >= 0 ? absl::StrCat("#", source_index_)
                                               : std::string("(fused)");
  return since_version > 0 ? absl::StrCat("node ", who, " (", op_type_, "-", since_version, ")")
                           : absl::StrCat("node ", who, " (", op_type_, ")");
}

const Attribute* Node::FindAttribute(std::string_view name) const {
  for (const Attribute& attr : attributes_) {
    if (attr.name == name) return &attr;
  }
  return nullptr;
}

void Node::SetAttribute(Attribute attribute) {
  for (Attribute& attr : attributes_) {
    if (attr.name == attribute.name) {
      attr = std::move(attribute);
      return;
    }
  }
  attributes_.push_back(std::move(attribute));
}

const Graph* Node::Subgraph(std::string_view attribute) const {
  for (const auto& [name, graph] : subgraphs_) {
    if (name == attribute) return graph.get();
  }
  return nullptr;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(num_nodes_);
  for (const auto& node : nodes_) {
    if (!node->removed_) out.push_back(node.get());
  }
  return out;
}

Node* Graph::NextNode(const Node* node) const {
  for (auto it = node == nullptr ? nodes_.begin() : std::next(node->place_); it != nodes_.end(); ++it) {
    if (!(*it)->removed_) return it->get();
  }
  return nullptr;
}

const Node* Graph::PlaceBefore(const Node* node) const {
  return node->place_ == nodes_.begin() ? nullptr : std::prev(node->place_)->get();
}

Value* Graph::FindValue(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const Value*> Graph::constants() const {
  std::vector<const Value*> out;
  for (const auto& value : values_) {
    if (value->constant() != nullptr) out.push_back(value.get());
  }
  return out;
}

Value* Graph::NewValue(const std::string& name) {
  values_.push_back(std::make_unique<Value>());
  Value* value = values_.back().get();
  value->place_ = std::prev(values_.end());
  value->name_ = name;
  by_name_[name] = value;
  return value;
}

std::string Graph::UniqueName(const std::string& base) const {
  if (!by_name_.contains(base)) return base;
  for (int k = 1;; ++k) {
    std::string candidate = absl::StrCat(base, "_", k);
    if (!by_name_.contains(candidate)) return candidate;
  }
}

Value* Graph::AddInput(const ValueInfo& info, Type type) {
  Value* value = NewValue(info.name);
  value->is_graph_input_ = true;
  value->type_ = std::move(type);
  input_infos_.push_back(info);
  input_values_.push_back(value);
  return value;
}

Value* Graph::AddOuterScopeValue(const std::string& name) {
  Value* value = NewValue(name);
  value->is_outer_scope_ = true;
  return value;
}

Value* Graph::AddConstant(const std::string& name, Tensor tensor) {
  Value* value = NewValue(UniqueName(name));
  value->type_ = Type::Tensor(tensor.dtype());
  value->constant_ = std::move(tensor);
  return value;
}

void Graph::MakeConstant(Value* value, Tensor tensor) {
  if (Node* producer = value->producer_) {
    for (Value*& out : producer->outputs_) {
      if (out == value) out = nullptr;
    }
  }
  value->producer_ = nullptr;
  value->type_ = Type::Tensor(tensor.dtype());
  value->constant_ = std::move(tensor);
}

void Graph::AddOutput(Value* value, ValueInfo info) {
  ++value->graph_output_count_;
  output_values_.push_back(value);
  output_infos_.push_back(std::move(info));
}

Node* Graph::AddNode(NodeSpec spec, const std::vector<std::string>& output_names, int source_index) {
  nodes_.push_back(std::make_unique<Node>());
  Node* node = nodes_.back().get();
  node->place_ = std::prev(nodes_.end());
  ++num_nodes_;
  node->name_ = std::move(spec.name);
  node->domain_ = CanonicalDomain(spec.domain);
  node->op_type_ = std::move(spec.op_type);
  node->opset_ = spec.opset;
  node->source_index_ = source_index;
  node->attributes_ = std::move(spec.attributes);
  node->inputs_.resize(spec.inputs.size(), nullptr);
  for (size_t i = 0; i < spec.inputs.size(); ++i) SetInput(node, static_cast<int>(i), spec.inputs[i]);
  for (const std::string& name : output_names) {
    Value* value = name.empty() ? nullptr : NewValue(name);
    if (value != nullptr) value->producer_ = node;
    node->outputs_.push_back(value);
  }
  return node;
}

void Graph::AddSubgraph(Node* node, std::string attribute, std::unique_ptr<Graph> subgraph) {
  node->subgraphs_.push_back({std::move(attribute), std::move(subgraph)});
}

void Graph::AddImplicitInput(Node* node, Value* value) {
  if (std::find(node->implicit_inputs_.begin(), node->implicit_inputs_.end(), value) !=
      node->implicit_inputs_.end()) {
    return;
  }
  node->implicit_inputs_.push_back(value);
  value->uses_.push_back({node, -1});
}

void Graph::EraseUse(Value* value, Use use) {
  auto it = std::find(value->uses_.begin(), value->uses_.end(), use);
  if (it != value->uses_.end()) value->uses_.erase(it);
}

void Graph::SetInput(Node* node, int index, Value* value) {
  if (index >= static_cast<int>(node->inputs_.size())) node->inputs_.resize(index + 1, nullptr);
  if (Value* old = node->inputs_[index]) {
    EraseUse(old, {node, index});
    maybe_unused_.insert(old);
  }
  node->inputs_[index] = value;
  if (value != nullptr) value->uses_.push_back({node, index});
}

void Graph::SetOp(Node* node, std::string domain, std::string op_type, int64_t opset) {
  node->domain_ = CanonicalDomain(domain);
  node->op_type_ = std::move(op_type);
  node->opset_ = opset;
}

void Graph::TransferOutput(Node* from, int from_index, Node* to, int to_index) {
  // A model may list fewer outputs for a node than it has (a MatMul with none): then `to` gets none either.
  Value* value = from->output(from_index);
  if (to_index >= static_cast<int>(to->outputs_.size())) to->outputs_.resize(to_index + 1, nullptr);
  if (Value* old = to->outputs_[to_index]) {
    old->producer_ = nullptr;
    maybe_unused_.insert(old);
  }
  if (value != nullptr) from->outputs_[from_index] = nullptr;
  to->outputs_[to_index] = value;
  if (value != nullptr) value->producer_ = to;
}

void Graph::ReplaceAllUses(Value* value, Value* replacement) {
  maybe_unused_.insert(value);
  const std::vector<Use> uses = value->uses_;
  for (const Use& use : uses) {
    if (use.index >= 0) SetInput(use.node, use.index, replacement);
  }
  for (size_t o = 0; o < output_values_.size(); ++o) {
    if (output_values_[o] != value) continue;
    output_values_[o] = replacement;
    --value->graph_output_count_;
    ++replacement->graph_output_count_;
  }
}

void Graph::MoveBefore(Node* node, Node* before) {
  nodes_.splice(before->place_, nodes_, node->place_);
}

void Graph::RemoveNode(Node* node) {
  std::vector<Value*> touched;
  for (size_t i = 0; i < node->inputs_.size(); ++i) {
    if (node->inputs_[i] == nullptr) continue;
    EraseUse(node->inputs_[i], {node, static_cast<int>(i)});
    touched.push_back(node->inputs_[i]);
  }
  for (Value* value : node->implicit_inputs_) {
    EraseUse(value, {node, -1});
    touched.push_back(value);
  }
  for (Value* value : node->outputs_) {
    if (value == nullptr) continue;
    value->producer_ = nullptr;
    touched.push_back(value);
  }
  node->removed_ = true;
  --num_nodes_;
  maybe_unused_.insert(touched.begin(), touched.end());
  DropUnusedCandidates();
}

// What the old whole-graph sweep after each removal dropped, found without it: only a value that lost an
// edge since the last sweep can have become unused. Dropped now, not when the pass ends, so that the weights
// a fusion replaces (a BatchNormalization folded into W) go as it goes: all of a ResNet's at once were
// 97 MB more at the peak of a load.
void Graph::DropUnusedCandidates() {
  absl::flat_hash_set<Value*> candidates;
  candidates.swap(maybe_unused_);
  for (Value* value : candidates) RemoveIfUnused(value);
}

void Graph::RemoveNodes(const absl::flat_hash_set<const Node*>& doomed) {
  absl::flat_hash_set<Value*> touched;
  for (const auto& node : nodes_) {
    if (node->removed_ || !doomed.contains(node.get())) continue;
    for (Value* value : node->inputs_) {
      if (value != nullptr) touched.insert(value);
    }
    touched.insert(node->implicit_inputs_.begin(), node->implicit_inputs_.end());
    for (Value* value : node->outputs_) {
      if (value == nullptr) continue;
      value->producer_ = nullptr;
      touched.insert(value);
    }
  }
  // Each value's uses filtered once: a value read by many doomed nodes costs its uses, not their square.
  for (Value* value : touched) {
    std::erase_if(value->uses_, [&](const Use& use) { return doomed.contains(use.node); });
  }
  // A node RemoveNode already took out stays for Compact: it is no longer counted.
  num_nodes_ -= static_cast<int>(std::erase_if(nodes_, [&](const std::unique_ptr<Node>& node) {
    return !node->removed_ && doomed.contains(node.get());
  }));
  maybe_unused_.insert(touched.begin(), touched.end());
  DropUnusedCandidates();
}

void Graph::Compact() {
  std::erase_if(nodes_, [](const std::unique_ptr<Node>& node) { return node->removed_; });
  for (auto it = values_.begin(); it != values_.end();) {
    Value* value = (it++)->get();  // advanced first: RemoveIfUnused may erase the value it pointed at
    RemoveIfUnused(value);
  }
}

void Graph::RemoveIfUnused(Value* value) {
  if (value->producer_ != nullptr || value->is_used() || value->is_graph_input_ || value->is_outer_scope_) return;
  // A model may give two values one name; the table then names the later one, which stays findable.
  auto named = by_name_.find(value->name_);
  if (named != by_name_.end() && named->second == value) by_name_.erase(named);
  maybe_unused_.erase(value);
  values_.erase(value->place_);
}

}  // namespace onnxserve::ir
