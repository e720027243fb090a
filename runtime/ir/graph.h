// The graph IR: what the runtime optimizes and executes, built once from the loaded model
// (runtime/ir/builder.h) so that nothing past loading reads protobuf. Values know their producer and
// their readers; nodes are kept in an order where every node comes after the producers of what it reads,
// and passes (runtime/passes/) keep that order as they rewrite.
//
// A node with subgraphs (If, Loop, Scan, ...) owns them. What a subgraph reads from enclosing graphs is,
// for the node, an implicit input: a use of the enclosing value like any other, so that liveness, dead-node
// elimination and fusion see it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "runtime/core/tensor.h"
#include "runtime/ir/attribute.h"
#include "runtime/ir/type.h"
#include "runtime/model/model.h"

namespace onnxserve::ir {

class Graph;
class Node;

// One reader of a value: `node`'s input `index`, or -1 when one of the node's subgraphs reads it.
struct Use {
  Node* node;
  int index;
  bool operator==(const Use&) const = default;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  const Type& type() const { return type_; }
  void set_type(Type type) { type_ = std::move(type); }
  // The node computing it, or nullptr for graph inputs, constants and values of enclosing graphs.
  Node* producer() const { return producer_; }
  const std::vector<Use>& uses() const { return uses_; }
  // Known when the graph is built or folded: initializers and what constant folding computed.
  const Tensor* constant() const { return constant_ ? &*constant_ : nullptr; }
  bool is_graph_input() const { return is_graph_input_; }
  bool is_graph_output() const { return graph_output_count_ > 0; }
  // Read from an enclosing graph (subgraphs only).
  bool is_outer_scope() const { return is_outer_scope_; }
  // Whether anything needs it: a reader or the graph's outputs.
  bool is_used() const { return !uses_.empty() || is_graph_output(); }

 private:
  friend class Graph;
  std::string name_;
  Type type_;
  Node* producer_ = nullptr;
  std::vector<Use> uses_;
  std::optional<Tensor> constant_;
  bool is_graph_input_ = false;
  bool is_outer_scope_ = false;
  int graph_output_count_ = 0;
  std::list<std::unique_ptr<Value>>::iterator place_;  // in its graph's values_, for removal in O(1)
};

class Node {
 public:
  const std::string& name() const { return name_; }
  const std::string& domain() const { return domain_; }  // canonical: "ai.onnx", "ai.onnx.ml", ...
  const std::string& op_type() const { return op_type_; }
  // The opset the node resolves its kernel through: the model's for its domain.
  int64_t opset() const { return opset_; }
  // The node's index in the model's graph, or -1 for nodes that passes created.
  int source_index() const { return source_index_; }
  // "node \"conv1\" (Conv)" or "node #3 (Conv)" for messages; with a version, "node \"conv1\" (Conv-11)".
  std::string Label(int since_version = 0) const;

  // Inputs and outputs in the node's order; nullptr where an optional one is omitted.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(int i) const { return i < static_cast<int>(inputs_.size()) ? inputs_[i] : nullptr; }
  Value* output(int i) const { return i < static_cast<int>(outputs_.size()) ? outputs_[i] : nullptr; }
  // Values of enclosing graphs that the node's subgraphs read.
  const std::vector<Value*>& implicit_inputs() const { return implicit_inputs_; }

  const std::vector<Attribute>& attributes() const { return attributes_; }
  const Attribute* FindAttribute(std::string_view name) const;
  // Adds or replaces an attribute.
  void SetAttribute(Attribute attribute);

  const std::vector<std::pair<std::string, std::unique_ptr<Graph>>>& subgraphs() const { return subgraphs_; }
  const Graph* Subgraph(std::string_view attribute) const;

 private:
  friend class Graph;
  std::string name_;
  std::string domain_;
  std::string op_type_;
  int64_t opset_ = 0;
  int source_index_ = -1;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Value*> implicit_inputs_;
  std::vector<Attribute> attributes_;
  std::vector<std::pair<std::string, std::unique_ptr<Graph>>> subgraphs_;
  std::list<std::unique_ptr<Node>>::iterator place_;  // in its graph's nodes_, to move or remove it in O(1)
  bool removed_ = false;  // out of the order, still linked in nodes_ until Graph::Compact
};

// What a new node is made of (Graph::AddNode).
struct NodeSpec {
  std::string name;
  std::string domain;
  std::string op_type;
  int64_t opset = 1;
  std::vector<Value*> inputs;
  std::vector<Attribute> attributes;
};

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  // Graph inputs (initializers excluded) and outputs as the model declares them.
  const std::vector<ValueInfo>& inputs() const { return input_infos_; }
  const std::vector<ValueInfo>& outputs() const { return output_infos_; }
  const std::vector<Value*>& input_values() const { return input_values_; }
  const std::vector<Value*>& output_values() const { return output_values_; }
  // Names this graph reads from enclosing graphs (including through its own subgraphs), sorted.
  const std::vector<std::string>& outer_scope_reads() const { return outer_scope_reads_; }

  // Nodes in execution order.
  std::vector<Node*> nodes() const;
  int num_nodes() const { return num_nodes_; }
  // The node after `node` in the order (the first for nullptr), or nullptr past the last. `node` may have
  // been removed since the last Compact: it still knows its place, so a scan can go on from a node that a
  // rewrite removed.
  Node* NextNode(const Node* node) const;
  // What comes just before `node` in nodes_, removed or not, or nullptr for the first: a place to go on
  // from with NextNode after a rewrite, found without walking back over every node removed before it.
  const Node* PlaceBefore(const Node* node) const;
  Value* FindValue(std::string_view name) const;
  // Every constant value (initializers and folded), in no particular order.
  std::vector<const Value*> constants() const;

  // --- Building and rewriting (the builder and passes) ---
  Value* AddInput(const ValueInfo& info, Type type);
  Value* AddOuterScopeValue(const std::string& name);
  // A constant named `name`, or a fresh name derived from it when that one is taken.
  Value* AddConstant(const std::string& name, Tensor value);
  // Makes a value constant (folding): it keeps its name and readers and loses its producer.
  void MakeConstant(Value* value, Tensor tensor);
  void AddOutput(Value* value, ValueInfo info);
  void SetOuterScopeReads(std::vector<std::string> names) { outer_scope_reads_ = std::move(names); }
  // Appends a node; its outputs are new values with the given names ("" for an omitted output).
  Node* AddNode(NodeSpec spec, const std::vector<std::string>& output_names, int source_index = -1);
  void AddSubgraph(Node* node, std::string attribute, std::unique_ptr<Graph> subgraph);
  void AddImplicitInput(Node* node, Value* value);
  void SetInput(Node* node, int index, Value* value);
  // Turns `node` into another op (a fused kernel taking its place), keeping inputs, outputs and attributes.
  void SetOp(Node* node, std::string domain, std::string op_type, int64_t opset);
  // Moves `from`'s output `from_index` to `to` as its output `to_index`: `to` now computes that value (with
  // all its readers), and `to`'s old output there, which must be unused, is gone. A `from` without that
  // output (a model may list none) leaves `to` without one.
  void TransferOutput(Node* from, int from_index, Node* to, int to_index);
  // Makes every reader of `value` (and the graph's outputs) read `replacement` instead.
  void ReplaceAllUses(Value* value, Value* replacement);
  // Moves `node` to just before `before` in the order (both in this graph).
  void MoveBefore(Node* node, Node* before);
  // Removes a node whose outputs nobody uses, and the values only it read or wrote, in time of its own
  // inputs and outputs: a pass rewriting a hostile model of a million nodes stays linear in it. The node
  // object lives on, out of the order, until Compact.
  void RemoveNode(Node* node);
  // Removes nodes whose outputs nobody but themselves uses, in time linear in the graph and the nodes'
  // inputs: removing them one by one would filter a value read by all of them once per node.
  void RemoveNodes(const absl::flat_hash_set<const Node*>& doomed);
  // Frees the nodes RemoveNode took out, and drops constants and other values without producer or readers
  // that are not graph inputs or outputs (what a rewrite leaves when it replaces an input). The pass runner
  // calls it after each pass.
  void Compact();
  // `base`, or a fresh name derived from it when a value of this graph has that one: what a pass names a new
  // value, so that no name of the model (which subgraphs read values by) comes to mean the pass's value.
  std::string UniqueName(const std::string& base) const;

 private:
  Value* NewValue(const std::string& name);
  static void EraseUse(Value* value, Use use);
  // Drops `value` when it has no producer or readers and is no graph input, output or outer-scope value.
  void RemoveIfUnused(Value* value);
  void DropUnusedCandidates();

  std::string name_;
  // Lists, so that a rewrite moves or removes a node or value without shifting every one after it.
  std::list<std::unique_ptr<Node>> nodes_;
  std::list<std::unique_ptr<Value>> values_;
  int num_nodes_ = 0;  // in the order: nodes_ less the removed ones
  // Values that lost a reader, their producer or an output place since the last removal: the ones that may
  // have become unused.
  absl::flat_hash_set<Value*> maybe_unused_;
  absl::flat_hash_map<std::string, Value*> by_name_;
  std::vector<ValueInfo> input_infos_;
  std::vector<ValueInfo> output_infos_;
  std::vector<Value*> input_values_;
  std::vector<Value*> output_values_;
  std::vector<std::string> outer_scope_reads_;
};

// Attribute constructors for passes that synthesize nodes.
Attribute IntAttribute(std::string name, int64_t value);
Attribute FloatAttribute(std::string name, float value);
Attribute IntsAttribute(std::string name, std::vector<int64_t> values);
Attribute StringAttribute(std::string name, std::string value);

}  // namespace onnxserve::ir
