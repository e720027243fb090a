#!/usr/bin/python3
"""Writes a small transformer encoder as PyTorch exports it at opset 13: per layer, multi-head attention
from MatMul/Reshape/Transpose/Softmax, LayerNorm spelled out (ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add)
and the exact GELU spelled out (Div, Erf, Add, Mul, Mul). Random weights.

Usage: /usr/bin/python3 make_transformer.py OUT.onnx [--layers 2] [--seq 128] [--hidden 256] [--heads 4]
The batch dim is symbolic (make_inputs.py --batch N picks it); inputs are float embeddings [batch, seq, hidden].
"""
import argparse

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


class Builder:
    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, base, array):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def linear(self, x, fan_in, fan_out):
        w = (self.rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        b = (self.rng.standard_normal(fan_out) * 0.02).astype(np.float32)
        return self.op("Add", [self.op("MatMul", [x, self.const("w", w)]), self.const("b", b)])

    def layer_norm(self, x, hidden):
        mean = self.op("ReduceMean", [x], axes=[-1])
        d = self.op("Sub", [x, mean])
        var = self.op("ReduceMean", [self.op("Pow", [d, self.const("two", np.float32(2))])], axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [var, self.const("eps", np.float32(1e-5))])])
        n = self.op("Div", [d, std])
        gamma = (1 + 0.1 * self.rng.standard_normal(hidden)).astype(np.float32)
        beta = (0.1 * self.rng.standard_normal(hidden)).astype(np.float32)
        return self.op("Add", [self.op("Mul", [n, self.const("gamma", gamma)]), self.const("beta", beta)])

    def gelu(self, x):
        erf = self.op("Erf", [self.op("Div", [x, self.const("sqrt2", np.float32(1.4142135))])])
        shifted = self.op("Add", [erf, self.const("one", np.float32(1))])
        return self.op("Mul", [self.op("Mul", [x, shifted]), self.const("half", np.float32(0.5))])

    def attention(self, x, seq, hidden, heads):
        head = hidden // heads
        split = self.const("split_shape", np.array([0, seq, heads, head], dtype=np.int64))

        def heads_of(t, perm):
            return self.op("Transpose", [self.op("Reshape", [t, split])], perm=perm)

        q = heads_of(self.linear(x, hidden, hidden), [0, 2, 1, 3])
        k = heads_of(self.linear(x, hidden, hidden), [0, 2, 3, 1])
        v = heads_of(self.linear(x, hidden, hidden), [0, 2, 1, 3])
        scores = self.op("Div", [self.op("MatMul", [q, k]), self.const("scale", np.float32(np.sqrt(head)))])
        context = self.op("MatMul", [self.op("Softmax", [scores], axis=-1), v])
        merged = self.op("Reshape", [self.op("Transpose", [context], perm=[0, 2, 1, 3]),
                                     self.const("merge_shape", np.array([0, seq, hidden], dtype=np.int64))])
        return self.linear(merged, hidden, hidden)

    def encoder_layer(self, x, seq, hidden, heads):
        x = self.layer_norm(self.op("Add", [x, self.attention(x, seq, hidden, heads)]), hidden)
        ffn = self.linear(self.gelu(self.linear(x, hidden, 4 * hidden)), 4 * hidden, hidden)
        return self.layer_norm(self.op("Add", [x, ffn]), hidden)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    args = parser.parse_args()
    b = Builder(np.random.default_rng(0))
    x = "embeddings"
    for _ in range(args.layers):
        x = b.encoder_layer(x, args.seq, args.hidden, args.heads)
    b.nodes.append(helper.make_node("Identity", [x], ["output"]))
    graph = helper.make_graph(
        b.nodes, "transformer_encoder",
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", args.seq, args.hidden])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", args.seq, args.hidden])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    save(model, args.out)


if __name__ == "__main__":
    main()
