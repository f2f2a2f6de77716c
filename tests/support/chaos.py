"""Chaos run: executions of mixed tools while worker processes are SIGKILLed and restarted.

    python -m bench.chaos [--executions 10000] [--seconds 600] [--workers 3]
                          [--kill-every 3] [--redis-url URL] [--cluster]

Workers are real ``chatflow worker`` subprocesses. Every ``--kill-every`` seconds
(jittered) one of them, chosen at random, gets SIGKILL and is started again. The
mix: httpCall to a loopback server, three executeScript blocks, and a callTool of
a script child. The run ends when every result arrived or ``--seconds`` passed,
then checks, once every consumer group is drained:

* one result per command: 0 lost, 0 duplicates, every result ``ok``;
* every ToolExecutionStreamEvent once in ``stream:tool-executions`` and counted
  once by the execution log projection (``runs7d`` per tool = executions per tool);
* every execution once in the run history the workers write (a SQLite file; ``--no-history``
  turns it off), with its event's tool, status, duration and end;
* with ``--tracing`` (a loopback OTLP receiver, tests/support/otlp.py): exactly one span per
  committed execution and block visit, a span received twice being the same bytes.

Exit status 0 when all of that holds. ``tests/chaos/test_chaos_short.py`` runs the
short form (``--executions 600 --seconds 60``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import sqlalchemy as sa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chatflow.handlers.cli.replay_cmd import verify_recent
from chatflow.handlers.history.db import engine_for, upgrade
from chatflow.handlers.history.runner import HISTORY_GROUP
from chatflow.handlers.history.schema import runs as run_rows
from chatflow.handlers.history.verify import verify
from chatflow.handlers.keys import (
    COMMANDS_GROUP,
    PROJECTION_GROUP,
    RELAY_GROUP,
    STEPS_GROUP,
    TRACING_GROUP,
    Keys,
)
from chatflow.handlers.operations.embedded import EmbeddedServer
from chatflow.handlers.projections.metrics import tool_metrics
from chatflow.handlers.redis_client import Client, make_client
from chatflow.runtime.state import decode_log
from tests.support.http import serve_asgi_in_thread
from tests.support.otlp import ReceivedSpan, Receiver, otlp_receiver
from tests.support.processes import kill, start_worker, stop
from tests.support.valkey import LocalCluster

# -- a loopback HTTP server that can hold requests -------------------------------------


class HoldingServer:
    """``GET /echo?n=X`` answers ``{"n": X}``; while ``hold()`` is on, requests wait for ``release()``.

    ``POST /flaky?n=X`` is an upstream that fails and dedups like a payment API: by its
    ``Idempotency-Key``, one key in five gets a 503 on its first request and one in twenty
    on its second too; every other request answers ``{"n": X}``. It keeps the keys each
    ``n`` came with and the keys it answered 200 (the effects an idempotent upstream would
    apply once per key)."""

    def __init__(self) -> None:
        self._open = threading.Event()
        self._open.set()
        self._arrived = threading.Condition()
        # Every held request waits in a thread of its own: more than anyio's default 40.
        self._threads = anyio.CapacityLimiter(1000)
        self.requests = 0
        self.flaky_requests = 0
        self.keys_of: dict[str, set[str]] = {}  # n -> the idempotency keys it came with
        self.effects: set[str] = set()  # keys answered 200
        self._tries: Counter[str] = Counter()
        self._serving = serve_asgi_in_thread(Starlette(routes=[
            Route("/echo", self._echo), Route("/flaky", self._flaky, methods=["POST"])]))
        self.base = self._serving.__enter__()

    async def _flaky(self, request: Request) -> Response:
        key = request.headers.get("idempotency-key", "")
        n = request.query_params.get("n", "0")
        self.flaky_requests += 1
        self.keys_of.setdefault(n, set()).add(key)
        self._tries[key] += 1
        bucket = zlib.crc32(key.encode()) % 20
        if (self._tries[key] == 1 and bucket % 5 == 0) or (self._tries[key] == 2 and bucket == 0):
            return JSONResponse({"error": "flaky"}, status_code=503)
        self.effects.add(key)
        return JSONResponse({"n": n})

    async def _echo(self, request: Request) -> Response:
        with self._arrived:
            self.requests += 1
            self._arrived.notify_all()
        await anyio.to_thread.run_sync(self._open.wait, 120, limiter=self._threads)
        return JSONResponse({"n": request.query_params.get("n", "0")})

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def wait_requests(self, count: int, timeout_s: float) -> bool:
        """Block (a thread) until ``count`` requests arrived in total."""
        with self._arrived:
            return self._arrived.wait_for(lambda: self.requests >= count, timeout=timeout_s)

    def stop(self) -> None:
        self.release()
        self._serving.__exit__(None, None, None)


# -- worker subprocesses ----------------------------------------------------------------


@dataclass
class WorkerPool:
    """``chatflow worker`` subprocesses on one prefix; each logs JSON lines to its own file."""

    url: str
    prefix: str
    env: dict[str, str] = field(default_factory=dict)
    log_dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="chatflow-chaos-"))
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    started: int = 0
    killed: int = 0

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = {"CHATFLOW_CLAIM_IDLE_MS": "1000", "CHATFLOW_CLAIM_INTERVAL_MS": "200",
               "CHATFLOW_BLOCK_MS": "200", "CHATFLOW_LOG_FORMAT": "json", "CHATFLOW_LOG_LEVEL": "INFO",
               **self.env}
        self.started += 1
        out = open(Path(self.log_dir) / f"worker-{self.started}.log", "wb")  # noqa: SIM115
        try:
            return start_worker(self.url, self.prefix, env=env, stdout=out, stderr=subprocess.STDOUT)
        finally:
            out.close()  # the child holds its own descriptor

    def start(self, n: int) -> WorkerPool:
        self.procs += [self._spawn() for _ in range(n)]
        return self

    def kill(self, index: int) -> int:
        """SIGKILL worker ``index`` (no chance to ack, flush or say goodbye); returns its pid."""
        proc = self.procs[index]
        kill(proc)
        self.killed += 1
        return proc.pid

    def restart(self, index: int) -> None:
        self.procs[index] = self._spawn()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            stop(proc)

    def log_lines(self) -> Iterator[dict[str, Any]]:
        for path in sorted(Path(self.log_dir).glob("worker-*.log")):
            for line in path.read_text(errors="replace").splitlines():
                try:
                    yield json.loads(line)
                except ValueError:
                    yield {"event": line, "level": "raw"}


# -- the tools of the mix -----------------------------------------------------------------


def _next(block_id: str) -> dict[str, Any]:
    return {"type": "block", "blockId": block_id}


def _script(block_id: str, source: str, nxt: str, var: str = "n") -> dict[str, Any]:
    return {"type": "executeScript", "id": block_id, "source": source, "outputVariable": block_id,
            "inputVariables": [{"name": var, "value": "{{" + var + "}}"}], "onError": "blocking",
            "outputConditions": [], "defaultOutput": _next(nxt)}


def tools(http_base: str) -> dict[str, dict[str, Any]]:
    """The mix, by publishedToolId: ``chaos-http``, ``chaos-script``, ``chaos-nested`` (+ child)."""
    def record(pt: str, start: str, blocks: dict[str, Any]) -> dict[str, Any]:
        return {"id": pt, "toolId": f"t-{pt}", "name": pt,
                "definition": {"onboardingBlockId": start, "blocks": blocks}}

    ret = {"type": "return", "id": "r", "value": "{{out}}"}
    return {
        "chaos-http": record("chaos-http", "h", {
            "h": {"type": "httpCall", "id": "h", "url": http_base + "/echo?n={{n}}",
                  "method": "GET", "onError": "blocking", "outputConditions": [],
                  "responseBodyVariable": "resp", "defaultOutput": _next("r")},
            "r": {"type": "return", "id": "r", "value": "{{resp.n}}"}}),
        "chaos-script": record("chaos-script", "a", {
            "a": _script("a", "return Number(n) + 1", "b"),
            "b": _script("b", "return Number(a) * 2", "c", "a"),
            "c": {**_script("c", "return String(b)", "r", "b"), "outputVariable": "out"},
            "r": ret}),
        "chaos-child": record("chaos-child", "s", {
            "s": {**_script("s", "return 'child-' + n", "r"), "outputVariable": "out"},
            "r": ret}),
        # A POST with a retry policy to an upstream that fails a fifth of first attempts.
        "chaos-retry": record("chaos-retry", "h", {
            "h": {"type": "httpCall", "id": "h", "url": http_base + "/flaky?n={{n}}",
                  "method": "POST", "body": "{}", "onError": "blocking",
                  "outputConditions": [], "responseBodyVariable": "resp",
                  "retry": {"maxAttempts": 5, "initialIntervalMs": 50, "maxIntervalMs": 400},
                  "defaultOutput": _next("r")},
            "r": {"type": "return", "id": "r", "value": "{{resp.n}}"}}),
        "chaos-nested": record("chaos-nested", "c", {
            "c": {"type": "callTool", "id": "c", "toolId": "t-chaos-child",
                  "publishedToolId": "chaos-child", "outputVariable": "out",
                  "inputVariables": [{"name": "n", "value": "{{n}}"}], "onError": "blocking",
                  "outputConditions": [], "defaultOutput": _next("r")},
            "r": ret}),
    }


MIX = ("chaos-http", "chaos-script", "chaos-nested", "chaos-retry")
CHILD_TOOL = "t-chaos-child"


def expected_value(pt: str, n: int) -> str:
    return {"chaos-http": str(n), "chaos-script": str((n + 1) * 2),
            "chaos-nested": f"child-{n}", "chaos-retry": str(n)}[pt]


def command(pt: str, command_id: str, n: int) -> dict[str, str]:
    data = {"commandId": command_id,
            "action": {"id": "a", "type": "executeTool", "toolId": f"t-{pt}", "publishedToolId": pt,
                       "outputVariable": "out", "inputVariables": [{"name": "n", "value": str(n)}]},
            "context": {"contactId": "chaos"}}
    return {"data": json.dumps(data)}


# -- the run ---------------------------------------------------------------------------------


@dataclass
class Report:
    executions: int
    results: int = 0
    lost: int = 0
    duplicates: int = 0
    failed: int = 0
    wrong: int = 0
    kills: int = 0
    seconds: float = 0.0
    events: int = 0
    event_duplicates: int = 0
    projection: dict[str, tuple[int, int]] = field(default_factory=dict)  # tool: (runs7d, events)
    expected_events: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    history: bool = False  # the workers wrote a run history (SQLite)
    history_rows: int = 0
    history_missing: int = 0  # executions in the stream without their row
    history_differ: int = 0  # rows that say another tool, status, duration or end
    replayed: int = 0  # trees `chatflow replay --verify` re-ran over their recorded outcomes
    replay_differ: int = 0  # trees whose record differs from what the machine decides now
    retry_executions: int = 0  # chaos-retry commands
    retry_requests: int = 0  # what the flaky upstream received (attempts, redeliveries)
    key_splits: int = 0  # chaos-retry executions whose requests carried more than one key
    effects_missing: int = 0  # chaos-retry executions whose key was never answered 200
    tracing: bool = False  # spans exported to a loopback OTLP receiver, and checked
    spans_expected: int = 0  # committed executions and block visits, from the event logs
    spans_missing: int = 0  # of those, with no span received
    spans_extra: int = 0  # spans received beyond one per committed visit
    span_repeats: int = 0  # spans received more than once (harmless if the same bytes)
    span_repeats_differ: int = 0  # ...received twice with different content

    @property
    def keys_ok(self) -> bool:
        return self.key_splits == 0 and self.effects_missing == 0

    @property
    def history_ok(self) -> bool:
        distinct = self.events - self.event_duplicates
        return not self.history or (self.history_rows == distinct and not self.history_missing
                                    and not self.history_differ)

    @property
    def projection_ok(self) -> bool:
        """Every event counted once (runs7d = distinct events per tool) and one event per
        command (a child runs only when its parent got that far: at most its share)."""
        if set(self.projection) != set(self.expected_events):
            return False
        for tool, (runs, events) in self.projection.items():
            want = self.expected_events[tool]
            if runs != events or events > want or (tool != CHILD_TOOL and events != want):
                return False
        return True

    @property
    def spans_ok(self) -> bool:
        return not self.tracing or (self.spans_expected > 0 and not self.spans_missing
                                    and not self.spans_extra and not self.span_repeats_differ)

    @property
    def ok(self) -> bool:
        return (self.results == self.executions and self.lost == 0 and self.duplicates == 0
                and self.failed == 0 and self.wrong == 0 and self.event_duplicates == 0
                and self.projection_ok and self.history_ok and self.replay_differ == 0
                and self.keys_ok and self.spans_ok)

    def render(self) -> str:
        lines = [f"executions {self.executions}  results {self.results}  lost {self.lost}  "
                 f"duplicates {self.duplicates}  failed {self.failed}  wrong {self.wrong}",
                 f"worker SIGKILLs {self.kills}  wall {self.seconds:.1f}s  "
                 f"execution events {self.events} (duplicates {self.event_duplicates})"]
        for tool, (runs, events) in sorted(self.projection.items()):
            lines.append(f"  projection {tool:<16} runs7d {runs:6d}  events {events:6d}  "
                         f"expected {self.expected_events.get(tool, 0):6d}")
        if self.history:
            lines.append(f"  history rows {self.history_rows}  missing {self.history_missing}  "
                         f"differ {self.history_differ}  (distinct execution events "
                         f"{self.events - self.event_duplicates})")
        lines.append(f"  replay --verify: {self.replayed} trees re-run, {self.replay_differ} differ")
        lines.append(f"  retries: {self.retry_executions} executions, {self.retry_requests} "
                     f"upstream requests, {self.key_splits} with more than one key, "
                     f"{self.effects_missing} without an effect")
        if self.tracing:
            lines.append(f"  spans: {self.spans_expected} committed visits, missing "
                         f"{self.spans_missing}, extra {self.spans_extra}, repeated "
                         f"{self.span_repeats} ({self.span_repeats_differ} differ)")
        lines += [f"  note: {n}" for n in self.notes]
        lines.append("OK" if self.ok else "FAILED")
        return "\n".join(lines)


async def read_all(client: Client, stream: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    out: list[tuple[bytes, dict[bytes, bytes]]] = []
    cursor = "-"
    while True:
        page = await client.xrange(stream, min=cursor, max="+", count=2000)
        out += page
        if len(page) < 2000:
            return out
        cursor = "(" + page[-1][0].decode()


async def drained(client: Client, keys: Keys, timeout_s: float, history: bool = False,
                  tracing: bool = False) -> bool:
    """Every consumer group of the prefix has read and acked everything (bounded polling)."""
    pairs = [(keys.commands, COMMANDS_GROUP), (keys.executions, PROJECTION_GROUP)]
    if history:
        pairs.append((keys.executions, HISTORY_GROUP))
    if tracing:
        pairs.append((keys.executions, TRACING_GROUP))
    for n in range(keys.partitions):
        pairs += [(keys.steps(n), STEPS_GROUP), (keys.outbox(n), RELAY_GROUP)]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        idle = True
        for stream, group in pairs:
            groups = {g["name"].decode(): g for g in await client.xinfo_groups(stream)}
            g = groups.get(group)
            if g is None or g["pending"] or g.get("lag"):
                idle = False
                break
        if idle:
            return True
        await asyncio.sleep(0.1)  # polling server state, bounded by the deadline
    return False


async def setup_prefix(client: Client, keys: Keys, http_base: str) -> None:
    for pt, record in tools(http_base).items():
        await client.set(keys.tool(pt), json.dumps(record))


async def killer(pool: WorkerPool, rng: random.Random, every: float, stop: asyncio.Event) -> None:
    """SIGKILL a random worker every ``every`` seconds (jittered ±40%), and start it again."""
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), timeout=every * rng.uniform(0.6, 1.4))
        except TimeoutError:
            index = rng.randrange(len(pool.procs))
            pool.kill(index)
            pool.restart(index)


async def drive(client: Client, keys: Keys, plan: list[tuple[str, str, int]], *, window: int,
                rate: float, started: float, deadline: float) -> Counter[str]:
    """Publish the plan keeping ``window`` commands in flight; results seen, by command id."""
    executions = len(plan)
    seen: Counter[str] = Counter()
    sent = 0
    cursor = b"0-0"
    while len(seen) < executions and time.monotonic() < deadline:
        allowed = executions if not rate else min(
            executions, int(rate * (time.monotonic() - started)) + 1)
        if sent < allowed and sent - len(seen) < window:
            async with client.pipeline(transaction=False) as pipe:
                while sent < allowed and sent - len(seen) < window:
                    cid, pt, n = plan[sent]
                    pipe.xadd(keys.commands, command(pt, cid, n))
                    sent += 1
                await pipe.execute()
        left = max(1, int((deadline - time.monotonic()) * 1000))
        reply = await client.xread({keys.results: cursor}, count=1000,
                                   block=min(left, 100 if rate else 500))
        for _name, entries in reply or []:
            for entry_id, fields in entries:
                cursor = entry_id
                seen[json.loads(fields[b"data"])["commandId"]] += 1
    return seen


async def run(url: str, *, executions: int, seconds: float, workers: int = 3,
              kill_every: float = 3.0, window: int = 256, cluster: bool = False,
              seed: int | None = None, partitions: int = 4, rate: float = 0.0,
              history: bool = True, tracing: bool = False) -> Report:
    """``rate``: commands per second at most (0: as fast as the window allows), to spread
    the load over enough kills. ``history``: the workers write a run history into a SQLite
    file of their own, and every execution must land in it exactly once. ``tracing``: the
    workers export spans to a loopback OTLP receiver, and every committed execution and block
    visit must be one span there."""
    if tracing:
        with otlp_receiver() as receiver:
            return await _run(url, executions, seconds, workers, kill_every, window, cluster,
                              seed, partitions, rate, history, receiver)
    return await _run(url, executions, seconds, workers, kill_every, window, cluster, seed,
                      partitions, rate, history, None)


async def _run(url: str, executions: int, seconds: float, workers: int, kill_every: float,
               window: int, cluster: bool, seed: int | None, partitions: int, rate: float,
               history: bool, receiver: Receiver | None) -> Report:
    rng = random.Random(seed)
    prefix = f"chaos{uuid.uuid4().hex[:6]}:"
    keys = Keys(prefix, partitions)
    client = make_client(url, cluster=cluster)
    http = HoldingServer()
    env = {"CHATFLOW_PARTITIONS": str(partitions)}
    if cluster:
        env["CHATFLOW_REDIS_CLUSTER"] = "true"
    scratch = tempfile.TemporaryDirectory(prefix="chaos-history-")
    history_url = f"sqlite:///{Path(scratch.name) / 'history.db'}" if history else ""
    if history_url:  # migrated once here: workers killed mid-migration would prove nothing
        await migrate(history_url)
        env["CHATFLOW_HISTORY_URL"] = history_url
    if receiver is not None:
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.endpoint
    pool = WorkerPool(url, prefix, env)
    report = Report(executions, history=history, tracing=receiver is not None)
    started = time.monotonic()
    deadline = started + seconds
    try:
        await setup_prefix(client, keys, http.base)
        pool.start(workers)
        plan = [(f"c{i:06d}-{uuid.uuid4().hex[:8]}", MIX[i % len(MIX)], i) for i in range(executions)]
        rng.shuffle(plan)
        by_id = {cid: (pt, n) for cid, pt, n in plan}
        stop_killing = asyncio.Event()
        killing = asyncio.create_task(killer(pool, rng, kill_every, stop_killing))
        try:
            await drive(client, keys, plan, window=window, rate=rate, started=started,
                        deadline=deadline)
        finally:
            stop_killing.set()
            await killing
        report.kills = pool.killed
        report.seconds = time.monotonic() - started
        # Let late duplicates surface: every group drained, then read the streams whole.
        if not await drained(client, keys, max(10.0, deadline - time.monotonic()), history,
                             receiver is not None):
            report.notes.append("consumer groups not drained before the deadline")
        counts: Counter[str] = Counter()
        report.results = 0
        for _id, fields in await read_all(client, keys.results):
            result = json.loads(fields[b"data"])
            cid = result["commandId"]
            counts[cid] += 1
            if counts[cid] > 1:
                continue
            report.results += 1
            pt, n = by_id[cid]
            if not result.get("ok"):
                report.failed += 1
                if len(report.notes) < 5:
                    report.notes.append(f"{cid} failed: {result.get('error')}")
            elif result.get("result") != expected_value(pt, n):
                report.wrong += 1
        report.lost = executions - len(counts)
        report.duplicates = sum(c - 1 for c in counts.values())
        await check_projection(client, keys, plan, report)
        check_keys(http, plan, report)
        if history_url:
            await check_history(client, keys, history_url, report)
        if receiver is not None:
            await check_spans(client, keys, receiver.snapshot(), report)
        # Deterministic replay after kills: every tree's record re-decided by the machine.
        replayed = await verify_recent(client, keys, 2 * executions + 1_000)
        report.replayed, report.replay_differ = replayed.trees, len(replayed.differing)
        report.notes.extend(f"replay differs: {root}: {why}" for root, why in replayed.differing[:3])
    finally:
        pool.stop()
        http.stop()
        await client.aclose()
        scratch.cleanup()
    return report


async def migrate(url: str) -> None:
    engine = engine_for(url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()


async def check_history(client: Client, keys: Keys, url: str, report: Report) -> None:
    """Every execution event in the stream has exactly one run row (rows are keyed by
    execution id, so never two), with its event's tool, status, duration and end."""
    engine = engine_for(url)
    try:
        found = await verify(client, keys, engine)
        async with engine.connect() as conn:
            report.history_rows = int((await conn.execute(
                sa.select(sa.func.count()).select_from(run_rows))).scalar_one())
    finally:
        await engine.dispose()
    report.history_missing = len(found.missing)
    report.history_differ = found.differing


def check_keys(http: HoldingServer, plan: list[tuple[str, str, int]], report: Report) -> None:
    """Every chaos-retry execution sent one idempotency key, whatever its attempts and
    redeliveries, and that key's effect happened (a 200)."""
    retried = [str(n) for _cid, pt, n in plan if pt == "chaos-retry"]
    report.retry_executions = len(retried)
    report.retry_requests = http.flaky_requests
    report.key_splits = sum(1 for n in retried if len(http.keys_of.get(n, ())) > 1)
    report.effects_missing = sum(1 for n in retried
                                 if not (http.keys_of.get(n, set()) & http.effects))


async def check_spans(client: Client, keys: Keys, spans: list[ReceivedSpan],
                      report: Report) -> None:
    """One span per committed visit: every execution event and every ``block`` entry of the
    trees' event logs is one distinct span (its execution and block), and none more; a span
    the collector got twice (an export repeated after a kill) carries the same bytes."""
    events = [json.loads(f[b"data"]) for _id, f in await read_all(client, keys.executions)]
    expected: Counter[tuple[str, str]] = Counter()
    roots = sorted({e["rootExecutionId"] for e in events})
    for root in roots:
        raw = await client.get(keys.log(keys.partition_of_exec(root), root))
        waiting: dict[str, str] = {}  # execution -> its callTool block waiting for a child
        for entry in decode_log(raw or b""):
            if entry.type == "spawned":
                waiting[entry.execId] = entry.blockId or ""
            elif entry.type == "block":
                expected[(entry.execId, f"chatflow.block {entry.blockType} {entry.blockId}")] += 1
                waiting.pop(entry.execId, None)
        for exec_id, block_id in waiting.items():  # the tree ended (timeout) while it waited
            expected[(exec_id, f"chatflow.block callTool {block_id}")] += 1
    for exec_id, tool in {(e["executionId"], e["toolId"]) for e in events}:
        expected[(exec_id, f"chatflow.execute {tool}")] += 1
    by_id: dict[str, set[bytes]] = {}
    got: Counter[tuple[str, str]] = Counter()
    for span in spans:
        if span.span_id not in by_id:
            got[(str(span.attributes.get("chatflow.execution_id")), span.name)] += 1
        by_id.setdefault(span.span_id, set()).add(span.raw)
    report.spans_expected = sum(expected.values())
    report.spans_missing = sum((expected - got).values())
    report.spans_extra = sum((got - expected).values())
    report.span_repeats = len(spans) - len(by_id)
    report.span_repeats_differ = sum(1 for raws in by_id.values() if len(raws) > 1)


async def check_projection(client: Client, keys: Keys, plan: list[tuple[str, str, int]],
                           report: Report) -> None:
    per_pt = Counter(pt for _cid, pt, _n in plan)
    expected = {f"t-{pt}": c for pt, c in per_pt.items()}
    expected[CHILD_TOOL] = per_pt["chaos-nested"]
    report.expected_events = expected
    executions: Counter[str] = Counter()
    per_tool: Counter[str] = Counter()
    for _id, fields in await read_all(client, keys.executions):
        event = json.loads(fields[b"data"])
        executions[event["executionId"]] += 1
        if executions[event["executionId"]] == 1:
            per_tool[event["toolId"]] += 1
    report.events = sum(executions.values())
    report.event_duplicates = sum(c - 1 for c in executions.values())
    metrics = await tool_metrics(client, keys, sorted(set(per_tool) | set(expected)))
    report.projection = {tool: (m["runs7d"], per_tool[tool]) for tool, m in metrics.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executions", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=600.0, help="bound on the whole run")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--kill-every", type=float, default=3.0, help="mean seconds between kills")
    parser.add_argument("--window", type=int, default=256, help="commands in flight")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="commands per second at most (0: as fast as the window allows)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--no-history", dest="history", action="store_false",
                        help="run without the SQLite run history (and without checking it)")
    parser.add_argument("--tracing", action="store_true",
                        help="export spans to a loopback OTLP receiver and check one per visit")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    parser.add_argument("--cluster", action="store_true",
                        help="against a local 3-master cluster (or --redis-url of a cluster node)")
    args = parser.parse_args()
    servers: Any = None
    url = args.redis_url
    if not url:
        servers = LocalCluster().start() if args.cluster else EmbeddedServer().start()
        url = servers.url
    try:
        report = asyncio.run(run(url, executions=args.executions, seconds=args.seconds,
                                 workers=args.workers, kill_every=args.kill_every,
                                 window=args.window, cluster=args.cluster, seed=args.seed,
                                 rate=args.rate, history=args.history, tracing=args.tracing))
    finally:
        if servers is not None:
            servers.stop()
    print(report.render(), flush=True)
    sys.exit(0 if report.ok else 1)


if __name__ == "__main__":
    main()
