#!/usr/bin/python3
"""The benchmark set's models (tools/ort_compare/suite.py) are valid ONNX that onnxserve loads and runs:
each generator writes its model (onnx.checker runs inside the generators), `onnxserve check` must exit 0,
and one `onnxserve bench` iteration must run on the inputs make_inputs.py writes for the suite.
light_resnet50 comes from ../shared/onnx-tests and is skipped, with a message, where that is absent.
Exits 77 (skipped) when numpy or onnx is missing.

Usage: ort_compare_models_test.py --onnxserve build/cli/onnxserve [--shared-light DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy  # noqa: F401 (the generators need it)
    import onnx  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {e.name} is not installed (Debian: python3-numpy python3-onnx)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(ROOT, "tools", "ort_compare"))
import suite  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxserve", required=True)
    parser.add_argument("--shared-light", default=os.path.join(ROOT, "..", "shared", "onnx-tests", "data", "light"))
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="ort-compare-models-") as out:
        ready = suite.generate(suite.MODELS, out, args.shared_light)
        for model, path, inputs in ready:
            for argv in ([args.onnxserve, "check", path],
                         [args.onnxserve, "bench", path, "--inputs-dir", inputs, "--iterations", "1",
                          "--warmup", "0"]):
                result = subprocess.run(argv, capture_output=True, text=True)
                if result.returncode != 0:
                    failures.append(f"{model.name}: `{' '.join(argv[1:3])}` exited with {result.returncode}:\n"
                                    f"{result.stdout[-1500:]}{result.stderr[-1500:]}")
            print(f"{model.name}: ok ({os.path.basename(path)})")
    skipped = [m.name for m in suite.MODELS if m.name not in {m.name for m, _, _ in ready}]
    if skipped:
        print(f"SKIPPED {', '.join(skipped)}: not found under {args.shared_light}")
    for failure in failures:
        print(f"FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
