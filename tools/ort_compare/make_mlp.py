#!/usr/bin/python3
"""Writes the 784-512-512-10 MLP of the performance acceptance: Gemm + Relu layers, random weights.

Usage: /usr/bin/python3 make_mlp.py OUT.onnx [--matmul]
  --matmul: MatMul + Add layers instead of Gemm (exercises the MatMul kernel on the same shapes).
The batch dim is symbolic, so `onnxserve bench --batch 64` and make_inputs.py --batch 64 pick it.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WIDTHS = [784, 512, 512, 10]


def layer(i, x, fan_in, fan_out, rng, matmul):
    # PyTorch's export layout: W is [out, in] and Gemm transposes it; MatMul wants [in, out].
    w = (rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
    b = (rng.standard_normal(fan_out) * 0.1).astype(np.float32)
    y = f"fc{i}"
    if matmul:
        inits = [numpy_helper.from_array(w.T.copy(), f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes = [helper.make_node("MatMul", [x, f"w{i}"], [f"{y}_mm"]),
                 helper.make_node("Add", [f"{y}_mm", f"b{i}"], [y])]
    else:
        inits = [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes = [helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y], transB=1)]
    return y, nodes, inits


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--matmul", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x, nodes, inits = "x", [], []
    for i in range(len(WIDTHS) - 1):
        x, n, w = layer(i, x, WIDTHS[i], WIDTHS[i + 1], rng, args.matmul)
        nodes += n
        inits += w
        if i < len(WIDTHS) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"relu{i}"]))
            x = f"relu{i}"
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", WIDTHS[0]])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", WIDTHS[-1]])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
