#!/usr/bin/python3
"""Differential test of operator values: random single-node models (cases/) run by ONNX Runtime
(ort_run.js) and by `onnxserve run` on each ISA path, outputs compared per type (integers and booleans
exactly, floats within the case's tolerance, NaN equal to NaN).

  /usr/bin/python3 tools/difftest/difftest.py [--families a,b] [--seed S] [--isas native,avx2] [--work DIR]

Env: ONNXSERVE (default build/cli/onnxserve). Needs `npm install --ignore-scripts` in tools/ort_compare.
Prints each mismatch (case folder, model, first differing elements) and a count per family.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

import cases

# The generators draw out-of-range and special values on purpose; numpy's warnings about them are noise.
warnings.filterwarnings("ignore", category=RuntimeWarning)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ORT_TYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int8": np.int8,
             "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
             "int64": np.int64, "uint64": np.uint64, "bool": np.bool_}


def write_case(case, folder):
    os.makedirs(folder, exist_ok=True)
    onnx.save(case.model(), os.path.join(folder, "model.onnx"))
    for k, tensor in enumerate(case.feeds()):
        with open(os.path.join(folder, f"input_{k}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())
    with open(os.path.join(folder, "case.txt"), "w") as f:
        f.write(case.describe() + "\n")


def ort_outputs(folder):
    error = os.path.join(folder, "ort", "error.txt")
    if os.path.exists(error):
        return None, open(error).read().strip()
    outs = []
    for k, meta in enumerate(json.load(open(os.path.join(folder, "ort", "outputs.json")))):
        if meta["type"] == "string":
            outs.append(np.array(meta["strings"], dtype=object).reshape(meta["dims"]))
            continue
        data = np.fromfile(os.path.join(folder, "ort", f"output_{k}.bin"), dtype=ORT_TYPES[meta["type"]])
        outs.append(data.reshape(meta["dims"]))
    return outs, None


def our_outputs(onnxserve, folder, isa, count):
    out_dir = os.path.join(folder, f"ours_{isa}")
    env = dict(os.environ)
    env.pop("ONNXSERVE_ISA", None)
    if isa != "native":
        env["ONNXSERVE_ISA"] = isa
    proc = subprocess.run([onnxserve, "run", os.path.join(folder, "model.onnx"), "--inputs-dir", folder,
                           "--outputs-dir", out_dir, "--threads", "1"], env=env, capture_output=True, text=True,
                          timeout=60)
    if proc.returncode != 0:
        return None, (proc.stderr.strip() or f"exit {proc.returncode}")[-400:]
    outs = []
    for k in range(count):
        t = onnx.TensorProto()
        t.ParseFromString(open(os.path.join(out_dir, f"output_{k}.pb"), "rb").read())
        outs.append(numpy_helper.to_array(t))
    return outs, None


def differences(ours, theirs, rtol, atol):
    """Empty when equal, else a short description of the first differences."""
    if ours.shape != theirs.shape:
        return f"shape {list(ours.shape)} vs ORT {list(theirs.shape)}"
    if ours.dtype != theirs.dtype:
        return f"dtype {ours.dtype} vs ORT {theirs.dtype}"
    if ours.dtype == object:
        bad = [i for i, (a, b) in enumerate(zip(ours.ravel(), theirs.ravel())) if a != b]
    elif np.issubdtype(ours.dtype, np.floating):
        a, b = ours.astype(np.float64).ravel(), theirs.astype(np.float64).ravel()
        close = (np.abs(a - b) <= atol + rtol * np.abs(b)) | (np.isnan(a) & np.isnan(b)) | (a == b)
        bad = list(np.nonzero(~close)[0])
    else:
        bad = list(np.nonzero(ours.ravel() != theirs.ravel())[0])
    if not bad:
        return ""
    shown = ", ".join(f"[{np.unravel_index(i, ours.shape) if ours.ndim else ()}] ours {ours.ravel()[i]!r} "
                      f"ORT {theirs.ravel()[i]!r}" for i in bad[:4])
    return f"{len(bad)}/{ours.size} differ: {shown}"


def compare_case(case, folder, onnxserve, isas):
    theirs, ort_error = ort_outputs(folder)
    problems, compared = [], False
    for isa in isas:
        ours, our_error = our_outputs(onnxserve, folder, isa, len(case.out_types))
        if ort_error and our_error:
            continue
        if ort_error:
            if "Could not find an implementation" not in ort_error:  # not a type ORT has a kernel for
                problems.append(f"{isa}: ORT fails ({ort_error[:300]}), we run")
            continue
        if our_error:
            problems.append(f"{isa}: we fail ({our_error}), ORT runs")
            continue
        compared = True
        for k, (a, b) in enumerate(zip(ours, theirs)):
            diff = differences(a, b, case.rtol, case.atol)
            if diff:
                problems.append(f"{isa}: output {k}: {diff}")
    return merge_isas(problems), ort_error is not None, compared


def merge_isas(problems):
    """One line per problem, naming every ISA path that has it."""
    by_message = collections.defaultdict(list)
    for problem in problems:
        isa, message = problem.split(": ", 1)
        by_message[message].append(isa)
    return [f"{','.join(isas)}: {message}" for message, isas in by_message.items()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--families", default=",".join(cases.FAMILIES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--isas", default="native,avx2")
    parser.add_argument("--work", default="")
    args = parser.parse_args()
    onnxserve = os.environ.get("ONNXSERVE", os.path.join(ROOT, "build", "cli", "onnxserve"))
    work = args.work or tempfile.mkdtemp(prefix="difftest.")
    rng = np.random.default_rng(args.seed)
    generated = []
    for family in args.families.split(","):
        for n, case in enumerate(cases.FAMILIES[family](rng)):
            folder = os.path.join(work, family, f"{n:04d}_{case.op}")
            write_case(case, folder)
            generated.append((case, folder))
    listing = os.path.join(work, "cases.txt")
    with open(listing, "w") as f:
        f.write("\n".join(folder for _, folder in generated) + "\n")
    subprocess.run(["node", os.path.join(HERE, "ort_run.js"), "@" + listing], check=True)
    stats = collections.defaultdict(collections.Counter)
    for case, folder in generated:
        problems, ort_failed, compared = compare_case(case, folder, onnxserve, args.isas.split(","))
        stats[case.family]["cases"] += 1
        stats[case.family]["ort_error"] += ort_failed
        stats[case.family]["mismatch"] += bool(problems)
        stats[case.family]["compared"] += compared
        if problems:
            print(f"MISMATCH {folder}\n  {case.describe()}\n  " + "\n  ".join(problems), flush=True)
    print(f"\nwork dir: {work}")
    for family, c in stats.items():
        print(f"{family:16s} cases {c['cases']:4d}  values compared {c['compared']:4d}  mismatches {c['mismatch']:4d}  "
              f"ORT errors {c['ort_error']:4d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
