#!/usr/bin/python3
"""The benchmark set of issue #11: onnxserve against ONNX Runtime (onnxruntime-node) on one model of each
class we serve, at 1 and 2 threads, on each of onnxserve's ISA paths this CPU has. Prints a markdown table
(p50 of each runtime as the median of rounds with its range, the ratio onnxserve/ORT, load time, peak
RSS) and the geometric mean of the ratios per (threads, ISA).

  /usr/bin/python3 tools/ort_compare/suite.py [--out DIR] [--models a,b] [--json FILE]
  /usr/bin/python3 tools/ort_compare/suite.py --report RUN1.json RUN2.json ...   # rounds of several runs

Env: ONNXSERVE (default build/cli/onnxserve), ROUNDS (3), ITERATIONS (overrides every model's default
count), ITER_SCALE (scales the defaults, 1), THREADS ("1 2"), ISAS (default: avx512 and avx2 where the
CPU has them; add baseline to time the portable path), SHARED_LIGHT (the light models, default
../shared/onnx-tests/data/light beside the repository). Needs `npm install` in tools/ort_compare once.

Each round runs ORT once and onnxserve once per ISA for a (model, threads) pair, in an order that
rotates from round to round, all on the same input_K.pb files, so slow spells of a shared machine fall
on every runtime alike. ONNXSERVE_ISA lowers onnxserve's path; ORT's AVX2 path on an AVX-512 CPU comes
from ort_avx2.py's copy of onnxruntime-node (XCR0 read as an AVX2-only CPU's), so the avx2 rows compare
both runtimes' AVX2 kernels (ORT_AVX2=0 keeps ORT at its best instead). ORT has no portable path: the
baseline rows compare with ORT at its best. Peak RSS is each bench
process's ru_maxrss (for ORT it includes node itself; the footer gives both runtimes' empty-process RSS).
Load time is each runtime's own `load_ms` (model read, optimized, weights packed); an onnxserve without
that field is timed from outside instead, as a one-iteration run's wall time less that iteration and
less the process start-up of a bench that fails at once.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import ort_avx2

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"


class Model:
    """One row group of the table: how to make the model, which batch, how many iterations by default."""

    def __init__(self, name, label, batch, iterations, generate=None, shared=None):
        self.name, self.label, self.batch, self.iterations = name, label, batch, iterations
        self.generate = generate  # argv after the python interpreter, with {out} for the model path
        self.shared = shared  # file name under SHARED_LIGHT

    def path(self, out_dir):
        return os.path.join(out_dir, f"{self.name}.onnx")


# Default iterations put about one to two seconds of timed runs in each bench process on this 2-core
# machine's AVX-512 path; ITERATIONS or ITER_SCALE change them.
MODELS = [
    Model("resnet50", "light_resnet50 (224x224)", 1, 40, shared="light_resnet50.onnx"),
    Model("mobilenet", "MobileNetV3-like, depthwise + SE + HardSwish (224x224)", 1, 150,
          generate=["make_mobilenet.py", "{out}"]),
    Model("mlp_b1", "MLP 784-512-512-10", 1, 10000, generate=["make_mlp.py", "{out}"]),
    Model("mlp_b64", "MLP 784-512-512-10", 64, 2000, generate=["make_mlp.py", "{out}"]),
    Model("transformer", "transformer encoder, 2 layers, seq 128, hidden 256, primitive LayerNorm/GELU", 1,
          400, generate=["make_transformer.py", "{out}", "--layers", "2", "--seq", "128", "--hidden", "256"]),
    Model("lstm", "LSTM 2x128, 50 steps x 40 features, classifier", 1, 3000, generate=["make_lstm.py", "{out}"]),
    Model("kws", "DS-CNN keyword spotting, 49x10 MFCC", 1, 10000, generate=["make_kws.py", "{out}"]),
]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def cpu_isas():
    """onnxserve's ISA paths this CPU can run, best first (the dispatcher's own test, runtime/math/isa.cc)."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
                break
    isas = []
    if "avx512f" in flags:
        isas.append("avx512")
    if "avx2" in flags and "fma" in flags:
        isas.append("avx2")
    return isas


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def run_process(argv, env=None):
    """Runs argv to completion; returns (exit status, stdout, stderr, wall seconds, peak RSS in MiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read().decode(), err.read().decode(), wall, usage.ru_maxrss / 1024.0


def last_json(text, what):
    lines = [line for line in text.strip().splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"{what}: no JSON summary in its output:\n{text[-2000:]}")
    return json.loads(lines[-1])


class Runner:
    def __init__(self, onnxserve, rounds, warmup_fraction=0.1):
        self.onnxserve = onnxserve
        self.rounds = rounds
        self.warmup_fraction = warmup_fraction
        self.startup_s = None

    def env(self, isa=None, ort_package=None):
        env = dict(os.environ)
        env.pop("ONNXSERVE_ISA", None)
        if isa:
            env["ONNXSERVE_ISA"] = isa
        if ort_package:
            env["ORT_NODE_PACKAGE"] = ort_package
        return env

    def onnxserve_startup(self):
        """Median wall time and peak RSS of an onnxserve bench that fails at once (no such model)."""
        walls, rss = [], []
        for _ in range(5):
            _, _, _, wall, peak = run_process([self.onnxserve, "bench", "/nonexistent.onnx"], self.env())
            walls.append(wall)
            rss.append(peak)
        return statistics.median(walls), statistics.median(rss)

    def bench(self, runtime, model_path, inputs, threads, iterations, isa=None, ort_package=None):
        warmup = max(3, int(iterations * self.warmup_fraction))
        common = ["--inputs-dir", inputs, "--threads", str(threads), "--iterations", str(iterations),
                  "--warmup", str(warmup)]
        if runtime == "ort":
            argv = ["node", os.path.join(HERE, "bench.js"), model_path] + common
        else:
            argv = [self.onnxserve, "bench", model_path] + common
        code, out, err, wall, rss = run_process(argv, self.env(isa, ort_package))
        what = f"{runtime}{'@' + isa if isa else ''} on {os.path.basename(model_path)}"
        if code != 0:
            raise RuntimeError(f"{what} exited with {code}:\n{err[-2000:]}")
        summary = last_json(out, what)
        load_ms = summary.get("load_ms")
        if load_ms is None:
            load_ms = self.outside_load_ms(model_path, inputs, threads, isa)
        return {"p50_ms": summary["p50_ms"], "load_ms": load_ms, "rss_mib": rss}

    def outside_load_ms(self, model_path, inputs, threads, isa):
        """For an onnxserve bench without load_ms: one run's wall time less the run and the start-up."""
        if self.startup_s is None:
            self.startup_s, _ = self.onnxserve_startup()
        argv = [self.onnxserve, "bench", model_path, "--inputs-dir", inputs, "--threads", str(threads),
                "--iterations", "1", "--warmup", "0"]
        code, out, err, wall, _ = run_process(argv, self.env(isa))
        if code != 0:
            raise RuntimeError(f"onnxserve bench (load probe) exited with {code}:\n{err[-2000:]}")
        run_ms = last_json(out, "onnxserve bench (load probe)")["max_ms"]
        return max(0.0, (wall - self.startup_s) * 1000.0 - run_ms)


def fmt_ms(values):
    med, lo, hi = statistics.median(values), min(values), max(values)
    digits = 3 if med < 1 else 2 if med < 10 else 1
    return f"{med:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def generate(models, out_dir, shared_light):
    """Writes each model and its inputs into out_dir; returns the models that exist (skipping with a reason)."""
    ready = []
    for m in models:
        path = m.path(out_dir)
        if m.shared:
            source = os.path.join(shared_light, m.shared)
            if not os.path.exists(source):
                log(f"suite: skipping {m.name}: {source} is missing (the ONNX backend test data, ../shared)")
                continue
            path = source  # read in place: nothing of ../shared is copied
        elif not os.path.exists(path):
            argv = [PYTHON, os.path.join(HERE, m.generate[0])] + [a.format(out=path) for a in m.generate[1:]]
            subprocess.run(argv, check=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        inputs = os.path.join(out_dir, f"{m.name}_inputs")
        if not os.path.isdir(inputs):
            subprocess.run([PYTHON, os.path.join(HERE, "make_inputs.py"), path, inputs, "--batch", str(m.batch)],
                           check=True)
        ready.append((m, path, inputs))
    return ready


def measure(runner, ready, threads_list, isas, iterations_of, ort_avx2_package=None):
    """One dict per (model, threads, isa) with every round's figures; a runtime's failure becomes `error`.
    With ort_avx2_package, the avx2 rows take ORT's runs on that copy, the others ORT's own dispatch."""
    ort_of = {isa: "ort-avx2" if isa == "avx2" and ort_avx2_package else "ort" for isa in isas}
    packages = {"ort": None, "ort-avx2": ort_avx2_package}
    orts = sorted(set(ort_of.values()))
    results = []
    for m, path, inputs in ready:
        iterations = iterations_of(m)
        for threads in threads_list:
            row = {"model": m.name, "label": m.label, "batch": m.batch, "threads": threads, "iterations": iterations}
            order = orts + isas
            runs = {who: [] for who in order}
            try:
                for r in range(runner.rounds):
                    rotated = order[r % len(order):] + order[:r % len(order)]
                    for who in rotated:
                        if who in packages:
                            runs[who].append(runner.bench("ort", path, inputs, threads, iterations,
                                                          ort_package=packages[who]))
                        else:
                            runs[who].append(runner.bench("onnxserve", path, inputs, threads, iterations, isa=who))
                    log(f"suite: {m.name} threads={threads} round {r + 1}/{runner.rounds}: "
                        + ", ".join(f"{who} {runs[who][-1]['p50_ms']:.4g} ms" for who in order))
            except RuntimeError as e:
                log(f"suite: {m.name} threads={threads}: {e}")
                results += [dict(row, isa=isa, error=str(e).splitlines()[0]) for isa in isas]
                continue
            results += [summarize(dict(row, isa=isa, ort_isa="avx2" if ort_of[isa] == "ort-avx2" else "best",
                                       onnxserve=runs[isa], ort=runs[ort_of[isa]])) for isa in isas]
    return results


def summarize(row):
    """Adds the ratio of the medians of rounds and each round's own ratio (rounds pair up by index)."""
    ours = [x["p50_ms"] for x in row["onnxserve"]]
    theirs = [x["p50_ms"] for x in row["ort"]]
    row["ratio"] = statistics.median(ours) / statistics.median(theirs)
    row["round_ratios"] = [a / b for a, b in zip(ours, theirs)]
    return row


def merge(files):
    """The rows of several --json files, each (model, threads, isa) with the rounds of all of them."""
    merged = {}
    for name in files:
        with open(name) as f:
            for row in json.load(f)["results"]:
                key = (row["model"], row["threads"], row["isa"], row.get("ort_isa", "best"))
                if "error" in row or key not in merged:
                    merged.setdefault(key, row)
                    continue
                if "error" not in merged[key]:
                    merged[key]["onnxserve"] = merged[key]["onnxserve"] + row["onnxserve"]
                    merged[key]["ort"] = merged[key]["ort"] + row["ort"]
    return [row if "error" in row else summarize(row) for row in merged.values()]


def table(results):
    lines = ["| model | batch | threads | onnxserve ISA | ORT ISA | onnxserve p50 ms | ORT p50 ms "
             "| ratio onnxserve/ORT | load ms onnxserve / ORT | peak RSS MiB onnxserve / ORT |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        head = f"| {r['model']} | {r['batch']} | {r['threads']} | {r['isa']} | {r.get('ort_isa', 'best')} |"
        if "error" in r:
            lines.append(f"{head} failed: {r['error']} | | | | |")
            continue
        ratio = f"**{r['ratio']:.2f}** ({min(r['round_ratios']):.2f}-{max(r['round_ratios']):.2f})"
        load = (f"{statistics.median(x['load_ms'] for x in r['onnxserve']):.0f} / "
                f"{statistics.median(x['load_ms'] for x in r['ort']):.0f}")
        rss = f"{max(x['rss_mib'] for x in r['onnxserve']):.0f} / {max(x['rss_mib'] for x in r['ort']):.0f}"
        lines.append(f"{head} {fmt_ms([x['p50_ms'] for x in r['onnxserve']])} | "
                     f"{fmt_ms([x['p50_ms'] for x in r['ort']])} | {ratio} | {load} | {rss} |")
    return "\n".join(lines)


def geomeans(results):
    lines = ["| threads | onnxserve ISA | ORT ISA | models | geomean ratio onnxserve/ORT |", "|---|---|---|---|---|"]
    keys = sorted({(r["threads"], r["isa"], r.get("ort_isa", "best")) for r in results},
                  key=lambda k: (k[0], k[1] != "avx512", k[1], k[2]))
    for threads, isa, ort_isa in keys:
        ratios = [r["ratio"] for r in results if (r["threads"], r["isa"], r.get("ort_isa", "best")) ==
                  (threads, isa, ort_isa) and "ratio" in r]
        if not ratios:
            continue
        lines.append(f"| {threads} | {isa} | {ort_isa} | {len(ratios)} | **{geomean(ratios):.2f}** |")
    return "\n".join(lines)


def node_baseline_rss():
    argv = ["node", "-e", "require('onnxruntime-node')"]
    code, _, _, _, rss = run_process(argv, dict(os.environ, NODE_PATH=os.path.join(HERE, "node_modules")))
    return rss if code == 0 else None


def ort_avx2_package(isas, available):
    """The onnxruntime-node copy the avx2 rows compare with, or None where plain ORT already runs AVX2
    (a CPU without AVX-512), where ORT_AVX2=0 asks for ORT at its best, or where the copy cannot be made."""
    if "avx2" not in isas or "avx512" not in available or os.environ.get("ORT_AVX2") == "0":
        return None
    try:
        return os.path.basename(ort_avx2.make_avx2_package())
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        log(f"suite: the avx2 rows compare with ORT at its best: no AVX2-only ORT ({e})")
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="keep the generated models and inputs here (default: a temp dir, removed)")
    parser.add_argument("--models", help="comma-separated subset of: " + ",".join(m.name for m in MODELS))
    parser.add_argument("--json", help="also write every round's figures to this file")
    parser.add_argument("--report", nargs="+", metavar="JSON",
                        help="measure nothing: print the table of the rounds of these --json files together")
    args = parser.parse_args()
    if args.report:
        results = merge(args.report)
        print(table(results))
        print()
        print(geomeans(results))
        return

    onnxserve = os.environ.get("ONNXSERVE", os.path.join(ROOT, "build", "cli", "onnxserve"))
    if not os.access(onnxserve, os.X_OK):
        sys.exit(f"suite: no onnxserve binary at {onnxserve}; set ONNXSERVE")
    if not os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        sys.exit("suite: onnxruntime-node is not installed: (cd tools/ort_compare && "
                 "ONNXRUNTIME_NODE_INSTALL=skip npm install)")
    rounds = int(os.environ.get("ROUNDS", "3"))
    threads_list = [int(t) for t in os.environ.get("THREADS", "1 2").split()]
    available = cpu_isas()
    isas = os.environ.get("ISAS", " ".join(available)).split()
    for isa in isas:
        if isa not in available + ["baseline"]:
            sys.exit(f"suite: this CPU has no {isa} path (it has {', '.join(available + ['baseline'])})")
    fixed = os.environ.get("ITERATIONS")
    scale = float(os.environ.get("ITER_SCALE", "1"))

    def iterations_of(m):
        return int(fixed) if fixed else max(5, int(m.iterations * scale))

    models = MODELS
    if args.models:
        wanted = args.models.split(",")
        unknown = set(wanted) - {m.name for m in MODELS}
        if unknown:
            sys.exit(f"suite: unknown models {sorted(unknown)}")
        models = [m for m in MODELS if m.name in wanted]
    shared_light = os.environ.get("SHARED_LIGHT",
                                  os.path.join(ROOT, "..", "shared", "onnx-tests", "data", "light"))

    out_dir = args.out or tempfile.mkdtemp(prefix="onnxserve-suite-")
    os.makedirs(out_dir, exist_ok=True)
    start = time.monotonic()
    with open("/proc/loadavg") as f:
        load_before = " ".join(f.read().split()[:3])
    try:
        ready = generate(models, out_dir, shared_light)
        runner = Runner(onnxserve, rounds)
        results = measure(runner, ready, threads_list, isas, iterations_of, ort_avx2_package(isas, available))
    finally:
        if not args.out:
            shutil.rmtree(out_dir, ignore_errors=True)
    elapsed = time.monotonic() - start

    startup_s, onnxserve_rss = runner.onnxserve_startup()
    ort_version = json.load(open(os.path.join(HERE, "node_modules", "onnxruntime-node", "package.json")))["version"]
    with open("/proc/loadavg") as f:
        load_average = " ".join(f.read().split()[:3])
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores, ISA paths {', '.join(available)}; "
          f"onnxruntime-node {ort_version}; ROUNDS={rounds}; load average {load_before} before, "
          f"{load_average} after; "
          f"{elapsed / 60:.1f} min\n")
    print(table(results))
    print()
    print(geomeans(results))
    node_rss = node_baseline_rss()
    print(f"\nEmpty processes: onnxserve bench (fails at once) {onnxserve_rss:.0f} MiB, {startup_s * 1000:.0f} ms; "
          f"node + require('onnxruntime-node') {node_rss:.0f} MiB.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_model(), "isas": available, "rounds": rounds, "elapsed_s": elapsed,
                       "load_average": [load_before, load_average], "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
