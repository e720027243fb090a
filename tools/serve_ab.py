#!/usr/bin/python3
"""A/B of two `onnxserve` binaries as gRPC servers: CPU time and context switches per request.

On a machine that other work shares, wall-clock throughput moves by tens of percent between runs; what a change
to the server costs shows in its own CPU time per request, and only in rounds that alternate the binaries. Each
round starts each server in turn (the order flips every round) on the 784-512-512-10 MLP with and without dynamic
batching (examples/make_mlp.py; 2 ms max queue delay), warms it up, and runs `onnxserve load` at each
concurrency while `perf stat -p` counts the server's task-clock and context switches, and a second
`perf stat` those of the load generator (always binary A's, so that only the server differs).
Prints median [min-max] per binary and of the paired ratios B/A. Needs perf (root, or perf_event_paranoid <= 1).

Usage: /usr/bin/python3 tools/serve_ab.py A_BINARY B_BINARY [--rounds 5] [--requests64 20000] [--requests1 3000]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = [("mlp_on", 64), ("mlp_off", 64), ("mlp_on", 1), ("mlp_off", 1)]
METRICS = [("server_us", "server CPU us/request"), ("server_cs", "server context switches/request"),
           ("client_us", "load generator CPU us/request"), ("client_cs", "load generator context switches/request"),
           ("rps", "requests/s"), ("p50_us", "p50 us")]


def make_repository(root):
    """Writes root/mlp_on (dynamic batching, 2 ms max queue delay) and root/mlp_off (none), and nothing else."""
    for name, extra in (("mlp_on", []), ("mlp_off", ["--no-batching"])):
        with tempfile.TemporaryDirectory() as out:
            subprocess.run(["/usr/bin/python3", str(ROOT / "examples/make_mlp.py"), out, "--sizes", "784,512,512,10"]
                           + extra, check=True, stdout=subprocess.DEVNULL)
            shutil.move(os.path.join(out, "mlp"), root / name)
        config = root / name / "config.pbtxt"
        text = config.read_text().replace('name: "mlp"', 'name: "%s"' % name)
        config.write_text(re.sub(r"max_queue_delay_microseconds: \d+", "max_queue_delay_microseconds: 2000", text))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def perf_counts(path):
    """task-clock in microseconds and context switches from `perf stat -x,` output."""
    counts = {}
    for line in pathlib.Path(path).read_text().splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in ("task-clock", "context-switches"):
            counts[fields[2]] = float(fields[0])
    return counts["task-clock"] * 1000, counts["context-switches"]


def load(client, port, model, concurrency, requests):
    return subprocess.run([client, "load", "--target", "127.0.0.1:%d" % port, "--model", model,
                           "-c", str(concurrency), "-n", str(requests)], check=True, capture_output=True, text=True)


def measure(server, client, repository, sizes, work):
    """One server start: {(model, concurrency): {metric: value}}."""
    port = free_port()
    proc = subprocess.Popen([server, "serve", "--model-repository", str(repository), "--grpc-port", str(port),
                             "--http-port", "-1", "--metrics-port", "-1", "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if subprocess.run([client, "load", "--target", "127.0.0.1:%d" % port, "--model", "mlp_on", "-n", "1"],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        for model in ("mlp_on", "mlp_off"):
            load(client, port, model, 64, 2000)
        results = {}
        for model, concurrency in CASES:
            server_stat, client_stat = work / "server.perf", work / "client.perf"
            perf = subprocess.Popen(["perf", "stat", "-x,", "-e", "task-clock,context-switches", "-p", str(proc.pid),
                                     "-o", str(server_stat)])
            time.sleep(0.2)  # perf attached before the first request
            out = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock,context-switches", "-o", str(client_stat),
                                  client, "load", "--target", "127.0.0.1:%d" % port, "--model", model,
                                  "-c", str(concurrency), "-n", str(sizes[concurrency])],
                                 check=True, capture_output=True, text=True).stdout
            perf.send_signal(signal.SIGINT)
            perf.wait()
            report = json.loads(out.strip().splitlines()[-1])
            ok = report["ok"]
            server_us, server_cs = perf_counts(server_stat)
            client_us, client_cs = perf_counts(client_stat)
            results[(model, concurrency)] = {"server_us": server_us / ok, "server_cs": server_cs / ok,
                                             "client_us": client_us / ok, "client_cs": client_cs / ok,
                                             "rps": report["rps"], "p50_us": report["p50_ms"] * 1000}
        return results
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def spread(values):
    values = sorted(values)
    number = lambda v: "%.0f" % v if v >= 1000 else "%.3g" % v
    return "%s [%s-%s]" % (number(statistics.median(values)), number(values[0]), number(values[-1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests64", type=int, default=20000)
    parser.add_argument("--requests1", type=int, default=3000)
    args = parser.parse_args()
    binaries = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
    sizes = {64: args.requests64, 1: args.requests1}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        repository = work / "models"
        repository.mkdir()
        make_repository(repository)
        rounds, loads = [], []
        for r in range(args.rounds):
            order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
            rounds.append({label: measure(binaries[label], binaries["A"], repository, sizes, work) for label in order})
            loads.append(os.getloadavg()[0])
            print("round %d of %d done, load average %.1f" % (r + 1, args.rounds, loads[-1]), flush=True)
    print("A = %s\nB = %s\n%d rounds, load average %s" % (binaries["A"], binaries["B"], args.rounds, spread(loads)))
    for case in CASES:
        print("\n%s, concurrency %d" % case)
        for key, title in METRICS:
            a = [r["A"][case][key] for r in rounds]
            b = [r["B"][case][key] for r in rounds]
            print("  %-42s A %-24s B %-24s B/A %s" % (title, spread(a), spread(b),
                                                       spread([y / x for x, y in zip(a, b)])))


if __name__ == "__main__":
    main()
