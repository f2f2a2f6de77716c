"""The worker's /metrics, /health/live and /health/ready, after real executions."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from chatflow.handlers.dataplane.worker import Worker
from chatflow.handlers.operations import metrics
from chatflow.handlers.operations.embedded import free_port
from tests.harness import Harness
from tests.ops.tools import looping, returning, script_failing


def families(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return {f.name: [(s.name, s.labels, s.value) for s in f.samples]
            for f in text_string_to_metric_families(text)}


def value(fams: dict[str, list[tuple[str, dict[str, str], float]]], sample: str,
          **labels: str) -> float:
    family = sample.removesuffix("_total").removesuffix("_count").removesuffix("_bucket")
    return sum(v for name, lbl, v in fams.get(family, [])
               if name == sample and all(lbl.get(k) == x for k, x in labels.items()))


async def test_the_metrics_endpoint_shows_executions_blocks_errors_and_streams(
        bare: Harness) -> None:
    port = free_port()
    # room for this test's tool labels, whatever earlier tests in this process admitted
    await bare.start_worker(metrics_port=port, metrics_host="127.0.0.1", max_hops=3,
                            metrics_max_tools=10_000)
    await bare.put_tool("pt-m-ok", returning("hi"))
    await bare.put_tool("pt-m-bad", script_failing())
    await bare.put_tool("pt-m-loop", looping())
    assert (await bare.run("pt-m-ok")).ok
    assert (await bare.run("pt-m-bad")).error is not None
    loop = await bare.run("pt-m-loop")
    assert loop.error is not None and loop.error.code == "tool_loop"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        scrape = await http.get("/metrics")
        live = await http.get("/health/live")
        ready = await http.get("/health/ready")
    assert scrape.status_code == 200 and live.status_code == 200 and ready.status_code == 200
    fams = families(scrape.text)
    assert value(fams, "chatflow_tool_executions_total", tool="pt-m-ok", outcome="success") >= 1
    assert value(fams, "chatflow_tool_executions_total", tool="pt-m-bad", outcome="failure") >= 1
    assert value(fams, "chatflow_tool_execution_duration_seconds_count", tool="pt-m-ok") >= 1
    assert value(fams, "chatflow_block_steps_total", block_type="executeScript",
                 outcome="error") >= 1
    assert value(fams, "chatflow_block_duration_seconds_count", block_type="return") >= 1
    assert value(fams, "chatflow_errors_total", code="tool_loop") >= 1
    assert value(fams, "chatflow_guardrail_trips_total", kind="hops") >= 1
    assert value(fams, "chatflow_results_total", outcome="ok") >= 1
    assert any(lbl == {"stream": "tool-commands", "group": "chatflow-workers"}
               for _n, lbl, _v in fams["chatflow_stream_pending"])
    assert any(lbl.get("group") == "core-tool-executions" for _n, lbl, _v in
               fams["chatflow_stream_lag"])
    for name in ("chatflow_reaper_actions", "chatflow_dead_letters", "chatflow_llm_tokens",
                 "chatflow_worker_up", "chatflow_executions_in_flight",
                 "chatflow_relayed_messages"):
        assert name in fams


async def test_a_worker_whose_redis_does_not_answer_is_not_ready(bare: Harness) -> None:
    worker = Worker(bare.settings, f"redis://127.0.0.1:{free_port()}/0")
    ready, why = await worker.ready()
    assert not ready and "redis unreachable" in why
    await worker.client.aclose()
    await worker.http.aclose()
    worker.sandbox.close()


async def test_a_worker_whose_subscribers_have_not_started_is_not_ready(bare: Harness) -> None:
    worker = Worker(bare.settings, bare.url)
    ready, why = await worker.ready()
    assert not ready and "not running" in why
    await worker.client.aclose()
    await worker.http.aclose()
    worker.sandbox.close()


async def test_an_unknown_path_is_not_found_and_only_get_is_served(bare: Harness) -> None:
    port = free_port()
    await bare.start_worker(metrics_port=port, metrics_host="127.0.0.1")
    await bare.put_tool("pt-m-warm", returning("x"))
    assert (await bare.run("pt-m-warm")).ok
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        assert (await http.get("/nope")).status_code == 404
        assert (await http.post("/metrics")).status_code == 405


async def test_commands_naming_unknown_tools_share_one_label_and_leave_the_slots_to_real_tools(
        bare: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    # A label set of its own, whatever earlier tests in this process admitted; the worker
    # caps it at metrics_max_tools.
    monkeypatch.setattr(metrics, "tool_label", metrics.BoundedLabel(0))
    await bare.start_worker(metrics_max_tools=2)
    for i in range(5):
        result = await bare.run(f"pt-made-up-{i}")
        assert result.error is not None and result.error.code == "tool_not_found"
    await bare.put_tool("pt-real", returning("hi"))
    assert (await bare.run("pt-real")).ok
    sample = metrics.REGISTRY.get_sample_value
    # The worker counts a batch right after its commit returns, which is when the result
    # can be read: wait for the count, bounded.
    for _ in range(500):
        if sample("chatflow_tool_executions_total", {"tool": "pt-real", "outcome": "success"}):
            break
        await asyncio.sleep(0.01)
    assert sample("chatflow_tool_executions_total", {"tool": "pt-real", "outcome": "success"}) == 1
    assert sample("chatflow_tool_executions_total", {"tool": "unknown", "outcome": "failure"}) >= 5
    assert sample("chatflow_tool_executions_total", {"tool": "pt-made-up-0",
                                                     "outcome": "failure"}) is None


def test_a_batch_of_durations_observed_at_once_reads_the_same_as_one_observe_each() -> None:
    """observe_batch touches each bucket once per batch; what a scrape reads must not move."""
    from prometheus_client import CollectorRegistry, Histogram, generate_latest

    registry = CollectorRegistry()
    batched = Histogram("batched", "d", ["k"], buckets=metrics.DURATION_BUCKETS,
                        registry=registry)
    single = Histogram("single", "d", ["k"], buckets=metrics.DURATION_BUCKETS,
                       registry=registry)
    # On a bound, between bounds, past the last one, zero and negative.
    values = [0.0, 0.005, 0.006, 0.01, 0.3, 0.3, 59.0, 60.0, 61.0, 1e9, -1.0, 2.5]
    metrics.observe_batch(batched.labels("a"), values)
    for v in values:
        single.labels("a").observe(v)
    fams = families(generate_latest(registry).decode())
    got = sorted((n.removeprefix("batched"), tuple(sorted(lbl.items())), v)
                 for n, lbl, v in fams["batched"] if not n.endswith("_created"))
    want = sorted((n.removeprefix("single"), tuple(sorted(lbl.items())), v)
                  for n, lbl, v in fams["single"] if not n.endswith("_created"))
    assert got == want
    assert value(fams, "batched_count", k="a") == len(values)


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class _Reference:
    """What one transition at a time counts (the observation before it was batched): the
    samples each label set must move by, histogram counts, sums and buckets included."""

    def __init__(self) -> None:
        self.want: Samples = {}

    def add(self, sample: str, n: float, **labels: str) -> None:
        key = (sample, tuple(sorted(labels.items())))
        self.want[key] = self.want.get(key, 0) + n

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        self.add(f"{name}_count", 1, **labels)
        self.add(f"{name}_sum", seconds, **labels)
        for bound in metrics.DURATION_BUCKETS:
            self.add(f"{name}_bucket", seconds <= bound, le=str(bound), **labels)

    def log(self, entries: list[Any]) -> None:
        for e in entries:
            if e.type == "block":
                kind = e.blockType if e.blockType in metrics.BLOCK_TYPES else "other"
                self.add("chatflow_block_steps_total", 1, block_type=kind,
                         outcome="ok" if e.ok else "error")
                self.observe("chatflow_block_duration_seconds", (e.durationMs or 0) / 1000,
                             block_type=kind)
            elif e.type in ("finished", "aborted") and e.error is not None:
                code = e.error.code if e.error.code.islower() else "other"
                self.add("chatflow_errors_total", 1, code=code)
                if e.error.code in metrics.GUARDRAILS:
                    self.add("chatflow_guardrail_trips_total", 1,
                             kind=metrics.GUARDRAILS[e.error.code])

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "execution":
            outcome = "success" if data["success"] else "failure"
            tool = "unknown" if data["errorCode"] == "tool_not_found" else data["publishedToolId"]
            self.add("chatflow_tool_executions_total", 1, tool=tool, outcome=outcome)
            self.observe("chatflow_tool_execution_duration_seconds", data["durationMs"] / 1000,
                         tool=tool, outcome=outcome)
        elif kind == "result":
            self.add("chatflow_results_total", 1, outcome="ok" if data["ok"] else "error")
        elif kind == "llm_usage":
            for tokens in ("prompt", "completion"):
                self.add("chatflow_llm_tokens_total", data[f"{tokens}Tokens"],
                         capability=data["capability"], kind=tokens)


def _reference(commits: list[Any], verdicts: list[int]) -> Samples:
    ref = _Reference()
    for commit, verdict in zip(commits, verdicts, strict=True):
        if verdict != 1:
            ref.add("chatflow_commits_dropped_total", 1,
                    reason={0: "already_answered", -1: "stale"}[verdict])
            continue
        ref.log(commit.transition.log)
        for emit in commit.transition.emits:
            if emit.data[:1] == b"{":  # a malformed emit counts nothing
                ref.emit(emit.kind, msgspec.json.decode(emit.data))
    return ref.want


def test_a_commit_batch_counts_every_metric_and_label_as_one_transition_at_a_time_did(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """observe_commits gathers a batch before touching a label set; what it counts must be
    what observing each transition on its own counted, metric by metric, label by label."""
    from types import SimpleNamespace

    from chatflow.runtime.state import Emit, LogEntry, Transition
    from chatflow.schemas.wire import ErrorInfo

    monkeypatch.setattr(metrics, "tool_label", metrics.BoundedLabel(10))
    monkeypatch.setattr(metrics, "code_label",
                        metrics.BoundedLabel(100, metrics._CODE, metrics.GUARDRAILS))

    def execution(pt: str, ok: bool, ms: int, code: str | None = None) -> Emit:
        return Emit("execution", "k", msgspec.json.encode(
            {"toolId": "t", "publishedToolId": pt, "durationMs": ms, "success": ok,
             "occurredAt": "2026-12-02T10:00:00+00:00", "executionId": f"e-{pt}-{ms}",
             "errorCode": code}))

    def block(kind: str, ok: bool, ms: int | None) -> LogEntry:
        return LogEntry("block", "0-a", 1, blockId="b", blockType=kind, durationMs=ms, ok=ok)

    def ended(kind: str, code: str) -> LogEntry:
        return LogEntry(kind, "0-a", 2, error=ErrorInfo(code, "why"))

    usage = Emit("llm_usage", "c", msgspec.json.encode(
        {"toolId": "t", "publishedToolId": "pt-batch-a", "credentialId": "c",
         "capability": "chat", "model": "m", "promptTokens": 11, "completionTokens": 7,
         "totalTokens": 18, "durationMs": 5, "occurredAt": "2026-12-02T10:00:00+00:00"}))
    transitions = [
        Transition(log=[LogEntry("started", "0-a", 0), block("executeScript", True, 3),
                        block("return", True, 0), LogEntry("finished", "0-a", 4, ok=True)],
                   emits=[execution("pt-batch-a", True, 4),
                          Emit("result", "r", b'{"ok":true,"result":"x"}')]),
        Transition(log=[block("executeScript", False, 7000), ended("finished", "script_error"),
                        block("mystery", True, None)],
                   emits=[execution("pt-batch-a", False, 7000, "script_error"),
                          Emit("result", "r", b'{"ok":false}'), usage]),
        Transition(log=[block("httpCall", True, 120), ended("aborted", "tool_loop"),
                        ended("finished", "Not Snake")],
                   emits=[execution("pt-batch-b", False, 60_001, "tool_loop"),
                          execution("pt-gone", False, 0, "tool_not_found"),
                          Emit("execution", "k", b"not json"),
                          Emit("debug", "d", b"{}")]),
        Transition(log=[block("return", True, 0)], emits=[execution("pt-batch-a", True, 4)]),
        Transition(log=[block("return", True, 0)], emits=[execution("pt-batch-a", True, 4)]),
    ]
    commits = [SimpleNamespace(transition=t) for t in transitions]
    commits.append(SimpleNamespace(transition=None))  # a bare ack counts nothing
    verdicts = [1, 1, 1, 0, -1, 1]
    want = _reference(commits[:5], verdicts[:5])
    sample = metrics.REGISTRY.get_sample_value
    before = {key: sample(key[0], dict(key[1])) or 0.0 for key in want}
    metrics.observe_commits(commits, verdicts)
    got = {key: (sample(key[0], dict(key[1])) or 0.0) - before[key] for key in want}
    assert got == pytest.approx(want)
    assert want[("chatflow_tool_executions_total",
                 (("outcome", "success"), ("tool", "pt-batch-a")))] == 1
    assert want[("chatflow_guardrail_trips_total", (("kind", "hops"),))] == 1


# -- issue 32: the series alerts read exist at 0 before the first failure


def _raised_codes() -> set[str]:
    """Codes the runtime's sources fail with: the error table's rows, any
    ToolFailure/ToolError("code", ...) literal left, and the sandbox's SCRIPT_* constants."""
    import ast
    from pathlib import Path

    from chatflow.runtime.sandbox import _types

    root = Path(__file__).resolve().parents[2]
    from chatflow.runtime.errors import ErrorCode

    codes = {v for k, v in vars(_types).items() if k.startswith("SCRIPT_")}
    codes |= {code.value for code in ErrorCode}
    for path in [*root.joinpath("runtime").rglob("*.py"), *root.joinpath("handlers").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("ToolFailure", "ToolError") and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                codes.add(node.args[0].value)
    return codes


def test_every_code_the_runtime_fails_with_has_a_series_from_the_start() -> None:
    assert _raised_codes() - set(metrics.ERROR_CODES) == set()
    assert len(set(metrics.ERROR_CODES)) == len(metrics.ERROR_CODES)


async def test_a_fresh_worker_exposes_every_error_code_at_zero_before_any_failure(
        redis_url: str, prefix: str) -> None:
    from tests.support.processes import start_worker, stop

    port = free_port()
    proc = start_worker(redis_url, prefix, metrics_port=str(port), metrics_host="127.0.0.1")
    try:
        text = ""
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            for _ in range(300):  # the process's start-up: up to 30 s on a loaded machine
                try:
                    text = (await http.get("/metrics")).text
                    break
                except httpx.TransportError:
                    assert proc.poll() is None, "the worker exited"
                    await asyncio.sleep(0.1)
        fams = families(text)
        errors = {lbl["code"]: v for name, lbl, v in fams["chatflow_errors"]
                  if name == "chatflow_errors_total"}
        assert errors["tool_timeout"] == 0  # what the ChatflowTimeouts alert divides
        assert {code: errors.get(code) for code in metrics.ERROR_CODES} == dict.fromkeys(
            metrics.ERROR_CODES, 0.0)
        results = {lbl["outcome"] for name, lbl, _v in fams["chatflow_results"]
                   if name == "chatflow_results_total"}
        assert results == {"ok", "error"}
        kinds = {lbl["kind"] for name, lbl, _v in fams["chatflow_guardrail_trips"]
                 if name == "chatflow_guardrail_trips_total"}
        assert kinds == set(metrics.GUARDRAILS.values())
    finally:
        stop(proc)
