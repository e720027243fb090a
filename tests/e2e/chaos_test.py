#!/usr/bin/python3
"""Chaos test and soak: a real `onnxserve serve --model-control-mode explicit` on loopback, answering concurrent
clients while its models are unloaded, loaded, rewritten and swapped for new versions, then stopped with
SIGTERM in the middle of the load.

Every answer is checked. The models compute a known function of their inputs, and that function depends on the
model version, so an answer is checked against the version it says answered it:

    sum    version v: z = x + y + 100 v, w = x     (x, y FP32 [N, 4]; dynamic batching, 1 ms queue delay)
    affine version v: b = a (v + 1) + 0.5          (a FP32 [N, 3]; no batching, 2 instances)

Inputs are random multiples of 1/64 below 128 in magnitude, so the float32 results are exact and compared for
equality; each request has its own inputs, so an answer that carries another request's rows (w echoes x)
is a wrong answer. Each request ends in exactly one of: a correct answer, a wrong one, or an error code. The
errors allowed depend on what the model was doing while the request ran, as the mutator thread records it:

- the model was loaded and left alone: only a correct answer from the version the last load put in place
  (a new version or a rewritten file is swapped in atomically, so a swap allows no error);
- the model was unloaded and left alone: only NOT_FOUND;
- the model was being unloaded, loaded, or changed: a correct answer from any version, NOT_FOUND or UNAVAILABLE;
- the request ended after SIGTERM: also UNAVAILABLE (refused), or CANCELLED when it never got an answer:
  gRPC cancels the calls that reach it as shutdown starts, before the server has seen them; a stream that
  had answered was accepted, and must be finished within the grace.
Anything else (a wrong answer, INTERNAL, DEADLINE_EXCEEDED: every call has a deadline, so a hang shows up as
one, a stream answer with an id that was not asked) fails the run, as do: a failed liveness probe (HTTP
/v2/health/live and gRPC ServerLive, polled until SIGTERM), a client thread still running past its deadline,
or a server that does not exit 0 within --shutdown-grace-secs of SIGTERM.

Short chaos run (what ctest runs, ~60 s):
    ONNXSERVE_BIN=build/cli/onnxserve /usr/bin/python3 tests/e2e/chaos_test.py --seconds 45

Soak: steady paced load with a model change every few seconds, RSS (VmRSS), threads and open files sampled
every 5 s; passes when, besides the checks above, the RSS at the end (mean of the last 5 samples) is within
+10% of the RSS after warmup (mean of the first 5 samples after it). Warmup is 10% of the soak, 30 s to 120 s:
the allocator, gRPC's buffers and the thread pools reach their working size in well under that.
    ONNXSERVE_BIN=build/cli/onnxserve /usr/bin/python3 tests/e2e/chaos_test.py --soak-minutes 30

Exit status 0 when every check passed; the summary goes to stdout, the reasons for a failure to stderr.
"""
import argparse
import collections
import os
import pathlib
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.request

import grpc
import numpy as np
from onnx import TensorProto as T
from onnx import helper

from make_models import save
from metrics_test import ROOT, ServerProcess

sys.path.insert(0, str(ROOT / "examples"))
from client import generate_stubs  # noqa: E402  (examples/ is not a package)

pb2 = pb2_grpc = None  # the generated grpc_service modules, set by main()

CALL_DEADLINE = 10.0    # seconds, every unary call
STREAM_DEADLINE = 20.0  # seconds, a whole stream of up to MAX_STREAM_REQUESTS requests
MAX_STREAM_REQUESTS = 8
MAX_ROWS = 4
MAX_VERSIONS_ON_DISK = 3

# ---- Models: a function of the inputs that depends on the version ------------------------------------------

Model = collections.namedtuple("Model", "inputs outputs config graph expected")


def sum_graph(version):
    return helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["t"]), helper.make_node("Add", ["t", "offset"], ["z"]),
         helper.make_node("Identity", ["x"], ["w"])], "sum",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4]), helper.make_tensor_value_info("y", T.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("z", T.FLOAT, ["N", 4]), helper.make_tensor_value_info("w", T.FLOAT, ["N", 4])],
        [helper.make_tensor("offset", T.FLOAT, [], [100.0 * version])])


def affine_graph(version):
    return helper.make_graph(
        [helper.make_node("Mul", ["a", "scale"], ["t"]), helper.make_node("Add", ["t", "half"], ["b"])], "affine",
        [helper.make_tensor_value_info("a", T.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("b", T.FLOAT, ["N", 3])],
        [helper.make_tensor("scale", T.FLOAT, [], [version + 1.0]), helper.make_tensor("half", T.FLOAT, [], [0.5])])


MODELS = {
    "sum": Model({"x": 4, "y": 4}, ("z", "w"), "max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 1000 }\n",
                 sum_graph, lambda v, i: {"z": i["x"] + i["y"] + np.float32(100 * v), "w": i["x"]}),
    "affine": Model({"a": 3}, ("b",), "max_batch_size: 0\ninstance_group { count: 2 }\n",
                    affine_graph, lambda v, i: {"b": i["a"] * np.float32(v + 1) + np.float32(0.5)}),
}


class Repository:
    """The model folders on disk. Changes are atomic renames, so the server never reads a half-written file:
    a version is written under ROOT/.staging (hidden, so not a model) and renamed into place."""

    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.staging = self.root / ".staging"
        self.rewrites = 0
        for name, model in MODELS.items():
            save(str(self.root), name, model.graph(1), model.config)

    def versions(self, name):
        return sorted(int(p.name) for p in (self.root / name).iterdir() if p.name.isdigit())

    def _stage(self, name, version):
        shutil.rmtree(self.staging, ignore_errors=True)
        graph = MODELS[name].graph(version)
        self.rewrites += 1
        graph.doc_string = "rewrite %d" % self.rewrites  # a different file, the same function
        save(str(self.staging), name, graph, version=version)
        return self.staging / name / str(version)

    def add_version(self, name):
        """Writes version max+1 and drops the oldest beyond MAX_VERSIONS_ON_DISK; returns the new version."""
        version = self.versions(name)[-1] + 1
        os.rename(self._stage(name, version), self.root / name / str(version))
        for old in self.versions(name)[:-MAX_VERSIONS_ON_DISK]:
            self.remove_version(name, old)
        return version

    def rewrite(self, name, version):
        os.replace(self._stage(name, version) / "model.onnx", self.root / name / str(version) / "model.onnx")

    def remove_version(self, name, version):
        gone = self.root / (".gone-%s-%d" % (name, version))
        os.rename(self.root / name / str(version), gone)
        shutil.rmtree(gone)


# ---- What each model is doing, as the mutator records it ----------------------------------------------------

class ModelState:
    """The mutator's view of one model. `generation` changes when an action starts and when it ends, so a
    request that saw the same even generation at its start and end ran while the model was left alone."""

    def __init__(self):
        self.lock = threading.Lock()
        self.generation = 0  # odd while an action runs
        self.up = False
        self.version = 0     # the version serving when up and left alone
        self.known_versions = set()

    def snapshot(self):
        with self.lock:
            return self.generation, self.up, self.version

    def begin(self):
        with self.lock:
            self.generation += 1

    def end(self, up, version):
        with self.lock:
            self.up, self.version = up, version
            self.generation += 1


# ---- Outcomes --------------------------------------------------------------------------------------------

class Tally:
    """Every request's outcome, and every failure with its reason. Thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.Counter()  # "ok", "wrong", "error:<CODE>"
        self.kinds = collections.Counter()   # "unary", "stream"
        self.failures = []
        self.sigterm_at = None  # time.monotonic() of SIGTERM, once sent
        self.after_sigterm = collections.Counter()  # (kind, outcome, sent before SIGTERM, detail)
        self.cancelled_lead = 0.0  # the longest a CANCELLED request was sent before SIGTERM, in seconds

    def fail(self, reason):
        with self.lock:
            self.failures.append(reason)
            if len(self.failures) <= 20:
                print("FAIL: %s" % reason, file=sys.stderr, flush=True)

    def record(self, kind, outcome, sent=None, detail=""):
        with self.lock:
            self.kinds[kind] += 1
            self.counts[outcome] += 1
            if self.sigterm_at is not None and outcome == "error:CANCELLED" and sent is not None:
                self.cancelled_lead = max(self.cancelled_lead, self.sigterm_at - sent)
            if self.sigterm_at is not None:
                self.after_sigterm[(kind, outcome, sent is not None and sent < self.sigterm_at, detail[:60])] += 1


def stream_error_code(message):
    """The gRPC code behind a ModelStreamInfer error_message (a stream answers errors as text)."""
    for pattern, code in ((r"^unknown model", "NOT_FOUND"), (r"has no version", "NOT_FOUND"),
                          (r"has no ready version|is not ready", "UNAVAILABLE"),
                          (r"cancelled", "CANCELLED"), (r"timed out", "DEADLINE_EXCEEDED")):
        if re.search(pattern, message):
            return code
    return "UNKNOWN"


class Request:
    """One inference request: random inputs for `model`, the model's state when it was sent, and the check of
    the answer."""

    def __init__(self, rng, rid, name, state):
        self.id, self.model = rid, name
        self.rows = int(rng.integers(1, MAX_ROWS + 1))
        self.inputs = {n: (rng.integers(-8192, 8192, (self.rows, width)) / 64).astype(np.float32)
                       for n, width in MODELS[name].inputs.items()}
        self.before = state.snapshot()
        self.state = state
        self.sent = time.monotonic()

    def message(self):
        request = pb2.ModelInferRequest(model_name=self.model, id=self.id)
        for n, value in self.inputs.items():
            request.inputs.add(name=n, datatype="FP32", shape=list(value.shape))
            request.raw_input_contents.append(value.tobytes())
        return request

    def conclude(self, tally, kind, response=None, code=None, detail=""):
        """Records the outcome: `response` (a ModelInferResponse) or the error `code` (a name)."""
        after = self.state.snapshot()
        settled = self.before[0] == after[0] and self.before[0] % 2 == 0  # left alone throughout
        up, version = self.before[1], self.before[2]
        after_sigterm = tally.sigterm_at is not None
        if response is not None:
            problem = self.check(response)
            if problem is None and settled and not up:
                problem = "answered while the model was unloaded"
            if problem is None and settled and response.model_version != str(version):
                problem = "answered by version %s while version %d was the one loaded" % (response.model_version, version)
            if problem is not None:
                tally.record(kind, "wrong", self.sent)
                tally.fail("%s request %s to %s: %s" % (kind, self.id, self.model, problem))
            else:
                tally.record(kind, "ok", self.sent)
            return
        tally.record(kind, "error:" + code, self.sent, detail)
        if settled and not up:
            allowed = {"NOT_FOUND"}
        elif settled:
            allowed = set()
        else:
            allowed = {"NOT_FOUND", "UNAVAILABLE"}
        if after_sigterm:
            allowed |= {"UNAVAILABLE", "CANCELLED"}
        if code not in allowed:
            tally.fail("%s request %s to %s: %s (model %s, %s)" % (
                kind, self.id, self.model, code, "up" if up else "down", "left alone" if settled else "changing"))

    def check(self, response):
        """None when `response` is this request's correct answer, else what is wrong with it."""
        if response.id != self.id:
            return "id %r echoed for %r" % (response.id, self.id)
        if response.model_name != self.model:
            return "model_name %r" % response.model_name
        try:
            version = int(response.model_version)
        except ValueError:
            return "model_version %r" % response.model_version
        with self.state.lock:
            if version not in self.state.known_versions:
                return "model_version %d was never written" % version
        expected = MODELS[self.model].expected(version, self.inputs)
        if [o.name for o in response.outputs] != list(MODELS[self.model].outputs):
            return "outputs %s" % [o.name for o in response.outputs]
        if len(response.raw_output_contents) != len(response.outputs):
            return "%d raw outputs for %d outputs" % (len(response.raw_output_contents), len(response.outputs))
        for output, raw in zip(response.outputs, response.raw_output_contents):
            want = expected[output.name]
            if output.datatype != "FP32" or list(output.shape) != list(want.shape):
                return "output %s: %s %s, expected FP32 %s" % (output.name, output.datatype, list(output.shape),
                                                               list(want.shape))
            if len(raw) != want.nbytes:
                return "output %s: %d bytes, expected %d" % (output.name, len(raw), want.nbytes)
            got = np.frombuffer(raw, dtype="<f4").reshape(want.shape)
            if not np.array_equal(got, want):
                return "output %s (version %d): got %s, expected %s" % (output.name, version, got.tolist(),
                                                                         want.tolist())
        return None


# ---- Threads ---------------------------------------------------------------------------------------------

class Clients:
    def __init__(self, target, states, tally, stop, pause, seed):
        self.target, self.states, self.tally, self.stop, self.pause = target, states, tally, stop, pause
        self.seed = seed

    def unary(self, index):
        rng = np.random.default_rng(self.seed + index)
        with grpc.insecure_channel(self.target) as channel:
            stub = pb2_grpc.GRPCInferenceServiceStub(channel)
            for n in range(10 ** 9):
                if self.stop.is_set():
                    return
                name = list(MODELS)[n % len(MODELS)]
                request = Request(rng, "u%d-%d" % (index, n), name, self.states[name])
                try:
                    request.conclude(self.tally, "unary", response=stub.ModelInfer(request.message(), timeout=CALL_DEADLINE))
                except grpc.RpcError as error:
                    request.conclude(self.tally, "unary", code=error.code().name, detail=error.details() or "")
                    time.sleep(0.01)  # a server that is down refuses at once: do not spin
                time.sleep(self.pause)

    def stream(self, index):
        rng = np.random.default_rng(self.seed + 1000 + index)
        with grpc.insecure_channel(self.target) as channel:
            stub = pb2_grpc.GRPCInferenceServiceStub(channel)
            for n in range(10 ** 9):
                if self.stop.is_set():
                    return
                count = int(rng.integers(1, MAX_STREAM_REQUESTS + 1))
                names = list(MODELS)
                pending = {}
                for k in range(count):
                    name = names[int(rng.integers(len(names)))]
                    request = Request(rng, "s%d-%d-%d" % (index, n, k), name, self.states[name])
                    pending[request.id] = request
                messages = [r.message() for r in pending.values()]
                code, detail = None, ""
                try:
                    for answer in stub.ModelStreamInfer(iter(messages), timeout=STREAM_DEADLINE):
                        rid = answer.infer_response.id
                        request = pending.pop(rid, None)
                        if request is None:
                            self.tally.fail("stream %d-%d: answer with id %r, which is not pending" % (index, n, rid))
                            continue
                        if answer.error_message:
                            request.conclude(self.tally, "stream", code=stream_error_code(answer.error_message),
                                             detail=answer.error_message)
                        else:
                            request.conclude(self.tally, "stream", response=answer.infer_response)
                except grpc.RpcError as error:
                    code = error.code().name
                    detail = "stream %s after %d answers" % (error.details(), count - len(pending))
                if code == "CANCELLED" and len(pending) < count:
                    # gRPC cancels calls that reach it as shutdown starts, before the server has seen them;
                    # a stream that has answered was accepted and must be finished within the grace.
                    self.tally.fail("stream %d-%d cancelled after %d answers" % (index, n, count - len(pending)))
                for request in pending.values():  # unanswered: they take the stream's status
                    if code is None:
                        self.tally.fail("stream %d-%d ended OK without answering %s" % (index, n, request.id))
                    request.conclude(self.tally, "stream", code=code or "UNANSWERED", detail=detail)
                if code is not None:
                    time.sleep(0.01)
                time.sleep(self.pause)


class Mutator:
    """Unloads, loads, rewrites and swaps model versions at random, one action at a time."""

    ACTIONS = ("reload", "unload", "unload", "rewrite", "new_version", "rollback")

    def __init__(self, target, repository, states, tally, stop, period, seed):
        self.target, self.repository, self.states, self.tally = target, repository, states, tally
        self.stop, self.period = stop, period
        self.random = random.Random(seed)
        self.counts = collections.Counter()

    def _rpc(self, call, name):
        """The call's code name; failures before SIGTERM fail the run."""
        try:
            call(name)
            return "OK"
        except grpc.RpcError as error:
            if self.tally.sigterm_at is None:
                self.tally.fail("%s %s: %s %s" % (call.__name__, name, error.code().name, error.details()))
            return error.code().name

    def load_all(self, stub):
        for name, state in self.states.items():
            with state.lock:
                state.known_versions.update(self.repository.versions(name))
            state.begin()
            ok = self._rpc(self._loader(stub), name) == "OK"
            state.end(ok, self.repository.versions(name)[-1])

    def _loader(self, stub):
        def RepositoryModelLoad(name):
            stub.RepositoryModelLoad(pb2.RepositoryModelLoadRequest(model_name=name), timeout=CALL_DEADLINE)
        return RepositoryModelLoad

    def _unloader(self, stub):
        def RepositoryModelUnload(name):
            stub.RepositoryModelUnload(pb2.RepositoryModelUnloadRequest(model_name=name), timeout=CALL_DEADLINE)
        return RepositoryModelUnload

    def act(self, stub, name):
        state, disk = self.states[name], self.repository
        action = self.random.choice(self.ACTIONS)
        if action == "rollback" and len(disk.versions(name)) < 2:
            action = "rewrite"
        up = state.snapshot()[1]
        if not up:
            action = "reload"  # an unloaded model comes back first
        self.counts[action] += 1
        state.begin()
        if action == "unload":
            down = self._rpc(self._unloader(stub), name) == "OK"
            state.end(not down, disk.versions(name)[-1])
            if not down or self.stop.wait(self.random.uniform(0.1, 0.5) * self.period):
                return  # left down: after SIGTERM nothing is loaded any more
            state.begin()  # down for a while (NOT_FOUND only), then back
            action, up = "reload", False
        if action == "rewrite":
            disk.rewrite(name, disk.versions(name)[-1])
        elif action == "new_version":
            version = disk.add_version(name)
            with state.lock:
                state.known_versions.add(version)
        elif action == "rollback":
            disk.remove_version(name, disk.versions(name)[-1])
        ok = self._rpc(self._loader(stub), name) == "OK"
        state.end(ok or up, disk.versions(name)[-1] if ok else state.version)
        if not ok:
            state.begin()  # unsure what serves now: never "left alone" again

    def run(self, until_stop):
        with grpc.insecure_channel(self.target) as channel:
            stub = pb2_grpc.GRPCInferenceServiceStub(channel)
            while not until_stop.is_set():
                self.act(stub, self.random.choice(list(MODELS)))
                until_stop.wait(self.random.uniform(0.2, 1.0) * self.period)


def probe_liveness(server, tally, stop):
    """HTTP /v2/health/live and gRPC ServerLive every 0.25 s until `stop`; returns the probe count."""
    probes = 0
    with grpc.insecure_channel(server.grpc) as channel:
        stub = pb2_grpc.GRPCInferenceServiceStub(channel)
        while not stop.wait(0.25):
            probes += 1
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/v2/health/live" % server.http_port, timeout=5) as r:
                    if r.status != 200:
                        tally.fail("HTTP /v2/health/live answered %d" % r.status)
                if not stub.ServerLive(pb2.ServerLiveRequest(), timeout=5).live:
                    tally.fail("ServerLive answered live=false")
            except Exception as error:  # noqa: BLE001  (any failure of a probe is a failure of the run)
                if not stop.is_set():
                    tally.fail("liveness probe failed: %r" % error)
    return probes


def proc_status(pid):
    """(VmRSS in MiB, threads, open files) of process `pid`, or None once it is gone."""
    try:
        text = pathlib.Path("/proc/%d/status" % pid).read_text()
        fds = len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None
    rss = int(re.search(r"^VmRSS:\s+(\d+) kB", text, re.M).group(1)) / 1024
    threads = int(re.search(r"^Threads:\s+(\d+)", text, re.M).group(1))
    return rss, threads, fds


def slope_per_hour(samples):
    """Least-squares slope of [(t seconds, value)] in value per hour."""
    if len(samples) < 2:
        return 0.0
    t = np.array([s[0] for s in samples])
    v = np.array([s[1] for s in samples])
    return float(np.polyfit(t, v, 1)[0] * 3600)


# ---- The run ------------------------------------------------------------------------------------------------

def run(args):
    tally = Tally()
    work = pathlib.Path(tempfile.mkdtemp(prefix="onnxserve-chaos-"))
    try:
        return run_in(args, work, tally)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_in(args, work, tally):
    global pb2, pb2_grpc
    pb2, pb2_grpc = generate_stubs(str(work))
    repository = Repository(work / "models")
    soak = args.soak_minutes is not None
    duration = args.soak_minutes * 60 if soak else args.seconds
    warmup = min(120.0, max(30.0, duration / 10)) if soak else 0.0
    server = ServerProcess(repository.root, flags=(
        "--model-control-mode", "explicit", "--shutdown-grace-secs", str(args.grace), "--threads", "1"))
    states = {name: ModelState() for name in MODELS}
    stop_clients, stop_mutator, stop_probes = threading.Event(), threading.Event(), threading.Event()
    mutator = Mutator(server.grpc, repository, states, tally, stop_mutator, args.mutate_secs, args.seed)
    with grpc.insecure_channel(server.grpc) as channel:
        mutator.load_all(pb2_grpc.GRPCInferenceServiceStub(channel))
    clients = Clients(server.grpc, states, tally, stop_clients, args.pause_ms / 1000, args.seed)
    threads = [threading.Thread(target=clients.unary, args=(i,), daemon=True) for i in range(args.clients // 2)]
    threads += [threading.Thread(target=clients.stream, args=(i,), daemon=True)
                for i in range(args.clients - args.clients // 2)]
    probe_count = []
    threads.append(threading.Thread(target=lambda: probe_count.append(probe_liveness(server, tally, stop_probes)),
                                    daemon=True))
    mutator_thread = threading.Thread(target=mutator.run, args=(stop_mutator,), daemon=True)
    start = time.monotonic()
    for thread in threads + [mutator_thread]:
        thread.start()

    samples = []  # (seconds since start, rss MiB, threads, fds)
    while time.monotonic() - start < duration and server.proc.poll() is None:
        status = proc_status(server.proc.pid)
        if status is not None:
            samples.append((time.monotonic() - start, *status))
            if soak and len(samples) % 60 == 0:
                print("soak: %4.0f s rss %.1f MiB threads %d fds %d, %s" % (
                    samples[-1][0], status[0], status[1], status[2], dict(tally.counts)), flush=True)
        time.sleep(min(args.sample_secs, max(0.0, duration - (time.monotonic() - start))))

    # SIGTERM in the middle of the load: clients and mutator keep going until the server is gone.
    stop_probes.set()
    ok_before = tally.counts["ok"]
    tally.sigterm_at = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    try:
        exit_code = server.proc.wait(timeout=args.grace + 10)
    except Exception:  # noqa: BLE001
        exit_code = None
    shutdown_secs = time.monotonic() - tally.sigterm_at
    stop_clients.set()
    stop_mutator.set()
    hung = []
    for thread in threads + [mutator_thread]:
        thread.join(timeout=STREAM_DEADLINE + 5)
        if thread.is_alive():
            hung.append(thread.name)
    server.stop()
    elapsed = time.monotonic() - start

    if exit_code is None:
        tally.fail("server still running %d s after SIGTERM (grace %d s)" % (args.grace + 10, args.grace))
    elif exit_code != 0:
        tally.fail("server exited with %d after SIGTERM" % exit_code)
    elif shutdown_secs > args.grace:
        tally.fail("server took %.1f s to exit, more than the %d s grace" % (shutdown_secs, args.grace))
    if hung:
        tally.fail("client threads still running past their deadlines: %s" % hung)
    total = sum(tally.kinds.values())
    if tally.counts["ok"] < 100:
        tally.fail("only %d correct answers: the load did not run" % tally.counts["ok"])

    errors = {k[len("error:"):]: v for k, v in sorted(tally.counts.items()) if k.startswith("error:")}
    print("%s: %.0f s, %d requests (unary %d, stream %d): ok %d, wrong answers %d, errors %s" % (
        "soak" if soak else "chaos", elapsed, total, tally.kinds["unary"], tally.kinds["stream"],
        tally.counts["ok"], tally.counts["wrong"], errors or "none"))
    print("mutations: %s" % dict(sorted(mutator.counts.items())))
    print("liveness: %d probes (HTTP + gRPC), all live unless listed below" % (probe_count[0] if probe_count else 0))
    print("shutdown: SIGTERM at %.0f s, %d answers after it; exit code %s after %.2f s (grace %d s)" % (
        tally.sigterm_at - start, tally.counts["ok"] - ok_before, exit_code, shutdown_secs, args.grace))
    for (kind, outcome, before, detail), count in sorted(tally.after_sigterm.items()):
        print("  after SIGTERM: %5d %s %s, sent %s it%s" % (count, kind, outcome, "before" if before else "after",
                                                          (": " + detail) if detail else ""))
    if tally.cancelled_lead:
        print("  CANCELLED requests were sent at most %.0f ms before SIGTERM" % (1000 * tally.cancelled_lead))
    report_memory(samples, warmup, soak, tally)
    if tally.failures:
        print("FAILED: %d failures (first: %s)" % (len(tally.failures), tally.failures[0]))
        print("server log tail:\n%s" % "".join(server.log[-30:]), file=sys.stderr)
        return 1
    print("PASSED: every request answered correctly or with an allowed error")
    return 0


def report_memory(samples, warmup, soak, tally):
    if not samples:
        return
    settled = [s for s in samples if s[0] >= warmup] or samples
    head, tail = settled[:5], settled[-5:]
    rss_start = sum(s[1] for s in head) / len(head)
    rss_end = sum(s[1] for s in tail) / len(tail)
    rss_max = max(s[1] for s in settled)
    # A slope means something over a soak; over a short run it is startup growth scaled up to an hour.
    slope = ", slope %+.2f MiB/h" % slope_per_hour([(s[0], s[1]) for s in settled]) if soak else ""
    print("rss: start %.1f MiB (after %.0f s warmup), max %.1f MiB, end %.1f MiB (%+.1f%%)%s; "
          "threads %d..%d (end %d), open files %d..%d (end %d); %d samples" % (
              rss_start, warmup, rss_max, rss_end, 100 * (rss_end / rss_start - 1), slope, min(s[2] for s in settled),
              max(s[2] for s in settled), settled[-1][2], min(s[3] for s in settled), max(s[3] for s in settled),
              settled[-1][3], len(samples)))
    if soak and rss_end > 1.10 * rss_start:
        tally.fail("RSS grew from %.1f MiB to %.1f MiB, more than 10%%" % (rss_start, rss_end))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=45, help="chaos run length before SIGTERM")
    parser.add_argument("--soak-minutes", type=float, help="soak instead: paced load for this long")
    parser.add_argument("--clients", type=int, default=4, help="client threads, half unary, half streaming")
    parser.add_argument("--pause-ms", type=float, help="pause between a client's requests (default 0, soak 5)")
    parser.add_argument("--mutate-secs", type=float, help="mean seconds between model changes (default 0.6, soak 5)")
    parser.add_argument("--sample-secs", type=float, default=5, help="seconds between RSS samples")
    parser.add_argument("--grace", type=int, default=15, help="--shutdown-grace-secs of the server")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed)")
    args = parser.parse_args()
    soak = args.soak_minutes is not None
    if args.pause_ms is None:
        args.pause_ms = 5.0 if soak else 0.0
    if args.mutate_secs is None:
        args.mutate_secs = 5.0 if soak else 0.6
    print("seed %d" % args.seed, flush=True)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
