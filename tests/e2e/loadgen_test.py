#!/usr/bin/python3
"""onnxserve load against a real server on loopback: every run is bounded, and the JSON report (the last
line of stdout) counts what was sent, by status code, with ordered latency percentiles.

Run: ONNXSERVE_BIN=build/cli/onnxserve /usr/bin/python3 tests/e2e/loadgen_test.py
"""
import base64
import json
import pathlib
import tempfile
import unittest

import numpy as np
from onnx import numpy_helper

from metrics_test import ServerProcess, run


class WithServer(unittest.TestCase):
    """One server for the tests of a class."""

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def assert_consistent(self, report):
        """The report's figures agree with each other."""
        self.assertEqual(report["count"], report["ok"] + report["errors"])
        self.assertEqual(report["count"], sum(report["codes"].values()))
        self.assertTrue(0 < report["p50_ms"] <= report["p90_ms"] <= report["p99_ms"] <= report["max_ms"], report)
        self.assertAlmostEqual(report["rps"], report["count"] / report["seconds"], delta=0.01 * report["rps"])


class LoadTest(WithServer):
    def load(self, *args):
        result = run("load", "--target", self.server.grpc, "--model", "digits", *args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout.strip().splitlines()[-1])

    def test_default_run_sends_200(self):
        report = self.load()
        self.assertEqual(report["count"], 200)
        self.assertEqual(report["codes"], {"OK": 200})
        self.assert_consistent(report)

    def test_total_and_concurrency(self):
        report = self.load("-c", "8", "-n", "300")
        self.assertEqual((report["count"], report["ok"], report["concurrency"]), (300, 300, 8))
        self.assert_consistent(report)

    def test_duration_with_rate_limit(self):
        report = self.load("-z", "1", "--rps", "100", "-c", "4")
        # Sends are due at i / 100 s for i < 100; allow a little scheduling slack either way.
        self.assertTrue(95 <= report["count"] <= 100, report)
        self.assertTrue(0.9 <= report["seconds"] <= 2.0, report)
        self.assert_consistent(report)

    def test_random_batch(self):
        report = self.load("--batch", "16", "-n", "20", "-c", "2")
        self.assertEqual((report["ok"], report["batch"]), (20, 16))

    def test_json_request_file_like_ghz(self):
        pixels = np.linspace(0, 1, 2 * 64, dtype="<f4")
        request = {"inputs": [{"name": "pixels", "datatype": "FP32", "shape": [2, 64]}],
                   "raw_input_contents": [base64.b64encode(pixels.tobytes()).decode()]}
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(request, f)
            f.flush()
            report = self.load("--input", f.name, "-n", "10")
        self.assertEqual(report["codes"], {"OK": 10})

    def test_tensor_proto_directory(self):
        with tempfile.TemporaryDirectory() as d:
            tensor = numpy_helper.from_array(np.zeros((3, 64), np.float32), "pixels")
            (pathlib.Path(d) / "input_0.pb").write_bytes(tensor.SerializeToString())
            report = self.load("--input", d, "-n", "10")
        self.assertEqual(report["codes"], {"OK": 10})

    def test_invalid_input_is_counted_by_code(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"inputs": [{"name": "pixels", "datatype": "FP32", "shape": [1, 3]}],
                       "raw_input_contents": [base64.b64encode(bytes(12)).decode()]}, f)
            f.flush()
            report = self.load("--input", f.name, "-n", "5")
        self.assertEqual(report["codes"], {"INVALID_ARGUMENT": 5})
        self.assertEqual((report["ok"], report["errors"], report["p50_ms"]), (0, 5, 0))

    def test_unknown_model_fails_before_the_run(self):
        result = run("load", "--target", self.server.grpc, "--model", "no_such_model")
        self.assertEqual(result.returncode, 1)
        self.assertIn("no_such_model", result.stderr)

    def test_unbounded_run_is_refused(self):
        result = run("load", "--target", self.server.grpc, "--model", "digits", "-n", "0")
        self.assertEqual(result.returncode, 2)
        self.assertIn("bounded", result.stderr)


class RestLoadTest(WithServer):
    """onnxserve load --protocol http: the same runs over KServe v2 REST, JSON or binary tensor data."""

    def load(self, *args):
        result = run("load", "--protocol", "http", "--target", "127.0.0.1:%d" % self.server.http_port,
                     "--model", "digits", *args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout.strip().splitlines()[-1])

    def successes(self):
        """The server's count of successful digits inferences, from its REST statistics."""
        code, body = self.server.get("/v2/models/digits/stats")
        self.assertEqual(code, 200, body)
        stats = json.loads(body)["model_stats"]  # inference_stats is left out until the first inference
        return sum(m.get("inference_stats", {}).get("success", {}).get("count", 0) for m in stats)

    def test_json_tensors_reach_the_model(self):
        before = self.successes()
        report = self.load("-n", "50")
        self.assertEqual(report["codes"], {"HTTP_200": 50})
        self.assert_consistent(report)
        self.assertEqual(self.successes() - before, 50)

    def test_binary_data_with_concurrency_over_connections(self):
        before = self.successes()
        report = self.load("--binary-data", "-c", "6", "--connections", "2", "-n", "120", "--batch", "4")
        self.assertEqual((report["codes"], report["concurrency"]), ({"HTTP_200": 120}, 6))
        self.assert_consistent(report)
        self.assertEqual(self.successes() - before, 120)

    def test_errors_are_counted_by_http_status(self):
        for binary in ((), ("--binary-data",)):
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                json.dump({"inputs": [{"name": "pixels", "datatype": "FP32", "shape": [1, 3]}],
                           "raw_input_contents": [base64.b64encode(bytes(12)).decode()]}, f)
                f.flush()
                report = self.load("--input", f.name, "-n", "5", *binary)
            self.assertEqual(report["codes"], {"HTTP_400": 5})
            self.assertEqual((report["ok"], report["errors"], report["p50_ms"]), (0, 5, 0))

    def test_unknown_model_fails_before_the_run(self):
        result = run("load", "--protocol", "http", "--target", "127.0.0.1:%d" % self.server.http_port,
                     "--model", "no_such_model")
        self.assertEqual(result.returncode, 1)
        self.assertIn("HTTP 404", result.stderr)

    def test_binary_data_needs_http(self):
        result = run("load", "--target", self.server.grpc, "--model", "digits", "--binary-data")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--binary-data needs --protocol http", result.stderr)


if __name__ == "__main__":
    unittest.main()
