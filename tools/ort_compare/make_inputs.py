#!/usr/bin/python3
"""Writes random inputs of a model as DIR/input_K.pb (onnx.TensorProto), for `onnxserve bench --inputs-dir`
and bench.js alike, so both runtimes see the very same tensors.

Usage: /usr/bin/python3 make_inputs.py MODEL.onnx DIR [--batch N] [--seed S]
A dynamic first dim takes --batch, other dynamic dims 1; floats are uniform in [0, 1), integers 0 or 1
(the values `onnxserve bench` itself would draw).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("dir")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    model = onnx.load(args.model, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.dir, exist_ok=True)
    inputs = [i for i in model.graph.input if i.name not in initializers]
    for k, info in enumerate(inputs):
        tensor_type = info.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else (args.batch if j == 0 else 1)
                 for j, d in enumerate(tensor_type.shape.dim)]
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type) if hasattr(
            helper, "tensor_dtype_to_np_dtype") else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor_type.elem_type]
        if np.issubdtype(dtype, np.floating):
            value = rng.random(shape, dtype=np.float32).astype(dtype)
        else:
            value = rng.integers(0, 2, shape).astype(dtype)
        with open(os.path.join(args.dir, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, info.name).SerializeToString())


if __name__ == "__main__":
    main()
