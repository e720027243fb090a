#!/usr/bin/python3
"""tools/serve_ab.py's pieces that need no server: it reads perf's CSV output in the units it reports, writes
the MLP repository with batching in mlp_on only, builds each case's load command, and prints median [min-max]
without exponents.
Exits 77 (skipped) when numpy or onnx is missing (examples/make_mlp.py needs them).
"""
import pathlib
import sys
import tempfile
import unittest

try:
    import numpy  # noqa: F401 (make_mlp.py needs it)
    import onnx  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {e.name} is not installed (Debian: python3-numpy python3-onnx)")
    sys.exit(77)

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, str(ROOT / "tools"))
import serve_ab  # noqa: E402

# `perf stat -x, -e task-clock,context-switches -o FILE` as perf 6 writes it: a comment, a blank line, then
# value,unit,event,run time,percentage,metric,metric unit.
PERF_OUTPUT = """# started on Fri Nov 27 08:00:00 2026

1500.25,msec,task-clock,1500250000,100.00,0.750,CPUs utilized
3000,,context-switches,1500250000,100.00,1.999,K/sec
"""


class ServeAbTest(unittest.TestCase):
    def test_perf_counts_are_microseconds_of_cpu_and_context_switches(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "perf.txt"
            path.write_text(PERF_OUTPUT)
            cpu_us, switches = serve_ab.perf_counts(path)
        self.assertAlmostEqual(cpu_us, 1500250.0)
        self.assertEqual(switches, 3000)

    def test_repository_batches_mlp_on_with_a_2_ms_delay_and_not_mlp_off(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            serve_ab.make_repository(root)
            self.assertEqual(sorted(p.name for p in root.iterdir()), ["mlp_off", "mlp_on"])
            on = (root / "mlp_on" / "config.pbtxt").read_text()
            off = (root / "mlp_off" / "config.pbtxt").read_text()
            self.assertIn('name: "mlp_on"', on)
            self.assertIn("max_queue_delay_microseconds: 2000", on)
            self.assertIn('name: "mlp_off"', off)
            self.assertNotIn("dynamic_batching", off)
            for name in ("mlp_on", "mlp_off"):
                self.assertTrue((root / name / "1" / "model.onnx").is_file())

    def test_load_commands_speak_each_protocol_on_its_port_with_the_case_batch(self):
        ports = {"grpc": 9001, "http": 9000}
        grpc_command = serve_ab.load_command("onnxserve", ports, ("grpc", "mlp_off", 4, 32), 100)
        self.assertEqual(grpc_command, ["onnxserve", "load", "--target", "127.0.0.1:9001", "--model", "mlp_off",
                                        "-c", "4", "-n", "100", "--batch", "32"])
        http_command = serve_ab.load_command("onnxserve", ports, ("http", "mlp_off", 4, 32), 100)
        self.assertEqual(http_command[:4], ["onnxserve", "load", "--target", "127.0.0.1:9000"])
        self.assertEqual(http_command[-3:], ["--protocol", "http", "--binary-data"])

    def test_request_counts_follow_the_batch_when_batched_else_the_concurrency(self):
        sizes = {64: 20000, 1: 3000, 32: 1500}
        self.assertEqual(serve_ab.requests_of(("grpc", "mlp_on", 64, 1), sizes), 20000)
        self.assertEqual(serve_ab.requests_of(("grpc", "mlp_off", 1, 1), sizes), 3000)
        self.assertEqual(serve_ab.requests_of(("grpc", "mlp_off", 4, 32), sizes), 1500)
        self.assertEqual(serve_ab.requests_of(("http", "mlp_off", 8, 32), sizes), 1500)

    def test_spread_is_median_min_max_without_exponents(self):
        self.assertEqual(serve_ab.spread([3.0, 1.0, 2.0]), "2 [1-3]")
        self.assertEqual(serve_ab.spread([25000.4, 18000.0, 20500.0]), "20500 [18000-25000]")
        self.assertEqual(serve_ab.spread([0.125]), "0.125 [0.125-0.125]")


if __name__ == "__main__":
    unittest.main()
