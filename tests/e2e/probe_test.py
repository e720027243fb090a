#!/usr/bin/python3
"""onnxserve probe's exit status, the contract Docker's HEALTHCHECK relies on: 0 only when SERVING.

Run: ONNXSERVE_BIN=build/cli/onnxserve /usr/bin/python3 tests/e2e/probe_test.py
"""
import socket
import unittest

from metrics_test import ServerProcess, run


def closed_port():
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ProbeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def probe(self, *args):
        return run("probe", "--timeout-ms", "3000", *args, timeout=30)

    def test_serving_server_exits_0(self):
        result = self.probe("--addr", self.server.grpc)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("SERVING", result.stdout)

    def test_serving_model_exits_0(self):
        result = self.probe("--addr", self.server.grpc, "--model", "digits")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("model digits: SERVING", result.stdout)

    def test_unknown_model_exits_1(self):
        result = self.probe("--addr", self.server.grpc, "--model", "no_such_model")
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("NOT_FOUND", result.stdout)

    def test_no_server_exits_1(self):
        result = self.probe("--addr", "127.0.0.1:%d" % closed_port())
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("UNAVAILABLE", result.stdout)

    def test_stopped_server_exits_1(self):
        with ServerProcess() as server:
            self.assertEqual(self.probe("--addr", server.grpc).returncode, 0)
            server.stop()
            self.assertEqual(self.probe("--addr", server.grpc).returncode, 1)

    def test_bad_option_exits_2(self):
        self.assertEqual(self.probe("--bogus", "1").returncode, 2)


if __name__ == "__main__":
    unittest.main()
