#!/usr/bin/python3
"""Classifies a few of scikit-learn's bundled 8x8 digits with the "digits" model served by onnxserve.

Uses only Debian packages (python3-grpcio, python3-grpc-tools, python3-sklearn, python3-numpy): the gRPC
stubs are generated from proto/ into a temporary directory at run time, so nothing generated is committed.

    onnxserve serve --model-repository examples/models &
    /usr/bin/python3 examples/client.py --addr 127.0.0.1:8001 --count 10

Sends the digits as one ModelInfer request of shape [count, 64] (raw little-endian FP32) and prints the
predicted digit beside the true one. Exit status: 0 when the server answered, 1 on a gRPC error.
"""
import argparse
import importlib
import pathlib
import sys
import tempfile

import grpc
import numpy as np
from grpc_tools import protoc
from sklearn.datasets import load_digits

PIXEL_MAX = 16.0  # load_digits() intensities are 0..16
PROTO_DIR = pathlib.Path(__file__).resolve().parent.parent / "proto"


def generate_stubs(out_dir):
    """Compiles proto/*.proto to Python in out_dir and returns the grpc_service modules."""
    protos = sorted(str(p) for p in PROTO_DIR.glob("*.proto"))
    args = ["protoc", f"-I{PROTO_DIR}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", *protos]
    if protoc.main(args) != 0:
        sys.exit(f"client.py: protoc failed on {protos}")
    sys.path.insert(0, out_dir)
    return importlib.import_module("grpc_service_pb2"), importlib.import_module("grpc_service_pb2_grpc")


def classify(pb2, pb2_grpc, addr, model, pixels, timeout):
    """Returns the [n, 10] probabilities the server computes for pixels [n, 64]."""
    request = pb2.ModelInferRequest(model_name=model)
    request.inputs.add(name="pixels", datatype="FP32", shape=list(pixels.shape))
    request.raw_input_contents.append(pixels.astype("<f4").tobytes())
    with grpc.insecure_channel(addr) as channel:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        response = pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=timeout)
    output = next(i for i, o in enumerate(response.outputs) if o.name == "probabilities")
    shape = list(response.outputs[output].shape)
    return np.frombuffer(response.raw_output_contents[output], dtype="<f4").reshape(shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--addr", default="127.0.0.1:8001", help="onnxserve gRPC address")
    parser.add_argument("--model", default="digits")
    parser.add_argument("--count", type=int, default=10, help="digits to classify (the dataset's first N)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the server")
    args = parser.parse_args()

    digits = load_digits()
    pixels = (digits.data[:args.count] / PIXEL_MAX).astype(np.float32)  # the model takes [0, 1] intensities
    labels = digits.target[:args.count]
    with tempfile.TemporaryDirectory(prefix="onnxserve-stubs-") as stubs:
        pb2, pb2_grpc = generate_stubs(stubs)
        try:
            probabilities = classify(pb2, pb2_grpc, args.addr, args.model, pixels, args.timeout)
        except (grpc.RpcError, grpc.FutureTimeoutError) as error:
            code = error.code().name if isinstance(error, grpc.RpcError) else "UNAVAILABLE"
            details = error.details() if isinstance(error, grpc.RpcError) else f"no server at {args.addr}"
            print(f"client.py: {code}: {details}", file=sys.stderr)
            return 1

    predicted = probabilities.argmax(axis=1)
    print("sample  true  predicted  probability")
    for i, (truth, guess) in enumerate(zip(labels, predicted)):
        print(f"{i:6d}  {truth:4d}  {guess:9d}  {probabilities[i, guess]:11.3f}{'' if truth == guess else '  <- wrong'}")
    print(f"accuracy: {np.mean(predicted == labels):.3f} ({int(np.sum(predicted == labels))}/{len(labels)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
