#!/usr/bin/python3
"""Writes a MobileNetV2-like image classifier with MobileNetV3's additions, random weights: the layer mix
of the OCR detectors, recognizers and angle classifiers we serve (depthwise 3x3 and 5x5 convolutions at
stride 1 and 2, pointwise expansions and projections with BatchNormalization, Relu and HardSwish,
squeeze-and-excitation blocks of GlobalAveragePool -> 1x1 Conv -> Relu -> 1x1 Conv -> Sigmoid -> Mul,
inverted residual Adds), ending in GlobalAveragePool, Flatten and Gemm.

Usage: /usr/bin/python3 make_mobilenet.py OUT.onnx [--size 224] [--opset 14]
The batch dim is symbolic, so `onnxserve bench --batch N` and make_inputs.py --batch N pick it.
"""
import argparse

import numpy as np

import graph_builder

# MobileNetV2's stages: expansion, output channels, repeats, first stride; then V3's kernel size,
# squeeze-and-excitation and activation per stage.
STAGES = [
    # t, c, n, s, k, se, act
    (1, 16, 1, 1, 3, False, "Relu"),
    (6, 24, 2, 2, 3, False, "Relu"),
    (6, 32, 3, 2, 5, True, "Relu"),
    (6, 64, 4, 2, 3, False, "HardSwish"),
    (6, 96, 3, 1, 3, True, "HardSwish"),
    (6, 160, 3, 2, 5, True, "HardSwish"),
    (6, 320, 1, 1, 3, False, "HardSwish"),
]
STEM = 32
HEAD = 1280
CLASSES = 1000


class Builder(graph_builder.Builder):
    def conv(self, x, cin, cout, k=1, stride=1, group=1, bias=False):
        # He-style scale keeps activations O(1) through the depth, so no layer saturates or vanishes.
        fan_in = cin // group * k * k
        w = self.const(self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan_in), "w")
        inputs = [x, w] + ([self.const(self.rng.standard_normal(cout) * 0.1, "b")] if bias else [])
        return self.node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[k // 2] * 4, group=group)

    def batch_norm(self, x, c):
        scale = self.const(1.0 + 0.1 * self.rng.standard_normal(c), "scale")
        shift = self.const(0.1 * self.rng.standard_normal(c), "shift")
        mean = self.const(0.1 * self.rng.standard_normal(c), "mean")
        var = self.const(1.0 + 0.1 * self.rng.random(c), "var")
        return self.node("BatchNormalization", [x, scale, shift, mean, var])

    def conv_bn(self, x, cin, cout, act=None, **kw):
        y = self.batch_norm(self.conv(x, cin, cout, **kw), cout)
        return self.node(act, [y]) if act else y

    def squeeze_excite(self, x, c):
        squeezed = max(8, c // 4)
        s = self.node("GlobalAveragePool", [x])
        s = self.node("Relu", [self.conv(s, c, squeezed, bias=True)])
        s = self.node("Sigmoid", [self.conv(s, squeezed, c, bias=True)])
        return self.node("Mul", [x, s])

    def inverted_residual(self, x, cin, cout, t, stride, k, se, act):
        hidden = cin * t
        y = self.conv_bn(x, cin, hidden, act) if t != 1 else x
        y = self.conv_bn(y, hidden, hidden, act, k=k, stride=stride, group=hidden)
        if se:
            y = self.squeeze_excite(y, hidden)
        y = self.conv_bn(y, hidden, cout)
        return self.node("Add", [x, y]) if stride == 1 and cin == cout else y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--size", type=int, default=224, help="input height and width")
    parser.add_argument("--opset", type=int, default=14, choices=range(14, 18), help="HardSwish needs 14")
    args = parser.parse_args()
    b = Builder(np.random.default_rng(0))
    x = b.conv_bn("image", 3, STEM, "HardSwish", k=3, stride=2)
    c = STEM
    for t, cout, n, s, k, se, act in STAGES:
        for i in range(n):
            x = b.inverted_residual(x, c, cout, t, s if i == 0 else 1, k, se, act)
            c = cout
    x = b.conv_bn(x, c, HEAD, "HardSwish")
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])])
    w = b.const(b.rng.standard_normal((CLASSES, HEAD)) / np.sqrt(HEAD), "fc_w")
    x = b.node("Gemm", [x, w, b.const(np.zeros(CLASSES), "fc_b")], transB=1)
    graph_builder.save_model(args.out, "mobilenet_like", b.nodes, b.inits,
                             {"image": ["batch", 3, args.size, args.size]}, {x: ["batch", CLASSES]},
                             args.opset, 8)

if __name__ == "__main__":
    main()
