#!/usr/bin/python3
"""Writes a random-weight MLP model repository for load tests (docs/server.md, "Measured").

The digits model is too small for batching to matter: gRPC costs more than its compute. A 256-1024-1024-10
MLP (5 MB of weights) is compute-bound at batch 1, which is where dynamic batching pays off.

Usage: /usr/bin/python3 examples/make_mlp.py OUT_DIR [--sizes 256,1024,1024,10] [--no-batching]
writes OUT_DIR/mlp/1/model.onnx and OUT_DIR/mlp/config.pbtxt (input "x" [-1, 256], output "y" [-1, 10]).
"""
import argparse
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp(sizes, seed=0):
    rng = np.random.default_rng(seed)
    initializers, nodes, x = [], [], "x"
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        initializers += [
            numpy_helper.from_array((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32),
                                    f"w{i}"),
            numpy_helper.from_array(np.zeros(fan_out, np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"mm{i}"]),
                  helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"z{i}"])]
        x = f"z{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"h{i}"]))
            x = f"h{i}"
    nodes.append(helper.make_node("Softmax", [x], ["y"], axis=-1))
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", sizes[0]])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", sizes[-1]])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--sizes", default="256,1024,1024,10")
    parser.add_argument("--no-batching", action="store_true", help="omit dynamic_batching from the config")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    (args.out / "mlp" / "1").mkdir(parents=True, exist_ok=True)
    onnx.save(mlp(sizes), str(args.out / "mlp" / "1" / "model.onnx"))
    batching = "" if args.no_batching else "dynamic_batching { max_queue_delay_microseconds: 500 }\n"
    (args.out / "mlp" / "config.pbtxt").write_text(
        f'name: "mlp"\nmax_batch_size: 64\n'
        f'input [ {{ name: "x" data_type: TYPE_FP32 dims: [ {sizes[0]} ] }} ]\n'
        f'output [ {{ name: "y" data_type: TYPE_FP32 dims: [ {sizes[-1]} ] }} ]\n{batching}')
    print(f"wrote {args.out / 'mlp'}")


if __name__ == "__main__":
    main()
