#!/usr/bin/python3
"""Trains the example digit classifier and writes it as an onnxserve model repository entry.

The model is a one-hidden-layer MLP on scikit-learn's bundled 8x8 digits (no download), exported with
onnx.helper as MatMul/Add/Relu/MatMul/Add/Softmax:
    input  "pixels"        FP32 [-1, 64]  pixel intensities scaled to [0, 1] (load_digits' 0..16 / 16), row-major 8x8
    output "probabilities" FP32 [-1, 10]  softmax over the digits 0..9
Training is seeded, so reruns give the same accuracy (weights may differ in the last bits across BLAS builds).

Usage: /usr/bin/python3 examples/train_digits.py [--out examples/models/digits/1/model.onnx] [--hidden 32]
"""
import argparse
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

PIXEL_MAX = 16.0  # load_digits() intensities are 0..16; the model takes them scaled to [0, 1].
OPSET = 13        # Softmax-13 normalizes along one axis (-1), which is what a classifier wants.


def train(hidden, seed):
    digits = load_digits()
    x = digits.data.astype(np.float32) / PIXEL_MAX
    x_train, x_test, y_train, y_test = train_test_split(x, digits.target, test_size=0.25, random_state=seed)
    mlp = MLPClassifier(hidden_layer_sizes=(hidden,), max_iter=600, random_state=seed)
    mlp.fit(x_train, y_train)
    print(f"test accuracy: {mlp.score(x_test, y_test):.4f} on {len(y_test)} held-out digits")
    return mlp


def export(mlp, path):
    w1, w2 = (w.astype(np.float32) for w in mlp.coefs_)
    b1, b2 = (b.astype(np.float32) for b in mlp.intercepts_)
    initializers = [
        numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(b1, "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(b2, "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["pixels", "w1"], ["h_mm"], name="fc1"),
        helper.make_node("Add", ["h_mm", "b1"], ["h_pre"], name="fc1_bias"),
        helper.make_node("Relu", ["h_pre"], ["h"], name="relu1"),
        helper.make_node("MatMul", ["h", "w2"], ["logits_mm"], name="fc2"),
        helper.make_node("Add", ["logits_mm", "b2"], ["logits"], name="fc2_bias"),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [-1, 64])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [-1, 10])],
        initializers)
    # onnx.helper writes -1 as a fixed dim of value -1; a symbolic batch dim is what servers expect.
    for value in (*graph.input, *graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="onnxserve/examples/train_digits.py")
    model.ir_version = 8  # readable by onnx >= 1.10 and every runtime of that era
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def main():
    here = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=here / "models" / "digits" / "1" / "model.onnx")
    parser.add_argument("--hidden", type=int, default=32, help="hidden layer width")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    export(train(args.hidden, args.seed), args.out)


if __name__ == "__main__":
    main()
