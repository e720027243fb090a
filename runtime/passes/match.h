// Pattern matching helpers that passes share: which op a node is, what constant a value holds, who reads
// a value.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/ir/graph.h"

namespace onnxserve::passes {

// Whether `node` is the ai.onnx op `op_type`.
bool IsOp(const ir::Node* node, std::string_view op_type);

// The value's single element as a double, when it is a constant float/double tensor of one element and of
// rank at most `max_rank`. An operand of one element still broadcasts: of rank 5 it makes x [4] a
// [1,1,1,1,4], so a pattern that drops it must know the other operand has at least its rank.
std::optional<double> ScalarConstant(const ir::Value* value, int64_t max_rank);

// Whether `value` is read by exactly `readers` node inputs and by nothing else (no graph output, no
// subgraph): a value the pattern may fold away.
bool OnlyReadBy(const ir::Value* value, int readers);

// The one node reading `value`, when OnlyReadBy(value, 1), else nullptr.
ir::Node* SoleReader(const ir::Value* value);

// The input of the two-input `node` that is not `known`, or nullptr when neither or both are.
ir::Value* OtherInput(const ir::Node* node, const ir::Value* known);

// The reduction axes of a ReduceMean node (attribute before opset 18, constant input from 18), or nullopt
// when they are not known at load; keepdims must be 1.
std::optional<std::vector<int64_t>> KeptReduceAxes(const ir::Node* node);

// Replaces `chain` (nodes in order, the last computing the result) by one node made from `spec`, which
// takes the last node's place and its output 0. Returns the new node.
ir::Node* ReplaceChain(ir::Graph& graph, const std::vector<ir::Node*>& chain, ir::NodeSpec spec);

// What a fused node's `activation` and `activation_params` attributes say (runtime/ops/fused_activation.h).
struct ActivationAttributes {
  std::string name;  // the ONNX op absorbed
  std::vector<float> params;
};

// The activation a FusedConv or FusedGemm can absorb from `node`: a float activation op of ai.onnx whose
// parameters are known at load (Clip's bounds constant, when inputs), or nullopt.
std::optional<ActivationAttributes> FusibleActivation(const ir::Node* node);

// Whether `node` (a fused node) already applies an activation: nothing fuses after it.
bool HasActivation(const ir::Node* node);
void SetActivation(ir::Node* node, const ActivationAttributes& activation);

// `producer` takes over `reader`'s output 0 and its place in the order (so every value it reads comes
// before it), becoming the op `fused_op` of ai.onnxserve if it is not yet; `reader` goes. Reports it.
void AbsorbReader(ir::Graph& graph, ir::Node* producer, ir::Node* reader, std::string_view fused_op,
                  std::vector<std::string>& changes);

// Calls `rewrite_one` on each node in order, and scans again until a scan rewrites nothing. After a rewrite
// the scan goes on from the node before the rewritten one: the fused node a rewrite leaves in its place is
// looked at next (and may match again), and a model of many matches costs a few scans, not one per match.
// That place may be a removed node, this rewrite's or an earlier one's: removed nodes keep their place until
// the pass ends (ir::Graph::NextNode).
template <typename Fn>
void RewriteUntilStable(ir::Graph& graph, Fn rewrite_one) {
  for (bool changed = true; changed;) {
    changed = false;
    for (ir::Node* node = graph.NextNode(nullptr); node != nullptr;) {
      const ir::Node* before = graph.PlaceBefore(node);
      if (!rewrite_one(node)) {
        node = graph.NextNode(node);
        continue;
      }
      changed = true;
      node = graph.NextNode(before);
    }
  }
}

}  // namespace onnxserve::passes
