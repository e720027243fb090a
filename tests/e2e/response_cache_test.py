#!/usr/bin/python3
"""The response cache of the real server (--response-cache-byte-size, response_cache { enable: true }): a second
identical request is a hit in the statistics and the metrics and runs no model; a different input is a miss; a
hit answers the same bytes over gRPC and REST, whichever protocol filled the cache; a model that draws random
numbers is refused; a server without a cache serves a model that enables one uncached, with a warning.

Run: ONNXSERVE_BIN=build/cli/onnxserve /usr/bin/python3 tests/e2e/response_cache_test.py
"""
import json
import shutil
import sys
import tempfile
import unittest

import grpc
import numpy as np
from onnx import TensorProto as T
from onnx import helper

from make_models import add_graph, save
from metrics_test import ROOT, ServerProcess, sample
from rest_test import Rest, binary_body, binary_outputs, split_binary

sys.path.insert(0, str(ROOT / "examples"))
from client import generate_stubs  # noqa: E402  (examples/ is not a package)

CACHED = "max_batch_size: 8\nresponse_cache { enable: true }\n"


def noisy_graph():
    """z = x + uniform noise: equal requests get different answers."""
    return helper.make_graph(
        [helper.make_node("RandomUniformLike", ["x"], ["r"]), helper.make_node("Add", ["x", "r"], ["z"])], "noisy",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("z", T.FLOAT, ["N", 4])])


def make_repository(root):
    save(root, "add", add_graph(), config=CACHED)  # z = x + y, w = x over FP32 [N, 4]
    save(root, "add_uncached", add_graph(), config="max_batch_size: 8\n")
    save(root, "noisy", noisy_graph(), config=CACHED)


class Client:
    """gRPC and REST inference and statistics against one server."""

    def __init__(self, server, pb2, pb2_grpc):
        self.server, self.pb2 = server, pb2
        self.channel = grpc.insecure_channel(server.grpc)
        self.stub = pb2_grpc.GRPCInferenceServiceStub(self.channel)
        self.rest = Rest(server.http_port)

    def grpc_infer(self, model, x, y, request_id=""):
        """{output name: raw bytes} of a gRPC ModelInfer with raw inputs."""
        request = self.pb2.ModelInferRequest(model_name=model, id=request_id)
        for name, value in (("x", x), ("y", y)):
            request.inputs.add(name=name, datatype="FP32", shape=list(value.shape))
            request.raw_input_contents.append(value.astype("<f4").tobytes())
        answer = self.stub.ModelInfer(request, timeout=30)
        assert answer.id == request_id, (answer.id, request_id)
        return {o.name: raw for o, raw in zip(answer.outputs, answer.raw_output_contents)}

    def rest_infer(self, model, x, y):
        """{output name: bytes} of a REST infer: x as JSON, y as binary, both outputs asked for as binary."""
        header = {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()},
                             {"name": "y", "datatype": "FP32", "shape": list(y.shape),
                              "parameters": {"binary_data_size": y.nbytes}}],
                  "parameters": {"binary_data_output": True}}
        status, data, headers = self.rest.request("POST", "/v2/models/%s/infer" % model,
                                                  *binary_body(header, [y.astype("<f4").tobytes()]))
        assert status == 200, (status, data)
        return binary_outputs(*split_binary(data, headers))

    def stats(self, model):
        """(cache hits, cache misses, executions, successes) of version 1, from the REST statistics."""
        status, body = self.rest.json("GET", "/v2/models/%s/versions/1/stats" % model)
        assert status == 200, body
        (stats,) = body["model_stats"]
        infer = stats["inference_stats"]
        count = lambda field: int(infer.get(field, {}).get("count", 0))  # noqa: E731
        return count("cache_hit"), count("cache_miss"), int(stats.get("execution_count", 0)), count("success")

    def cache_metric(self, model, kind):
        status, text = self.server.get("/metrics")
        assert status == 200
        return sample(text, 'onnxserve_cache_%s_total{model="%s",version="1"}' % (kind, model))


def inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.random((2, 4), dtype=np.float32), rng.random((2, 4), dtype=np.float32)


class ResponseCacheTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.repository = tempfile.mkdtemp(prefix="response_cache_test_")
        make_repository(cls.repository)
        cls.stubs = tempfile.mkdtemp(prefix="response_cache_stubs_")
        cls.pb2, cls.pb2_grpc = generate_stubs(cls.stubs)
        cls.server = ServerProcess(repository=cls.repository, flags=("--response-cache-byte-size", "1048576"))
        cls.client = Client(cls.server, cls.pb2, cls.pb2_grpc)

    @classmethod
    def tearDownClass(cls):
        cls.client.channel.close()
        cls.server.stop()
        shutil.rmtree(cls.repository, ignore_errors=True)
        shutil.rmtree(cls.stubs, ignore_errors=True)

    def test_a_second_identical_request_is_a_hit_that_runs_no_model(self):
        x, y = inputs(1)
        hits, misses, executions, successes = self.client.stats("add")
        metric_hits = self.client.cache_metric("add", "hits") or 0
        first = self.client.grpc_infer("add", x, y, request_id="first")
        self.assertEqual(self.client.stats("add"), (hits, misses + 1, executions + 1, successes + 1))
        second = self.client.grpc_infer("add", x, y, request_id="second")  # ids differ: not part of the key
        self.assertEqual(self.client.stats("add"), (hits + 1, misses + 1, executions + 1, successes + 2))
        self.assertEqual(second, first)
        np.testing.assert_array_equal(np.frombuffer(second["z"], dtype="<f4").reshape(2, 4), x + y)
        self.assertEqual(self.client.cache_metric("add", "hits"), metric_hits + 1)
        self.assertGreaterEqual(self.client.cache_metric("add", "misses"), 1)
        status, text = self.server.get("/metrics")
        self.assertGreaterEqual(sample(text, "onnxserve_cache_entries"), 1)
        self.assertGreater(sample(text, "onnxserve_cache_bytes"), 0)

    def test_a_different_input_is_a_miss_with_its_own_answer(self):
        x, y = inputs(2)
        self.client.grpc_infer("add", x, y)
        hits, misses, executions, _ = self.client.stats("add")
        y2 = y.copy()
        y2[1, 3] += 1
        answer = self.client.grpc_infer("add", x, y2)
        self.assertEqual(self.client.stats("add")[:3], (hits, misses + 1, executions + 1))
        np.testing.assert_array_equal(np.frombuffer(answer["z"], dtype="<f4").reshape(2, 4), x + y2)

    def test_a_cached_output_that_is_an_input_keeps_its_own_requests_bytes(self):
        # w = x: the answer stored from a request whose input was read in place must not change once that
        # request is gone and others of the same size have come and gone too.
        x, y = inputs(100)
        first = self.client.grpc_infer("add", x, y)
        for seed in range(101, 111):
            other_x, other_y = inputs(seed)
            self.client.grpc_infer("add", other_x, other_y)
        hits = self.client.stats("add")[0]
        again = self.client.grpc_infer("add", x, y)
        self.assertEqual(self.client.stats("add")[0], hits + 1)
        self.assertEqual(again, first)
        np.testing.assert_array_equal(np.frombuffer(again["w"], dtype="<f4").reshape(2, 4), x)

    def test_a_hit_answers_the_same_bytes_over_grpc_and_rest(self):
        x, y = inputs(3)
        by_rest = self.client.rest_infer("add", x, y)  # a miss: fills the cache
        hits = self.client.stats("add")[0]
        by_grpc = self.client.grpc_infer("add", x, y)  # the same tensors, sent raw over gRPC: a hit
        self.assertEqual(self.client.stats("add")[0], hits + 1)
        self.assertEqual(by_grpc, by_rest)
        again_by_rest = self.client.rest_infer("add", x, y)
        self.assertEqual(self.client.stats("add")[0], hits + 2)
        self.assertEqual(again_by_rest, by_rest)
        np.testing.assert_array_equal(np.frombuffer(by_grpc["z"], dtype="<f4").reshape(2, 4), x + y)

    def test_a_model_without_response_cache_is_never_cached(self):
        x, y = inputs(4)
        self.client.grpc_infer("add_uncached", x, y)
        self.client.grpc_infer("add_uncached", x, y)
        hits, misses, executions, successes = self.client.stats("add_uncached")
        self.assertEqual((hits, misses, executions, successes), (0, 0, 2, 2))

    def test_a_model_that_draws_random_numbers_is_refused_naming_the_op(self):
        status, index = self.client.rest.json("POST", "/v2/repository/index", b"")
        self.assertEqual(status, 200)
        (noisy,) = [m for m in index if m["name"] == "noisy"]
        self.assertEqual(noisy["state"], "UNAVAILABLE")
        self.assertIn("RandomUniformLike", noisy["reason"])
        self.assertIn("response_cache", noisy["reason"])


class WithoutServerCacheTest(unittest.TestCase):
    def test_a_model_enabling_the_cache_is_served_uncached_with_a_warning(self):
        repository = tempfile.mkdtemp(prefix="response_cache_off_")
        stubs = tempfile.mkdtemp(prefix="response_cache_stubs_")
        try:
            save(repository, "add", add_graph(), config=CACHED)
            pb2, pb2_grpc = generate_stubs(stubs)
            with ServerProcess(repository=repository) as server:
                client = Client(server, pb2, pb2_grpc)
                x, y = inputs(5)
                client.grpc_infer("add", x, y)
                client.grpc_infer("add", x, y)
                self.assertEqual(client.stats("add"), (0, 0, 2, 2))
                client.channel.close()
                self.assertTrue(any("event=response_cache_off" in line and "model=add" in line
                                    for line in server.log), "".join(server.log))
        finally:
            shutil.rmtree(repository, ignore_errors=True)
            shutil.rmtree(stubs, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
