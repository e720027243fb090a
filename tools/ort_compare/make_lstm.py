#!/usr/bin/python3
"""Writes an LSTM sequence classifier as PyTorch exports `nn.LSTM(batch_first=True)` + `nn.Linear` on the
last step, random weights: Transpose to time-major, one ONNX LSTM node per layer (W, R and B as
initializers, no sequence_lens or initial state), Squeeze of the num_directions axis between layers, and
a Gemm on the last layer's Y_h.

Usage: /usr/bin/python3 make_lstm.py OUT.onnx [--layers 2] [--hidden 128] [--steps 50] [--features 40]
                                              [--classes 10] [--opset 14]
The batch dim is symbolic (make_inputs.py --batch N picks it); the input is [batch, steps, features].
"""
import argparse

import numpy as np
from onnx import helper, numpy_helper

import graph_builder


def lstm_layer(i, x, fan_in, hidden, rng):
    # ONNX's gate order is i, o, f, c; with random weights the order does not matter. PyTorch's uniform
    # init in [-1/sqrt(hidden), 1/sqrt(hidden)] keeps the gates off saturation.
    bound = 1.0 / np.sqrt(hidden)
    w = rng.uniform(-bound, bound, (1, 4 * hidden, fan_in)).astype(np.float32)
    r = rng.uniform(-bound, bound, (1, 4 * hidden, hidden)).astype(np.float32)
    b = rng.uniform(-bound, bound, (1, 8 * hidden)).astype(np.float32)
    inits = [numpy_helper.from_array(w, f"lstm{i}_W"), numpy_helper.from_array(r, f"lstm{i}_R"),
             numpy_helper.from_array(b, f"lstm{i}_B")]
    y, y_h = f"lstm{i}_Y", f"lstm{i}_Y_h"
    node = helper.make_node("LSTM", [x, f"lstm{i}_W", f"lstm{i}_R", f"lstm{i}_B"], [y, y_h, f"lstm{i}_Y_c"],
                            hidden_size=hidden, direction="forward", name=f"lstm{i}")
    return y, y_h, [node], inits


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--features", type=int, default=40)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--opset", type=int, default=14, choices=range(13, 18),
                        help="13 and up: Squeeze takes its axes as an input")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    axis1 = numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1")
    axis0 = numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0")
    nodes = [helper.make_node("Transpose", ["features"], ["time_major"], perm=[1, 0, 2])]
    inits = [axis0, axis1]
    x, fan_in = "time_major", args.features
    for i in range(args.layers):
        y, y_h, n, w = lstm_layer(i, x, fan_in, args.hidden, rng)
        nodes += n
        inits += w
        if i + 1 < args.layers:
            # Y is [steps, num_directions, batch, hidden]: the next layer reads [steps, batch, hidden].
            x, fan_in = f"lstm{i}_out", args.hidden
            nodes.append(helper.make_node("Squeeze", [y, "axis1"], [x]))
    # The last layer's Y_h [1, batch, hidden] is the last step's output.
    nodes.append(helper.make_node("Squeeze", [y_h, "axis0"], ["last"]))
    w = (rng.standard_normal((args.classes, args.hidden)) / np.sqrt(args.hidden)).astype(np.float32)
    b = (0.1 * rng.standard_normal(args.classes)).astype(np.float32)
    inits += [numpy_helper.from_array(w, "fc_w"), numpy_helper.from_array(b, "fc_b")]
    nodes.append(helper.make_node("Gemm", ["last", "fc_w", "fc_b"], ["logits"], transB=1))
    graph_builder.save_model(args.out, "lstm_classifier", nodes, inits,
                             {"features": ["batch", args.steps, args.features]}, {"logits": ["batch", args.classes]},
                             args.opset, 7)

if __name__ == "__main__":
    main()
