#!/usr/bin/python3
"""What autoscalers and tracing read from the real server: the per-version in-flight gauge while requests are
held (computing and queued) and after they end every way (answered, cancelled, past their deadline), and the
per-request log line of --log-requests with its stage times and the W3C traceparent of gRPC and REST callers.

Run: ONNXSERVE_BIN=build/cli/onnxserve /usr/bin/python3 tests/e2e/observability_test.py
"""
import concurrent.futures
import http.client
import json
import re
import sys
import tempfile
import time
import unittest

import grpc

from make_models import add_graph, save, spin_graph
from metrics_test import ROOT, ServerProcess, sample

sys.path.insert(0, str(ROOT / "examples"))
from client import generate_stubs  # noqa: E402  (examples/ is not a package)

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
INFLIGHT = 'onnxserve_inflight_requests{model="spin",version="1"}'
QUEUED = 'onnxserve_queue_depth{model="spin",version="1"}'
FOREVER = 2 ** 40  # spin trips no test waits for: such a request ends only by cancellation or deadline


def traceparent(span):
    """A valid traceparent whose span id ends in `span` (hex digits)."""
    return "00-%s-%s-01" % (TRACE_ID, span.rjust(16, "0"))


def fields(line):
    """{key: value} of a key=value log line, quotes removed."""
    return {k: v.strip('"') for k, v in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', line)}


class ObservabilityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.repository = tempfile.TemporaryDirectory()
        save(cls.repository.name, "add", add_graph())    # z = x + y, w = x over FP32 [N, 4]
        save(cls.repository.name, "spin", spin_graph())  # runs `trips` iterations; no batching, one instance
        cls.stubs = tempfile.TemporaryDirectory()
        cls.pb2, cls.pb2_grpc = generate_stubs(cls.stubs.name)
        cls.server = ServerProcess(repository=cls.repository.name, flags=("--log-requests",))
        cls.channel = grpc.insecure_channel(cls.server.grpc)
        cls.stub = cls.pb2_grpc.GRPCInferenceServiceStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()
        cls.stubs.cleanup()
        cls.repository.cleanup()

    # ---- helpers ------------------------------------------------------------------------------------------------

    def spin_request(self, trips):
        request = self.pb2.ModelInferRequest(model_name="spin")
        request.inputs.add(name="trips", datatype="INT64", shape=[1]).contents.int64_contents.append(trips)
        return request

    def add_request(self):
        request = self.pb2.ModelInferRequest(model_name="add")
        for name in ("x", "y"):
            request.inputs.add(name=name, datatype="FP32", shape=[1, 4]).contents.fp32_contents.extend([1, 2, 3, 4])
        return request

    def rest_infer(self, model, body, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.server.http_port, timeout=60)
        try:
            connection.request("POST", "/v2/models/%s/infer" % model, body=json.dumps(body).encode(),
                               headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def rest_add(self, headers=None):
        return self.rest_infer("add", {"inputs": [
            {"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]},
            {"name": "y", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}, headers)

    def metrics(self):
        code, text = self.server.get("/metrics")
        self.assertEqual(code, 200)
        return text

    def wait_for(self, condition, what, timeout=60):
        """Scrapes /metrics until condition(text) holds; returns that text. Never asserts on speed: the bound
        only turns a hang into a failure."""
        end = time.monotonic() + timeout
        while True:
            text = self.metrics()
            if condition(text):
                return text
            if time.monotonic() > end:
                self.fail("%s: not reached in %ss:\n%s" % (what, timeout, text))
            time.sleep(0.05)

    def request_lines(self, condition=lambda f: True, count=1, timeout=30):
        """The event=request log lines (as fields) that satisfy `condition`, once there are `count` of them."""
        end = time.monotonic() + timeout
        while True:
            found = [fields(l) for l in list(self.server.log) if "event=request " in l]
            found = [f for f in found if condition(f)]
            if len(found) >= count or time.monotonic() > end:
                return found
            time.sleep(0.05)

    # ---- the in-flight gauge ------------------------------------------------------------------------------------

    def test_inflight_counts_computing_and_queued_requests_and_returns_to_zero(self):
        CANCELLED = 'onnxserve_requests_total{code="CANCELLED",model="spin",version="1"}'
        # A client's deadline ends its call at once; the server may still be stopping that run: wait it out.
        idle = self.wait_for(lambda t: (sample(t, INFLIGHT) or 0) == 0, "no request left from other tests")
        cancelled_before = sample(idle, CANCELLED) or 0
        running = self.stub.ModelInfer.future(self.spin_request(FOREVER), timeout=300)
        self.wait_for(lambda t: sample(t, INFLIGHT) == 1 and sample(t, QUEUED) == 0, "one request computing")
        # Behind it, on the single instance: two gRPC requests that will be cancelled and a REST one that will
        # run once the instance is free.
        queued = [self.stub.ModelInfer.future(self.spin_request(FOREVER), timeout=300) for _ in range(2)]
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            rest = pool.submit(self.rest_infer, "spin",
                               {"inputs": [{"name": "trips", "datatype": "INT64", "shape": [1], "data": [3]}]})
            held = self.wait_for(lambda t: sample(t, QUEUED) == 3, "three requests queued")
            self.assertEqual(sample(held, INFLIGHT), 4)  # queued or computing, each counted once
            for call in [running] + queued:
                call.cancel()
            status, data = rest.result(timeout=120)
        self.assertEqual(status, 200, data)
        done = self.wait_for(lambda t: sample(t, INFLIGHT) == 0, "every request answered")
        self.assertEqual(sample(done, QUEUED), 0)
        self.assertEqual(sample(done, CANCELLED) - cancelled_before, 3)

    def test_inflight_returns_to_zero_after_deadlines_and_rejections(self):
        calls = [self.stub.ModelInfer.future(self.spin_request(FOREVER), timeout=1) for _ in range(3)]
        for call in calls:
            with self.assertRaises(grpc.RpcError) as raised:
                call.result(timeout=120)
            self.assertEqual(raised.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        bad = self.pb2.ModelInferRequest(model_name="spin")  # no input: refused before it is queued
        with self.assertRaises(grpc.RpcError) as raised:
            self.stub.ModelInfer(bad, timeout=30)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.wait_for(lambda t: sample(t, INFLIGHT) == 0, "every request answered")

    # ---- the request log line -----------------------------------------------------------------------------------

    def test_grpc_traceparent_reaches_the_log_line_with_stage_times(self):
        self.stub.ModelInfer(self.add_request(), timeout=30, metadata=(("traceparent", traceparent("a1")),))
        lines = self.request_lines(lambda f: f.get("span_id") == "00000000000000a1")
        self.assertEqual(len(lines), 1, list(self.server.log))
        line = lines[0]
        self.assertEqual((line["model"], line["version"], line["code"]), ("add", "1", "OK"))
        self.assertEqual(line["trace_id"], TRACE_ID)
        self.assertEqual(line["batch"], "1")
        queue, compute, encode, total = (int(line[k]) for k in ("queue_us", "compute_us", "encode_us", "total_us"))
        self.assertLessEqual(queue + compute + encode, total)

    def test_rest_traceparent_reaches_the_log_line(self):
        status, data = self.rest_add({"traceparent": traceparent("b2")})
        self.assertEqual(status, 200, data)
        lines = self.request_lines(lambda f: f.get("span_id") == "00000000000000b2")
        self.assertEqual(len(lines), 1, list(self.server.log))
        self.assertEqual((lines[0]["model"], lines[0]["code"], lines[0]["trace_id"]), ("add", "OK", TRACE_ID))

    def test_invalid_traceparents_are_ignored_not_errors_nor_logged(self):
        marker = "c0ffee" * 6  # 36 hex digits: too long a trace id, which must show nowhere
        invalid = ["00-%s-00f067aa0ba902b7-01" % marker, "00-%s-0000000000000000-01" % TRACE_ID, "garbage",
                   "00-%s-00f067aa0ba902b7-01" % TRACE_ID.upper()]
        before = len(self.request_lines(lambda f: f.get("model") == "add" and "trace_id" not in f, count=0))
        for value in invalid:
            self.stub.ModelInfer(self.add_request(), timeout=30, metadata=(("traceparent", value),))
            status, data = self.rest_add({"traceparent": value})
            self.assertEqual(status, 200, data)
        lines = self.request_lines(lambda f: f.get("model") == "add" and "trace_id" not in f,
                                   count=before + 2 * len(invalid))
        self.assertEqual(len(lines), before + 2 * len(invalid))
        self.assertTrue(all(line["code"] == "OK" for line in lines[before:]))
        log = "".join(self.server.log)
        self.assertNotIn(marker, log)
        self.assertNotIn(TRACE_ID.upper(), log)

    def test_every_request_line_has_consistent_stage_times(self):
        with self.assertRaises(grpc.RpcError):  # a line for requests refused before any queue too
            self.stub.ModelInfer(self.pb2.ModelInferRequest(model_name="no_such_model"), timeout=30)
        self.rest_add({"traceparent": traceparent("e5")})
        with self.assertRaises(grpc.RpcError):  # stopped mid-run by its deadline: a batch, an error
            self.stub.ModelInfer(self.spin_request(FOREVER), timeout=3,
                                 metadata=(("traceparent", traceparent("e6")),))
        for span in ("e5", "e6"):
            self.assertEqual(len(self.request_lines(lambda f: f.get("span_id") == span.rjust(16, "0"))), 1)
        stopped = self.request_lines(lambda f: f.get("span_id") == "00000000000000e6")[0]
        self.assertEqual((stopped["model"], stopped["batch"]), ("spin", "1"))
        # gRPC reports a call past its deadline as cancelled too: whichever check sees it first names it.
        self.assertIn(stopped["code"], ("DEADLINE_EXCEEDED", "CANCELLED"))
        lines = self.request_lines(lambda f: f.get("code") == "NOT_FOUND")
        self.assertEqual(lines[0]["model"], "")  # the client's name for an unknown model is not logged
        for line in self.request_lines(count=0):
            stages = [int(line[k]) for k in ("queue_us", "compute_us", "encode_us", "total_us")]
            self.assertTrue(all(s >= 0 for s in stages), line)
            self.assertLessEqual(sum(stages[:3]), stages[3], line)
            if line["code"] == "OK":  # answered from a model run, so from a batch of at least its own row
                self.assertGreaterEqual(int(line["batch"]), 1, line)


class DefaultLoggingTest(unittest.TestCase):
    def test_without_the_flag_requests_are_not_logged(self):
        with tempfile.TemporaryDirectory() as repository:
            save(repository, "add", add_graph())
            with ServerProcess(repository=repository) as server:
                connection = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
                body = {"inputs": [{"name": n, "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}
                                   for n in ("x", "y")]}
                connection.request("POST", "/v2/models/add/infer", body=json.dumps(body).encode())
                self.assertEqual(connection.getresponse().status, 200)
                connection.close()
                _, text = server.get("/metrics")  # the request is done and accounted
                self.assertEqual(sample(text, 'onnxserve_requests_total{code="OK",model="add",version="1"}'), 1)
            self.assertFalse(any("event=request " in line for line in server.log), "".join(server.log))


if __name__ == "__main__":
    unittest.main(verbosity=2)
