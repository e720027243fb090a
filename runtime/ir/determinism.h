// Which nodes may answer differently from one run to the next: the random ops. Constant folding must not
// run them once at load, and the server's response cache must not replay their answers.
#pragma once

#include "runtime/ir/graph.h"

namespace onnxserve::ir {

// RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike, Bernoulli, Multinomial and Dropout: ops
// that may draw random numbers when they run, whatever their attributes and inputs.
bool IsRandomOp(const Node& node);

// The first node of `graph` or of its subgraphs (depth first) that draws random numbers on some run, or
// nullptr when every run on equal inputs gives equal outputs. A seeded random op counts as random: the ONNX
// spec does not promise that a seed repeats the same values on every run. Dropout counts only when it may
// train: before opset 7 unless is_test is set; from opset 12 when its training_mode input is given and is not
// a constant false.
const Node* FindRandomNode(const Graph& graph);

}  // namespace onnxserve::ir
