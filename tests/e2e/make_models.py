"""Writes the e2e test model repository: make_models.py ROOT [--add-version N | --broken].

Each model is tiny and uses only Add, Identity, Loop, Expand and SplitToSequence, so the tests exercise the server, not the
kernels.
"""
import os
import sys

import onnx
from onnx import TensorProto as T
from onnx import helper


def save(root, name, graph, config=None, version=1):
    os.makedirs(os.path.join(root, name, str(version)), exist_ok=True)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.save(model, os.path.join(root, name, str(version), "model.onnx"))
    if config is not None:
        with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
            f.write(config)


def add_graph():
    """z = x + y and w = x, over float [N, 4]."""
    return helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"]), helper.make_node("Identity", ["x"], ["w"])], "add",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("y", T.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("z", T.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("w", T.FLOAT, ["N", 4])])


def spin_graph():
    """count = the number of iterations of a Loop that runs `trips` times: as long as a request asks."""
    body = helper.make_graph(
        [helper.make_node("Add", ["count_in", "one"], ["count_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])], "spin_body",
        [helper.make_tensor_value_info("iteration", T.INT64, []),
         helper.make_tensor_value_info("cond_in", T.BOOL, []),
         helper.make_tensor_value_info("count_in", T.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", T.BOOL, []),
         helper.make_tensor_value_info("count_out", T.FLOAT, [1])],
        [helper.make_tensor("one", T.FLOAT, [1], [1.0])])
    return helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "zero"], ["count"], body=body)], "spin",
        [helper.make_tensor_value_info("trips", T.INT64, [1])],
        [helper.make_tensor_value_info("count", T.FLOAT, [1])],
        [helper.make_tensor("zero", T.FLOAT, [1], [0.0])])


def expand_graph():
    """y = x broadcast to `shape`: a request decides how much the run allocates."""
    return helper.make_graph(
        [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")], "expand",
        [helper.make_tensor_value_info("x", T.FLOAT, [1]),
         helper.make_tensor_value_info("shape", T.INT64, [2])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["A", "B"])])


def with_sequence_graph():
    """y = x, and `rows`: x split into a sequence of its rows, an output the protocol cannot carry."""
    return helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"]),
         helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0)], "with_sequence",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["N", 4]),
         helper.make_tensor_sequence_value_info("rows", T.FLOAT, [4])])


def main(root):
    # No config: the server completes it (batching on, since every first dim is dynamic).
    save(root, "add", add_graph())
    # Requests wait up to 100 ms to be batched with others.
    save(root, "batched", add_graph(),
         'max_batch_size: 16\ndynamic_batching { max_queue_delay_microseconds: 100000 }\n')
    # A queue of two requests that wait 500 ms: the third concurrent request finds it full.
    save(root, "tiny_queue", add_graph(),
         'max_batch_size: 16\ndynamic_batching {\n  max_queue_delay_microseconds: 500000\n'
         '  default_queue_policy { max_queue_size: 2 }\n}\n')
    # Requests time out after 20 ms in the queue but the batch waits 300 ms.
    save(root, "timeout", add_graph(),
         'max_batch_size: 16\ndynamic_batching {\n  max_queue_delay_microseconds: 300000\n'
         '  default_queue_policy { default_timeout_microseconds: 20000 }\n}\n')
    save(root, "strings", helper.make_graph(
        [helper.make_node("Identity", ["s"], ["t"])], "strings",
        [helper.make_tensor_value_info("s", T.STRING, ["N"])],
        [helper.make_tensor_value_info("t", T.STRING, ["N"])]))
    # Runs as long as its input says; "spin_limited" stops any run after 200 ms.
    save(root, "spin", spin_graph())
    save(root, "spin_limited", spin_graph(),
         'parameters { key: "execution_timeout_ms" value { string_value: "200" } }\n')
    # A run may hold 64 KiB of tensors: an output of 16K floats or more is refused.
    save(root, "budgeted", expand_graph(),
         'parameters { key: "memory_budget_bytes" value { string_value: "65536" } }\n')
    # A sequence output: the model loads and serves y; asking for `rows` is refused.
    save(root, "with_sequence", with_sequence_graph())
    # Fixed shapes: no batching.
    save(root, "fixed", helper.make_graph(
        [helper.make_node("Identity", ["a"], ["b"])], "fixed",
        [helper.make_tensor_value_info("a", T.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("b", T.FLOAT, [2, 2])]))


def broken(root):
    """Models that must fail to load, each on its own, without taking the server or the others down."""
    # Each instance is a thread: the count is refused, not attempted.
    save(root, "too_many_instances", add_graph(), 'instance_group { count: 2147483647 }\n')
    # A string initializer of 2^50 elements: decoding it fails (it once threw std::bad_alloc).
    huge = T(name="huge", data_type=T.STRING, dims=[2 ** 50])
    graph = add_graph()
    graph.initializer.append(huge)
    save(root, "huge_initializer", graph)
    # External data with an offset that is not a number (it once threw from std::stoll).
    weights = T(name="weights", data_type=T.FLOAT, dims=[1], data_location=T.EXTERNAL)
    for key, value in (("location", "w.bin"), ("offset", "abc")):
        entry = weights.external_data.add()
        entry.key, entry.value = key, value
    graph = add_graph()
    graph.initializer.append(weights)
    save(root, "bad_offset", graph)
    with open(os.path.join(root, "bad_offset", "1", "w.bin"), "wb") as f:
        f.write(bytes(4))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "--add-version":
        save(sys.argv[1], "add", add_graph(), version=int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[2] == "--broken":
        broken(sys.argv[1])
    else:
        main(sys.argv[1])
