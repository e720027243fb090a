#!/usr/bin/python3
"""A/B of two `onnxserve` binaries as servers: CPU time and context switches per request.

On a machine that other work shares, wall-clock throughput moves by tens of percent between runs; what a change
to the server costs shows in its own CPU time per request, and only in rounds that alternate the binaries. Each
round starts each server in turn (the order flips every round) on the 784-512-512-10 MLP with and without dynamic
batching (examples/make_mlp.py; 2 ms max queue delay), warms it up, and runs `onnxserve load` for each case
while `perf stat -p` counts the server's task-clock and context switches, and a second `perf stat` those of the
load generator (always binary A's, so that only the server differs).
Prints median [min-max] per binary and of the paired ratios B/A. Needs perf (root, or perf_event_paranoid <= 1).

Suites (--suite):
  latency  batch 1 at concurrency 64 and 1, with and without batching, over gRPC (the default)
  batch32  batch 32 without batching at concurrency 4 and 8 over gRPC, and at 4 over REST with binary data;
           each round also runs the in-process `onnxserve bench` (binary A's) on the same model and batch, and
           reports served rows/s over its rows/s (docs/server.md, "served vs in-process at batch 32")

Usage: /usr/bin/python3 tools/serve_ab.py A_BINARY B_BINARY [--suite latency|batch32] [--rounds 5]
       [--requests64 20000] [--requests1 3000] [--requests32 3000]
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
# A load run: (protocol, model, concurrency, batch); its request count comes from the command line.
SUITES = {
    "latency": [("grpc", "mlp_on", 64, 1), ("grpc", "mlp_off", 64, 1), ("grpc", "mlp_on", 1, 1),
                ("grpc", "mlp_off", 1, 1)],
    "batch32": [("grpc", "mlp_off", 4, 32), ("grpc", "mlp_off", 8, 32), ("http", "mlp_off", 4, 32)],
}
METRICS = [("server_us", "server CPU us/request"), ("server_cs", "server context switches/request"),
           ("client_us", "load generator CPU us/request"), ("client_cs", "load generator context switches/request"),
           ("rps", "requests/s"), ("p50_us", "p50 us")]
BENCH_METRIC = ("vs_bench", "served rows/s / in-process bench rows/s")


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


def free_ports(count):
    """`count` distinct free ports: the sockets stay bound until all are picked, or the system may hand one
    out twice."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def perf_counts(path):
    """task-clock in microseconds and context switches from `perf stat -x,` output."""
    counts = {}
    for line in pathlib.Path(path).read_text().splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in ("task-clock", "context-switches"):
            counts[fields[2]] = float(fields[0])
    return counts["task-clock"] * 1000, counts["context-switches"]


def load_command(client, ports, case, requests):
    """The `onnxserve load` command line of `case` against the server listening on `ports` ({protocol: port})."""
    protocol, model, concurrency, batch = case
    command = [client, "load", "--target", "127.0.0.1:%d" % ports[protocol], "--model", model,
               "-c", str(concurrency), "-n", str(requests), "--batch", str(batch)]
    return command + (["--protocol", "http", "--binary-data"] if protocol == "http" else [])


def requests_of(case, sizes):
    """Requests to send in `case`: by its batch when batched, else by its concurrency."""
    _, _, concurrency, batch = case
    return sizes[batch] if batch > 1 else sizes[concurrency]


def bench_rows_per_second(client, repository, batch):
    """Rows/s of the in-process `onnxserve bench` on mlp_off's model, one thread, as the server runs it."""
    out = subprocess.run([client, "bench", str(repository / "mlp_off" / "1" / "model.onnx"), "--batch", str(batch),
                          "--iterations", "1500", "--threads", "1"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["items_per_second"]


def wait_until_serving(proc, client, ports):
    """Returns once both models answer; raises if the server exits first or takes over a minute (a loaded
    machine can take seconds)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if all(subprocess.run(load_command(client, ports, (protocol, model, 1, 1), 1), capture_output=True).returncode
               == 0 for protocol in ports for model in ("mlp_on", "mlp_off")):
            return
        time.sleep(0.2)
    raise RuntimeError("the server (%s) did not serve both models over gRPC and REST (exit status %s)"
                       % (proc.args[0], proc.poll()))


def measure(server, client, repository, cases, sizes, work):
    """One server start: {case: {metric: value}}."""
    ports = dict(zip(("grpc", "http"), free_ports(2)))
    # On loopback only: a wildcard listener also collides with the loopback connections that other work left
    # in TIME-WAIT on its port, which the free port we picked on 127.0.0.1 does not.
    proc = subprocess.Popen([server, "serve", "--model-repository", str(repository), "--address", "127.0.0.1",
                             "--grpc-port", str(ports["grpc"]), "--http-port", str(ports["http"]),
                             "--metrics-port", "-1", "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_serving(proc, client, ports)
        for case in cases:  # warm-up
            subprocess.run(load_command(client, ports, case, 500), check=True, capture_output=True)
        results = {}
        for case in cases:
            server_stat, client_stat = work / "server.perf", work / "client.perf"
            perf = subprocess.Popen(["perf", "stat", "-x,", "-e", "task-clock,context-switches", "-p", str(proc.pid),
                                     "-o", str(server_stat)])
            time.sleep(0.2)  # perf attached before the first request
            out = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock,context-switches", "-o", str(client_stat)]
                                 + load_command(client, ports, case, requests_of(case, sizes)),
                                 check=True, capture_output=True, text=True).stdout
            perf.send_signal(signal.SIGINT)
            perf.wait()
            report = json.loads(out.strip().splitlines()[-1])
            ok = report["ok"]
            server_us, server_cs = perf_counts(server_stat)
            client_us, client_cs = perf_counts(client_stat)
            results[case] = {"server_us": server_us / ok, "server_cs": server_cs / ok,
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
    parser.add_argument("--suite", choices=sorted(SUITES), default="latency")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests64", type=int, default=20000)
    parser.add_argument("--requests1", type=int, default=3000)
    parser.add_argument("--requests32", type=int, default=3000)
    args = parser.parse_args()
    binaries = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
    cases = SUITES[args.suite]
    sizes = {64: args.requests64, 1: args.requests1, 32: args.requests32}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        repository = work / "models"
        repository.mkdir()
        make_repository(repository)
        rounds, loads, benches = [], [], []
        for r in range(args.rounds):
            order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
            measured, bench = {}, None
            try:
                for label in order:
                    measured[label] = measure(binaries[label], binaries["A"], repository, cases, sizes, work)
                    if label == order[0] and args.suite == "batch32":  # between the two servers
                        bench = bench_rows_per_second(binaries["A"], repository, 32)
            except (RuntimeError, subprocess.CalledProcessError) as e:  # a whole round or none: pairs stay pairs
                print("round %d of %d failed, left out: %s" % (r + 1, args.rounds, e), flush=True)
                continue
            rounds.append(measured)
            if bench is not None:
                benches.append(bench)
            loads.append(os.getloadavg()[0])
            print("round %d of %d done, load average %.1f" % (r + 1, args.rounds, loads[-1]), flush=True)
    if not rounds:
        raise SystemExit("no round completed")
    print("A = %s\nB = %s\n%d rounds, load average %s" % (binaries["A"], binaries["B"], len(rounds), spread(loads)))
    if benches:
        print("in-process bench, batch 32: %s rows/s" % spread(benches))
        for r, bench in zip(rounds, benches):
            for label in r:
                for case, values in r[label].items():
                    values[BENCH_METRIC[0]] = values["rps"] * case[3] / bench
    metrics = METRICS + ([BENCH_METRIC] if benches else [])
    for case in cases:
        print("\n%s %s, concurrency %d, batch %d" % case)
        for key, title in metrics:
            a = [r["A"][case][key] for r in rounds]
            b = [r["B"][case][key] for r in rounds]
            print("  %-42s A %-24s B %-24s B/A %s" % (title, spread(a), spread(b),
                                                       spread([y / x for x, y in zip(a, b)])))


if __name__ == "__main__":
    main()
