"""Writes the e2e test model repository: make_models.py ROOT [--add-version N | --broken].

Each model is tiny and uses only Add, Identity, Loop, Expand, ReduceMax, Shape and SplitToSequence, so the
tests exercise the server, not the kernels.
"""
import os
import sys

import onnx
from onnx import TensorProto as T
from onnx import helper


def save(root, name, graph, config=None, version=1, filename="model.onnx"):
    os.makedirs(os.path.join(root, name, str(version)), exist_ok=True)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.save(model, os.path.join(root, name, str(version), filename))
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


def held_graph():
    """add_graph's z and w, plus spun = [max(trips)] * N from a Loop of max(trips) iterations: one request with
    many trips keeps the model's instance busy while the others queue behind it."""
    graph = add_graph()
    graph.name = "held"
    graph.input.append(helper.make_tensor_value_info("trips", T.INT64, ["N"]))
    graph.output.append(helper.make_tensor_value_info("spun", T.FLOAT, ["N"]))
    graph.node.extend([
        helper.make_node("ReduceMax", ["trips"], ["most_trips"], keepdims=0),
        helper.make_node("Loop", ["most_trips", "", "zero"], ["count"], body=spin_graph().node[0].attribute[0].g),
        helper.make_node("Shape", ["trips"], ["rows"]),
        helper.make_node("Expand", ["count", "rows"], ["spun"])])
    graph.initializer.append(helper.make_tensor("zero", T.FLOAT, [1], [0.0]))
    return graph


def expand_graph():
    """y = x broadcast to `shape`: a request decides how much the run allocates."""
    return helper.make_graph(
        [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")], "expand",
        [helper.make_tensor_value_info("x", T.FLOAT, [1]),
         helper.make_tensor_value_info("shape", T.INT64, [2])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["A", "B"])])


def wide_sum_graph():
    """y = x * max(width) per row, through a [N, max(width)] Expand summed back: as much uninterruptible work
    (neither op looks at the run's limits) as a request asks."""
    return helper.make_graph(
        [helper.make_node("ReduceMax", ["width"], ["widest"], keepdims=0),
         helper.make_node("Reshape", ["widest", "one_dim"], ["widest_1d"]),
         helper.make_node("Concat", ["one_dim", "widest_1d"], ["shape"], axis=0),
         helper.make_node("Expand", ["x", "shape"], ["wide"]),
         helper.make_node("ReduceSum", ["wide", "axis_1"], ["y"], keepdims=1)], "wide_sum",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 1]),
         helper.make_tensor_value_info("width", T.INT64, ["N", 1])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["N", 1])],
        [helper.make_tensor("one_dim", T.INT64, [1], [1]), helper.make_tensor("axis_1", T.INT64, [1], [1])])


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
    # Batching, with up to 100 ms for company (a free instance takes only what it expects to pay off).
    save(root, "batched", add_graph(),
         'max_batch_size: 16\ndynamic_batching { max_queue_delay_microseconds: 100000 }\n')
    # The same with a "trips" input: requests queue while one with many trips runs.
    save(root, "held", held_graph(),
         'max_batch_size: 16\ndynamic_batching { max_queue_delay_microseconds: 100000 }\n')
    # A queue of two requests: behind a running one, the third concurrent request finds it full.
    save(root, "tiny_queue", held_graph(),
         'max_batch_size: 16\ndynamic_batching {\n  max_queue_delay_microseconds: 500000\n'
         '  default_queue_policy { max_queue_size: 2 }\n}\n')
    # Two priority levels, one row a batch: the order requests run in shows.
    save(root, "prioritized", held_graph(),
         'max_batch_size: 1\ndynamic_batching { priority_levels: 2 default_priority_level: 2 }\n')
    # Requests time out after 20 ms in the queue unless they say otherwise ("timeout" parameter).
    save(root, "timeout", held_graph(),
         'max_batch_size: 16\ndynamic_batching {\n  max_queue_delay_microseconds: 300000\n'
         '  default_queue_policy { default_timeout_microseconds: 20000 allow_timeout_override: true }\n}\n')
    save(root, "strings", helper.make_graph(
        [helper.make_node("Identity", ["s"], ["t"])], "strings",
        [helper.make_tensor_value_info("s", T.STRING, ["N"])],
        [helper.make_tensor_value_info("t", T.STRING, ["N"])]))
    # Batched, and as long a run as its input says, which only its end can stop.
    save(root, "wide_sum", wide_sum_graph(), 'max_batch_size: 8\ndynamic_batching { }\n')
    # Runs as long as its input says; "spin_limited" stops any run after 200 ms.
    save(root, "spin", spin_graph())
    save(root, "spin_limited", spin_graph(),
         'parameters { key: "execution_timeout_ms" value { string_value: "200" } }\n')
    # A run may hold 64 KiB of tensors: an output of 16K floats or more is refused.
    save(root, "budgeted", expand_graph(),
         'parameters { key: "memory_budget_bytes" value { string_value: "65536" } }\n')
    # No budget: its output may pass what one gRPC response can carry.
    save(root, "unbounded", expand_graph())
    # Warmed up before it serves: two samples, the first run three times.
    save(root, "warmed", add_graph(),
         'max_batch_size: 8\nmodel_warmup [\n'
         '  { name: "zeros" batch_size: 2 count: 3\n'
         '    inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }\n'
         '    inputs { key: "y" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } },\n'
         '  { name: "random" batch_size: 8\n'
         '    inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] random_data: true } }\n'
         '    inputs { key: "y" value { data_type: TYPE_FP32 dims: [ 4 ] random_data: true } } }\n]\n')
    # The model file under another name (default_model_filename).
    save(root, "renamed", add_graph(), 'default_model_filename: "net.onnx"\n', filename="net.onnx")
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
    # Triton fields onnxserve declares but does not implement: refused with the field named.
    save(root, "sequence", add_graph(), 'max_batch_size: 8\nsequence_batching { max_sequence_idle_microseconds: 5 }\n')
    # A warmup sample the model cannot run (x [5] + c [3] does not broadcast): the version never serves.
    save(root, "cold", helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["y"])], "cold",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N"])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["N"])],
        [helper.make_tensor("c", T.FLOAT, [3], [1.0, 2.0, 3.0])]),
        'model_warmup [ { name: "five" batch_size: 1\n'
        '  inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 5 ] zero_data: true } } } ]\n')
    # A model file name that would leave the version folder.
    save(root, "escaping_file", add_graph(), 'default_model_filename: "../model.onnx"\n')


def stuck_warmup(root):
    """A model whose warmup never ends: a Loop of 10^13 trips of a constant count, whatever the input. Its load
    can only end with the process (no execution_timeout_ms), so a starting server must still obey SIGTERM."""
    graph = spin_graph()
    graph.name = "stuck"
    graph.node[0].input[0] = "forever"
    graph.initializer.append(helper.make_tensor("forever", T.INT64, [1], [10 ** 13]))
    del graph.input[:]
    graph.input.append(helper.make_tensor_value_info("x", T.FLOAT, [1]))
    save(root, "stuck", graph,
         'model_warmup [ { name: "forever" batch_size: 1\n'
         '  inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } } } ]\n')


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "--add-version":
        save(sys.argv[1], "add", add_graph(), version=int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[2] == "--broken":
        broken(sys.argv[1])
    elif len(sys.argv) == 3 and sys.argv[2] == "--stuck-warmup":
        stuck_warmup(sys.argv[1])
    else:
        main(sys.argv[1])
