#!/usr/bin/python3
"""The real server's HTTP side: requests made by real clients (onnxserve load, examples/client.py) show up in
GET /metrics with the right counts, and the /v2 health endpoints answer. Also defines ServerProcess, the
ephemeral-port server fixture probe_test.py and loadgen_test.py share.

Run: ONNXSERVE_BIN=build/cli/onnxserve /usr/bin/python3 tests/e2e/metrics_test.py
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("ONNXSERVE_BIN", str(ROOT / "build" / "cli" / "onnxserve"))
EXAMPLES = ROOT / "examples" / "models"


class ServerProcess:
    """`onnxserve serve` on loopback with ports picked by the kernel, `flags` added; stopped (SIGTERM) on exit.
    /metrics is on the HTTP port (--metrics-port -1) unless `flags` give it a port: concurrent test servers
    cannot all have the default 8002."""

    def __init__(self, repository=EXAMPLES, timeout=30, flags=()):
        self.proc = subprocess.Popen(
            [BIN, "serve", "--model-repository", str(repository), "--grpc-port", "0", "--http-port", "0",
             "--metrics-port", "-1", "--address", "127.0.0.1", *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = []
        ready = threading.Event()

        def drain():  # keep reading so the server never blocks on a full stderr pipe
            for line in self.proc.stderr:
                self.log.append(line)
                if "event=server_ready" in line:
                    ready.set()

        self.drainer = threading.Thread(target=drain, daemon=True)
        self.drainer.start()
        if not ready.wait(timeout):
            self.stop()
            raise RuntimeError("server not ready in %ss:\n%s" % (timeout, "".join(self.log)))
        listening = next(l for l in self.log if "event=server_listening" in l)
        self.grpc_port = int(re.search(r"grpc_port=(\d+)", listening).group(1))
        self.http_port = int(re.search(r" http_port=(-?\d+)", listening).group(1))
        self.metrics_port = int(re.search(r"metrics_port=(-?\d+)", listening).group(1))
        self.grpc = "127.0.0.1:%d" % self.grpc_port

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=60)
        self.drainer.join(timeout=10)  # it ends at the pipe's EOF
        self.proc.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def get(self, path):
        """(status code, body) of GET http://127.0.0.1:<http_port><path>."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.http_port, path), timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


def run(*args, timeout=120):
    """Runs the onnxserve binary; returns the CompletedProcess (text)."""
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout)


def sample(exposition, series):
    """The value of the sample `series` (name{labels} as exposed), or None."""
    match = re.search("^%s (\\S+)$" % re.escape(series), exposition, re.MULTILINE)
    return float(match.group(1)) if match else None


class MetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_requests_are_counted_by_model_version_and_code(self):
        ok = run("load", "--target", self.server.grpc, "--model", "digits", "-n", "7", "-c", "1")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        code, text = self.server.get("/metrics")
        self.assertEqual(code, 200)
        self.assertGreaterEqual(sample(text, 'onnxserve_requests_total{code="OK",model="digits",version="1"}'), 7)
        self.assertGreaterEqual(
            sample(text, 'onnxserve_request_duration_seconds_count{model="digits",version="1"}'), 7)
        self.assertEqual(sample(text, 'onnxserve_model_ready{model="digits",version="1"}'), 1)
        self.assertEqual(sample(text, 'onnxserve_queue_depth{model="digits",version="1"}'), 0)
        executions = sample(text, 'onnxserve_batch_executions_total{model="digits",version="1"}')
        inferences = sample(text, 'onnxserve_inferences_total{model="digits",version="1"}')
        self.assertGreaterEqual(inferences, 7)
        self.assertTrue(1 <= executions <= inferences, (executions, inferences))
        self.assertEqual(sample(text, 'onnxserve_batch_size_sum{model="digits",version="1"}'), inferences)
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"):
            self.assertGreater(sample(text, name), 0, name)

    def test_unknown_model_is_counted_as_not_found(self):
        # A JSON request skips ModelMetadata (which would fail first), so the ModelInfer calls are made.
        with tempfile.NamedTemporaryFile("w", suffix=".json") as request:
            request.write('{"inputs": [{"name": "pixels", "datatype": "FP32", "shape": [1, 1]}],'
                          ' "raw_input_contents": ["AAAAAA=="]}')
            request.flush()
            result = run("load", "--target", self.server.grpc, "--model", "no_such_model", "-n", "3",
                         "--input", request.name)
        self.assertEqual(result.returncode, 0, result.stderr)
        _, text = self.server.get("/metrics")
        # Clients choose the names: unknown models share one series instead of minting one per name.
        self.assertEqual(sample(text, 'onnxserve_requests_total{code="NOT_FOUND",model="",version=""}'), 3)
        self.assertNotIn("no_such_model", text)

    def test_example_client_classifies_and_its_rows_are_counted(self):
        _, before = self.server.get("/metrics")
        rows_before = sample(before, 'onnxserve_inferences_total{model="digits",version="1"}') or 0
        client = subprocess.run([sys.executable, str(ROOT / "examples" / "client.py"), "--addr", self.server.grpc,
                                 "--count", "10"], capture_output=True, text=True, timeout=120)
        self.assertEqual(client.returncode, 0, client.stderr)
        accuracy = float(re.search(r"accuracy: ([0-9.]+)", client.stdout).group(1))
        self.assertGreaterEqual(accuracy, 0.8, client.stdout)  # the model scores ~0.97 on held-out digits
        _, after = self.server.get("/metrics")
        self.assertEqual(sample(after, 'onnxserve_inferences_total{model="digits",version="1"}') - rows_before, 10)

    def test_health_endpoints(self):
        self.assertEqual(self.server.get("/v2/health/live")[0], 200)
        self.assertEqual(self.server.get("/v2/health/ready")[0], 200)
        self.assertEqual(self.server.get("/v2/models/digits/ready")[0], 200)
        self.assertEqual(self.server.get("/v2/models/digits/versions/1/ready")[0], 200)
        self.assertEqual(self.server.get("/v2/models/digits/versions/9/ready")[0], 503)
        self.assertEqual(self.server.get("/v2/models/no_such_model/ready")[0], 503)
        self.assertEqual(self.server.get("/v2/models/digits/no_such_endpoint")[0], 404)


if __name__ == "__main__":
    unittest.main()
