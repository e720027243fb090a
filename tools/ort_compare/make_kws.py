#!/usr/bin/python3
"""Writes a small keyword-spotting CNN, the DS-CNN of "Hello Edge" (Zhang et al., 2017), random weights:
on a 49 x 10 MFCC-like input (49 frames of 10 coefficients), a 10x4 stride-2 Conv, then depthwise-separable
blocks (depthwise 3x3 Conv + BatchNormalization + Relu, pointwise 1x1 Conv + BatchNormalization + Relu),
an AveragePool over the whole 25 x 5 map, Flatten and a Gemm onto the 12 keyword classes.

Usage: /usr/bin/python3 make_kws.py OUT.onnx [--channels 64] [--blocks 4] [--classes 12] [--opset 13]
The batch dim is symbolic (make_inputs.py --batch N picks it); the input is [batch, 1, 49, 10].
"""
import argparse

import numpy as np

import graph_builder

FRAMES, COEFFICIENTS = 49, 10


class Builder(graph_builder.Builder):
    def conv_bn_relu(self, x, cin, cout, kernel, stride, pads, group=1):
        fan_in = cin // group * kernel[0] * kernel[1]
        w = self.const(self.rng.standard_normal((cout, cin // group, *kernel)) * np.sqrt(2.0 / fan_in), "w")
        b = self.const(0.1 * self.rng.standard_normal(cout), "b")
        y = self.node("Conv", [x, w, b], kernel_shape=list(kernel), strides=list(stride), pads=pads, group=group)
        scale = self.const(1.0 + 0.1 * self.rng.standard_normal(cout), "scale")
        shift = self.const(0.1 * self.rng.standard_normal(cout), "shift")
        mean = self.const(0.1 * self.rng.standard_normal(cout), "mean")
        var = self.const(1.0 + 0.1 * self.rng.random(cout), "var")
        return self.node("Relu", [self.node("BatchNormalization", [y, scale, shift, mean, var])])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--classes", type=int, default=12)
    parser.add_argument("--opset", type=int, default=13)
    args = parser.parse_args()
    b = Builder(np.random.default_rng(0))
    c = args.channels
    # 10x4 stride 2, SAME padding as TensorFlow writes it (the extra row and column at the end): 25 x 5.
    x = b.conv_bn_relu("mfcc", 1, c, (10, 4), (2, 2), [4, 1, 5, 2])
    for _ in range(args.blocks):
        x = b.conv_bn_relu(x, c, c, (3, 3), (1, 1), [1, 1, 1, 1], group=c)
        x = b.conv_bn_relu(x, c, c, (1, 1), (1, 1), [0, 0, 0, 0])
    x = b.node("Flatten", [b.node("AveragePool", [x], kernel_shape=[(FRAMES + 1) // 2, (COEFFICIENTS + 1) // 2])])
    w = b.const(b.rng.standard_normal((args.classes, c)) / np.sqrt(c), "fc_w")
    x = b.node("Gemm", [x, w, b.const(np.zeros(args.classes), "fc_b")], transB=1)
    graph_builder.save_model(args.out, "ds_cnn_kws", b.nodes, b.inits, {"mfcc": ["batch", 1, FRAMES, COEFFICIENTS]},
                             {x: ["batch", args.classes]}, args.opset, 7)

if __name__ == "__main__":
    main()
