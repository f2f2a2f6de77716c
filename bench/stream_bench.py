"""Benchmark the full stream path against a bare redis-py loop, in one run.

    python -m bench.stream_bench [--executions 3000] [--workers 1,2] [--redis-url URL]
                                 [--cluster] [--inflight-memory N] [--rounds N] [--json]

Scenarios, each with W worker processes on the same Valkey:
  baseline   a bare batched XREADGROUP/XADD/XACK loop, 3 hops per execution
  bench-3    a 3-block tool with no outside I/O: callTool → (child: return) → return
  scripts-3  three executeScript blocks, then return
  http-3     httpCall (to a loopback echo server, its own process) → executeScript → return
  http-3-limits  http-3 with CHATFLOW_ORIGIN_LIMITS on the echo server's origin (a rate, a
             concurrency limit and a circuit breaker far above the load: the checks' cost)
  flaky-http an httpCall POST with a retry policy to an upstream that answers 503 to 20% of
             first attempts (by idempotency key) → executeScript → return; prints its success
             rate and attempts per execution besides the latencies
  NAME+trace, NAME+trace1   the scenario with tracing on (docs/operations.md "Tracing"): the
             workers export every span (+trace: 100 % sampling; +trace1: 1 %) over OTLP/HTTP
             to a loopback receiver in the driver (tests/support/otlp.py); worker CPU includes
             the tracing projection, which the workers run
  NAME+trace-apart, NAME+trace1-apart   the same, the spans exported by a `chatflow projections
             run` process of their own (CHATFLOW_TRACING_PROJECTION=false on the workers): its
             CPU is printed apart ("export CPU"), not in the workers'
Prints steps/s (block steps), executions/s, p50/p99 command-to-result latency
under load, p50/p99 when idle (one command at a time), and CPU per step (workers + Valkey).
Figures are ratios against the baseline measured in the same run, never asserted.

It also prints the work each execution costs (single node; see bench/work.py):
Valkey commands per execution by command, from INFO commandstats (commands that Lua
scripts call are counted too), stream entries appended (the producer's one included),
bytes the workers sent to Valkey, round trips (bench/counted_worker.py counts every
packed write of the worker's redis-py connections), worker and Valkey CPU per execution,
the idle round trips per second of one worker with nothing to do, and Valkey's µs per call
of each command (INFO commandstats: a script's time includes the commands it calls). --json writes
every figure as one JSON document on stdout instead of the table.

--rounds N runs each (scenario, W) N times, each round right after its own baseline,
and reports each figure's median of the rounds under the same keys, with its min and
max in ``min_max`` (the table prints a median row per scenario after the rounds).

--cluster runs the stream scenarios on a local 3-master Valkey cluster (outbox + relay;
the bare baseline is single-node only). --inflight-memory N holds N executions in
flight (an httpCall to a loopback server that answers only when told) and prints
INFO memory's used_memory growth per in-flight execution.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import redis.asyncio as aioredis

from bench.rounds import median_of, summary_row
from bench.work import IDLE_WINDOW_S, RoundTrips, Work, WorkMeter
from chatflow.handlers.interfaces.client import wait_results
from chatflow.handlers.keys import Keys
from chatflow.handlers.operations.embedded import EmbeddedServer, free_port
from chatflow.handlers.redis_client import make_client
from tests.support.chaos import HoldingServer, command, setup_prefix
from tests.support.valkey import LocalCluster

DRIVER_NAME = "bench-driver"

BENCH_CHILD = {"id": "pt-bench-child", "toolId": "t-bench-child", "name": "bench child",
               "definition": {"onboardingBlockId": "r",
                              "blocks": {"r": {"type": "return", "id": "r", "value": "{{n}}"}}}}
BENCH_3 = {"id": "pt-bench", "toolId": "t-bench", "name": "bench", "definition": {
    "onboardingBlockId": "c", "blocks": {
        "c": {"type": "callTool", "id": "c", "toolId": "t-bench-child",
              "publishedToolId": "pt-bench-child", "outputVariable": "o",
              "inputVariables": [{"name": "n", "value": "{{n}}"}],
              "onError": "blocking", "outputConditions": [],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{o}}"}}}}


def _script(block_id: str, src: str, nxt: str) -> dict[str, Any]:
    return {"type": "executeScript", "id": block_id, "source": src, "outputVariable": block_id,
            "inputVariables": [{"name": "n", "value": "{{n}}"}], "onError": "blocking",
            "outputConditions": [], "defaultOutput": {"type": "block", "blockId": nxt}}


SCRIPTS_3 = {"id": "pt-scripts", "toolId": "t-scripts", "name": "scripts", "definition": {
    "onboardingBlockId": "a", "blocks": {
        "a": _script("a", "return Number(n) + 1", "b"),
        "b": _script("b", "return Number(n) * 2", "c"),
        "c": _script("c", "return 'n=' + n", "r"),
        "r": {"type": "return", "id": "r", "value": "{{a}} {{b}} {{c}}"}}}}

def http_3(base: str) -> dict[str, Any]:
    """httpCall → script → return: the httpCall is a hop of its own (side effects never run
    at intake); the script and the return ride that step's commit."""
    return {"id": "pt-http", "toolId": "t-http", "name": "http", "definition": {
        "onboardingBlockId": "h", "blocks": {
            "h": {"type": "httpCall", "id": "h", "method": "GET", "url": base + "/echo?n={{n}}",
                  "responseBodyVariable": "resp", "onError": "blocking",
                  "outputConditions": [], "defaultOutput": {"type": "block", "blockId": "s"}},
            "s": {**_script("s", "return Number(n) + 1", "r"),
                  "inputVariables": [{"name": "n", "value": "{{resp.n}}"}]},
            "r": {"type": "return", "id": "r", "value": "{{s}}"}}}}


def flaky_http(base: str) -> dict[str, Any]:
    """http-3 with a POST that fails 20% of first attempts, and a retry policy."""
    tool = http_3(base)
    block = {**tool["definition"]["blocks"]["h"], "method": "POST",
             "url": base + "/flaky?n={{n}}",
             "retry": {"maxAttempts": 3, "initialIntervalMs": 100, "maxIntervalMs": 1000}}
    return {**tool, "id": "pt-flaky", "toolId": "t-flaky", "name": "flaky", "definition": {
        **tool["definition"], "blocks": {**tool["definition"]["blocks"], "h": block}}}


SCENARIOS = {"bench-3": ("pt-bench", 3), "scripts-3": ("pt-scripts", 4), "http-3": ("pt-http", 3),
             "http-3-limits": ("pt-http", 3), "flaky-http": ("pt-flaky", 3)}
ECHO_BASE = ""  # the echo server's base URL, once started


def scenario_env(name: str) -> dict[str, str]:
    """Settings a scenario's workers run with: http-3-limits limits the echo origin, far
    above the load, so every call goes through the gate's checks and none waits."""
    if name != "http-3-limits":
        return {}
    limits = {ECHO_BASE: {"requestsPerSecond": 100_000, "burst": 100_000,
                          "maxConcurrent": 10_000,
                          "circuitBreaker": {"failureThreshold": 1_000}}}
    return {"CHATFLOW_ORIGIN_LIMITS": json.dumps(limits)}


def upstream_requests(path: str) -> int:
    """How many requests the echo server has had on ``path``."""
    with urllib.request.urlopen(ECHO_BASE + "/stats", timeout=10) as reply:
        return int(json.loads(reply.read()).get(path, 0))


@dataclass
class Figures:
    name: str
    workers: int
    executions: int
    seconds: float
    steps: int
    p50_ms: float
    p99_ms: float
    idle_p50_ms: float
    cpu_s: float
    server_cpu_s: float = 0.0
    idle_p99_ms: float = 0.0
    work: Work | None = None
    export_cpu_s: float = 0.0  # a -apart scenario's span exporter (its own process)
    ok: int = 0  # results answered ok
    upstream: int = 0  # requests the echo server had (flaky-http: attempts)

    def row(self, base: Figures | None) -> str:
        sps = self.steps / self.seconds
        ratio = f"{sps / (base.steps / base.seconds):6.0%}" if base else "   -  "
        return (f"{self.name:<10} W={self.workers}  steps/s {sps:8.0f} ({ratio} of baseline)  "
                f"exec/s {self.executions / self.seconds:7.0f}  p50 {self.p50_ms:6.1f}ms  "
                f"p99 {self.p99_ms:6.1f}ms  idle p50 {self.idle_p50_ms:5.2f}ms  "
                f"CPU/step {self.cpu_s / self.steps * 1e6:6.0f}µs "
                f"(Valkey {self.server_cpu_s / self.steps * 1e6:4.0f}µs)")

    def as_dict(self, base: Figures | None) -> dict[str, Any]:
        sps = self.steps / self.seconds
        out: dict[str, Any] = {
            "scenario": self.name, "workers": self.workers, "executions": self.executions,
            "seconds": round(self.seconds, 3), "steps_per_s": round(sps, 1),
            "of_baseline": round(sps / (base.steps / base.seconds), 4) if base else None,
            "executions_per_s": round(self.executions / self.seconds, 1),
            "p50_ms": round(self.p50_ms, 2), "p99_ms": round(self.p99_ms, 2),
            "idle_p50_ms": round(self.idle_p50_ms, 3), "idle_p99_ms": round(self.idle_p99_ms, 3),
            "cpu_per_step_us": round(self.cpu_s / self.steps * 1e6, 1),
            "worker_cpu_per_execution_us": round((self.cpu_s - self.server_cpu_s)
                                                 / self.executions * 1e6, 1),
            "valkey_cpu_per_execution_us": round(self.server_cpu_s / self.executions * 1e6, 1),
        }
        if base is not None:
            # This VM's CPU speed moves by up to 2x within minutes (a fixed pure-Python loop
            # took 0.11 to 0.22 s): per-execution CPU as a multiple of the bare loop's in the
            # same round moves far less than the microseconds do.
            out["worker_cpu_of_baseline"] = round(self.worker_cpu() / base.worker_cpu(), 3)
            out["valkey_cpu_of_baseline"] = round(self.server_cpu_s / self.executions
                                                  / (base.server_cpu_s / base.executions), 3)
        if self.work is not None:
            out["work"] = self.work.as_dict()
        if self.export_cpu_s:
            out["export_cpu_per_execution_us"] = round(self.export_cpu_s / self.executions * 1e6, 1)
        if self.name == "flaky-http":
            out["success_rate"] = round(self.ok / self.executions, 4)
            out["attempts_per_execution"] = round(self.upstream / self.executions, 3)
        return out

    def worker_cpu(self) -> float:
        """Seconds of worker CPU per execution."""
        return (self.cpu_s - self.server_cpu_s) / self.executions

    def work_rows(self, base: Figures | None = None) -> list[str]:
        cpu = (f"worker CPU {(self.cpu_s - self.server_cpu_s) / self.executions * 1e6:6.0f}µs  "
               f"Valkey CPU {self.server_cpu_s / self.executions * 1e6:5.0f}µs per execution")
        if base is not None:
            d = self.as_dict(base)
            cpu += (f" ({d['worker_cpu_of_baseline']:.2f}x and {d['valkey_cpu_of_baseline']:.2f}x"
                    " the bare loop's of this round)")
        if self.export_cpu_s:
            cpu += f"; export CPU {self.export_cpu_s / self.executions * 1e6:.0f}µs (apart)"
        if self.name == "flaky-http":
            cpu += (f"\n{'':<10} success {self.ok / self.executions:.2%}, "
                    f"{self.upstream / self.executions:.3f} attempts per execution")
        if self.work is None:
            return [f"{'':<10} {cpu}"]
        return [f"{'':<10} {line}" for line in [*self.work.rows(), cpu]]


CLUSTER = False  # set by --cluster
# Set by --previous-python: the interpreter of another version's venv. A scenario named
# "NAME@prev" (http-3@prev) runs its workers on it, so two versions are measured in one run,
# against one baseline and one driver; the bare loop and the driver stay this version's.
PREVIOUS_PYTHON: str | None = None


def worker_python(name: str) -> str:
    if not name.endswith("@prev"):
        return sys.executable
    if PREVIOUS_PYTHON is None:
        raise SystemExit(f"scenario {name!r} needs --previous-python")
    return PREVIOUS_PYTHON


# Set by main when a +trace scenario is asked for: the loopback OTLP receiver's endpoint.
TRACES_ENDPOINT = ""


def tracing_env(name: str) -> dict[str, str]:
    """The OTEL_* variables of a ``+trace`` (100 %) or ``+trace1`` (1 %) scenario."""
    if "+trace" not in name:
        return {}
    ratio = "0.01" if "+trace1" in name else "1.0"
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": TRACES_ENDPOINT,
           "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio}
    if name.endswith("-apart"):
        env["CHATFLOW_TRACING_PROJECTION"] = "false"
    return env


def spawn_exporter(url: str, prefix: str, name: str) -> subprocess.Popen[bytes] | None:
    """A ``-apart`` scenario's span exporter: ``chatflow projections run`` with tracing on."""
    if not name.endswith("-apart"):
        return None
    env = {**os.environ, "REDIS_URL": url, "CHATFLOW_PREFIX": prefix,
           "CHATFLOW_LOG_LEVEL": "WARNING", **tracing_env(name.removesuffix("-apart"))}
    code = "from chatflow.handlers.cli import main; main(['projections', 'run'])"
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL)


def spawn_workers(url: str, prefix: str, n: int, baseline: bool,
                  counts: RoundTrips | None = None,
                  python: str = sys.executable,
                  extra: dict[str, str] | None = None) -> list[subprocess.Popen[bytes]]:
    """W worker processes (or bare loops); each counts its round trips into ``counts``."""
    env = {**os.environ, "REDIS_URL": url, "CHATFLOW_PREFIX": prefix,
           "CHATFLOW_LOG_LEVEL": "WARNING", "CHATFLOW_METRICS_PORT": "0",
           "CHATFLOW_REDIS_CLUSTER": "true" if CLUSTER else "false", **(extra or {})}
    procs = []
    for i in range(n):
        counter = [counts.file(i)] if counts else []
        if baseline:
            tail = ["baseline", url, prefix, f"c{i}", "64"]
            cmd = ([sys.executable, "-m", "bench.counted_worker", *counter, *tail] if counts
                   else [sys.executable, "-m", "bench.baseline", *tail[1:]])
        elif counts:
            cmd = [python, "-m", "bench.counted_worker", *counter]
        else:
            cmd = [python, "-c", "from chatflow.handlers.cli import main; main(['worker'])"]
        # Another version's workers run from its own tree (its checkout holds the venv), so
        # `-m bench...` and the SDK resolve to that version's files, not this checkout's.
        cwd = None if python == sys.executable else str(Path(os.path.abspath(python)).parents[2])
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, cwd=cwd))
    return procs


def cpu_of(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            times = p.cpu_times()
            total += times.user + times.system
            for child in p.children(recursive=True):
                ct = child.cpu_times()
                total += ct.user + ct.system
        except psutil.NoSuchProcess:
            pass
    return total


class Driver:
    def __init__(self, url: str, prefix: str, baseline: bool) -> None:
        # Named, so the work counts can tell the driver's bytes from the workers'.
        self.client = (make_client(url, cluster=True) if CLUSTER
                       else aioredis.Redis.from_url(url, client_name=DRIVER_NAME))
        self.sent_commands = 0  # XADDs of commands, XREADs of results: the driver's own
        self.reads = 0
        self.ok = 0  # results answered ok
        self.prefix = prefix
        self.baseline = baseline
        self.commands = f"{prefix}steps" if baseline else f"{prefix}stream:tool-commands"
        self.results = f"{prefix}results" if baseline else f"{prefix}stream:tool-results"

    def payload(self, pt: str, cid: str) -> dict[str, Any]:
        if self.baseline:
            return {"c": json.dumps({"commandId": cid}), "left": "3"}
        command = {"commandId": cid, "action": {"id": "a", "toolId": "t", "publishedToolId": pt,
                                                "outputVariable": "o",
                                                "inputVariables": [{"name": "n", "value": "7"}]},
                   "context": {"contactId": "bench"}}
        return {"data": json.dumps(command)}

    async def run(self, pt: str, count: int, window: int) -> tuple[float, list[float]]:
        """Publish ``count`` commands keeping ``window`` in flight; latencies in ms."""
        sent: dict[str, float] = {}
        lat: list[float] = []
        cursor = b"0-0"
        last = await self.client.xrevrange(self.results, count=1)
        if last:
            cursor = last[0][0]
        next_i = 0
        started = time.perf_counter()
        while len(lat) < count:
            if next_i < count and len(sent) < window:
                async with self.client.pipeline(transaction=False) as pipe:
                    while next_i < count and len(sent) < window:
                        cid = f"b{uuid.uuid4().hex[:12]}"
                        sent[cid] = time.perf_counter()
                        pipe.xadd(self.commands, self.payload(pt, cid))
                        next_i += 1
                        self.sent_commands += 1
                    await pipe.execute()
            reply = await self.client.xread({self.results: cursor}, count=1000, block=2000)
            self.reads += 1
            now = time.perf_counter()
            for _name, entries in reply or []:
                for entry_id, fields in entries:
                    cursor = entry_id
                    result = json.loads(fields[b"data"])
                    cid = result["commandId"]
                    if cid in sent:
                        lat.append((now - sent.pop(cid)) * 1000)
                        self.ok += bool(result.get("ok", True))
        return time.perf_counter() - started, lat


async def drained(client: Any, prefix: str, timeout_s: float = 60.0) -> None:
    """Wait until every consumer group of the run's streams has no entry left unread or
    unacked (a bench's polling, not a test's synchronisation)."""
    streams = [k async for k in client.scan_iter(match=f"{prefix}*", count=1000, _type="stream")]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        busy = False
        for stream in streams:
            for group in await client.xinfo_groups(stream):
                lag = group.get("lag")
                if lag is None:  # unknown after XDELs: compare with the stream's last id
                    info = await client.xinfo_stream(stream)
                    lag = group.get("last-delivered-id") != info.get("last-generated-id")
                if group.get("pending") or lag:
                    busy = True
        if not busy:
            return
        await asyncio.sleep(0.05)
    print(f"warning: {prefix} not drained after {timeout_s:.0f} s", file=sys.stderr)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def scenario(url: str, server: list[psutil.Process], name: str, workers: int,
                   executions: int, tools: list[dict[str, Any]]) -> Figures:
    prefix = f"bench{uuid.uuid4().hex[:6]}:"
    baseline = name == "baseline"
    client = make_client(url, cluster=CLUSTER)
    for t in tools:
        await client.set(f"{prefix}tool:{t['id']}", json.dumps(t))
    if baseline:
        await client.xgroup_create(f"{prefix}steps", "g", id="0", mkstream=True)
    counts = RoundTrips(workers)
    procs = spawn_workers(url, prefix, workers, baseline, counts, worker_python(name),
                          {**scenario_env(name), **tracing_env(name)})
    exporter = spawn_exporter(url, prefix, name)
    apart = [psutil.Process(exporter.pid)] if exporter else []
    ps = [psutil.Process(p.pid) for p in procs] + server
    driver = Driver(url, prefix, baseline)
    pt, steps_per = ("", 3) if baseline else SCENARIOS[name.split("+")[0].removesuffix("@prev")]
    meter = None if CLUSTER else WorkMeter(client, DRIVER_NAME)
    try:
        await driver.run(pt, 20, 1)  # warm up: workers up, definitions cached
        idle: list[float] = []
        for _ in range(100):
            idle += (await driver.run(pt, 1, 1))[1]
        idle_rt = await counts.rate(IDLE_WINDOW_S)  # nothing in flight: what waiting costs
        if meter:
            await meter.start()
        driver.sent_commands = driver.reads = driver.ok = 0
        upstream0 = upstream_requests("/flaky") if name == "flaky-http" else 0
        trips0 = counts.total()
        cpu0, server0, apart0 = cpu_of(ps), cpu_of(server), cpu_of(apart)
        seconds, lat = await driver.run(pt, executions, 512)
        # The last result is not the end of the work: the execution-log projection (and a
        # relay, on a cluster) may still be reading behind it. CPU is read once every group
        # has read and acked everything, so their work is in the figures.
        await drained(client, prefix)
        cpu, server_cpu = cpu_of(ps) - cpu0, cpu_of(server) - server0
        export_cpu = cpu_of(apart) - apart0
        await asyncio.sleep(0.25)  # the counters' files are rewritten every 100 ms
        trips = counts.total() - trips0
        work = (await meter.finish(executions, driver.sent_commands, driver.reads, trips,
                                   idle_rt / workers) if meter else None)
        upstream = upstream_requests("/flaky") - upstream0 if name == "flaky-http" else 0
    finally:
        for p in procs + ([exporter] if exporter else []):
            p.terminate()
        for p in procs + ([exporter] if exporter else []):
            p.wait()
        counts.close()
        await client.aclose()
        await driver.client.aclose()
    return Figures(name, workers, executions, seconds, executions * steps_per,
                   statistics.median(lat), pct(lat, 0.99), statistics.median(idle), cpu, server_cpu,
                   pct(idle, 0.99), work, export_cpu, driver.ok, upstream)


async def inflight_memory(url: str, n: int, partitions: int = 4) -> None:
    """INFO memory growth per in-flight execution: N executions parked in an httpCall."""
    prefix = f"mem{uuid.uuid4().hex[:6]}:"
    keys = Keys(prefix, partitions)
    client = make_client(url, cluster=CLUSTER)
    http = HoldingServer()
    http.hold()
    await setup_prefix(client, keys, http.base)
    # Enough batch slots that parked httpCall batches never starve the command intake.
    os.environ.setdefault("CHATFLOW_INFLIGHT_BATCHES", "64")
    procs = spawn_workers(url, prefix, 1, False)

    async def used() -> int:
        if not CLUSTER:
            return int((await client.info("memory"))["used_memory"])
        total = 0
        for node in client.get_primaries():  # every primary's own INFO
            auth = client.get_connection_kwargs()
            one = aioredis.Redis(host=node.host, port=node.port, username=auth.get("username"),
                                 password=auth.get("password"))
            try:
                total += int((await one.info("memory"))["used_memory"])
            finally:
                await one.aclose()
        return total

    try:
        cids = [f"m{i}-{uuid.uuid4().hex[:8]}" for i in range(n)]
        # The worker's groups and definitions first: one execution through, then measure.
        await client.xadd(keys.commands, command("chaos-script", "warm", 7))
        await wait_results(client, keys.results, {"warm"}, after=b"0-0", timeout_s=60)
        before = await used()
        async with client.pipeline(transaction=False) as pipe:
            for cid in cids:
                pipe.xadd(keys.commands, command("chaos-http", cid, 7))
            await pipe.execute()
        # In flight = taken in (state, guard, deadline, first step written), not answered.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            groups = await client.xinfo_groups(keys.commands)
            if all(g["pending"] == 0 and g.get("lag") == 0 for g in groups):
                break
            await asyncio.sleep(0.1)  # polling the server, bounded
        await asyncio.to_thread(http.wait_requests, min(n, 100), 60.0)
        after = await used()
        per = (after - before) / n
        print(f"in-flight memory: {n} executions taken in, {http.requests} parked in httpCall: "
              f"used_memory {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB, "
              f"{per:.0f} B per in-flight execution (command entry, state, step, guard, "
              f"deadline, event log)", flush=True)
        mark = await client.xlen(keys.results)
        http.release()
        await wait_results(client, keys.results, set(cids), after=b"0-0", timeout_s=300)
        done = await used()
        print(f"retained after the answers: used_memory {done / 2**20:.1f} MiB, "
              f"{(done - before) / n:.0f} B per finished execution until its TTLs "
              f"(state and event log: CHATFLOW_STATE_TTL_S, guard and done keys: "
              f"CHATFLOW_DEDUP_TTL_S) and stream trimming; {mark} answered before release",
              flush=True)
    finally:
        http.release()
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        http.stop()
        await client.aclose()


async def rounds_of(url: str, server: list[psutil.Process], names: list[str], workers: int,
                    executions: int, tools: list[dict[str, Any]], rounds: int,
                    quiet: bool) -> list[dict[str, Any]]:
    """Every scenario of ``names`` at W=``workers``, ``rounds`` times; one document each, the
    median of its rounds (bench/rounds.py). Each round runs the baseline first: a scenario's
    ratio is to the baseline measured just before it, not to one taken minutes earlier."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for r in range(rounds):
        tag = f"round {r + 1}/{rounds} " if rounds > 1 else ""
        base: Figures | None = None
        for name in names:
            fig = await scenario(url, server, name, workers, executions, tools)
            base = fig if name == "baseline" else base
            ref = None if name == "baseline" else base
            runs[name].append(fig.as_dict(ref))
            if not quiet:
                print(tag + ("cluster " if CLUSTER else "") + fig.row(ref), flush=True)
                print("\n".join(fig.work_rows(ref)), flush=True)
    summaries = [median_of(runs[name]) for name in names]
    if not quiet and rounds > 1:
        for summary in summaries:
            print(summary_row(summary), flush=True)
    return summaries


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executions", type=int, default=3000)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument("--scenarios", default=None,
                        help="default baseline,bench-3,scripts-3,http-3 (no baseline with --cluster)")
    parser.add_argument("--cluster", action="store_true", help="on a local 3-master cluster")
    parser.add_argument("--inflight-memory", type=int, default=0, metavar="N",
                        help="only measure memory per in-flight execution with N parked")
    parser.add_argument("--rounds", type=positive, default=1,
                        help="run each (scenario, workers) N times, each round after its own "
                             "baseline; report each figure's median, min and max")
    parser.add_argument("--previous-python", metavar="PYTHON",
                        help="another version's interpreter (its venv's bin/python): a "
                             "scenario named NAME@prev runs its workers on it, in the same "
                             "rounds as this version's")
    parser.add_argument("--json", action="store_true",
                        help="print every figure as one JSON document instead of the table")
    args = parser.parse_args()
    global CLUSTER, PREVIOUS_PYTHON, ECHO_BASE, TRACES_ENDPOINT
    CLUSTER = args.cluster
    PREVIOUS_PYTHON = args.previous_python
    scenarios = args.scenarios or ("bench-3,scripts-3,http-3" if CLUSTER
                                   else "baseline,bench-3,scripts-3,http-3")
    server: Any = None
    url = args.redis_url
    if not url:
        server = LocalCluster().start() if CLUSTER else EmbeddedServer().start()
        url = server.url
    nodes = server.nodes if CLUSTER and server else ([server] if server else [])
    server_procs = [psutil.Process(n.process.pid) for n in nodes if n.process]
    echo: subprocess.Popen[bytes] | None = None
    receiver = contextlib.ExitStack()
    try:
        if "+trace" in scenarios:
            from tests.support.otlp import otlp_receiver

            TRACES_ENDPOINT = receiver.enter_context(otlp_receiver()).endpoint
        if args.inflight_memory:
            await inflight_memory(url, args.inflight_memory)
            return
        tools = [BENCH_CHILD, BENCH_3, SCRIPTS_3]
        if any(s.startswith(("http-3", "flaky-http")) for s in scenarios.split(",")):
            echo, ECHO_BASE = start_echo_server()
            tools += [http_3(ECHO_BASE), flaky_http(ECHO_BASE)]
        report: list[dict[str, Any]] = []
        for workers in [int(w) for w in args.workers.split(",")]:
            report += await rounds_of(url, server_procs, scenarios.split(","), workers,
                                      args.executions, tools, args.rounds, quiet=args.json)
        if args.json:
            print(json.dumps({"cluster": CLUSTER, "runs": report}, indent=2))
    finally:
        receiver.close()
        if echo is not None:
            echo.terminate()
            echo.wait()
        if server:
            server.stop()


def start_echo_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bench.echo_server", str(port)],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"listening":
        raise RuntimeError("bench.echo_server did not start")
    return proc, f"http://127.0.0.1:{port}"


if __name__ == "__main__":
    asyncio.run(main())
