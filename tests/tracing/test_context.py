"""Context in and out: a command's traceparent, sampling, tracing off, and what never moves.

In-process workers on a real Valkey, a loopback upstream and a loopback OTLP receiver.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

import msgspec
import pytest
import structlog

from chatflow.handlers.operations import metrics
from chatflow.handlers.operations.logging import (
    add_execution_ids,
    enter_execution,
    leave_execution,
    use_tracing,
)
from chatflow.handlers.operations.tracing import Tracing, sampler_of, visit_span_id
from chatflow.handlers.projections.spans import retry_events
from chatflow.runtime.masking import span_url
from chatflow.runtime.state import ExecState, RootInfo, decode_log, state_encoder
from chatflow.schemas.wire import ExecuteToolAction, ExecuteToolCommand
from tests.harness import Harness
from tests.support.http import LoopbackServer, json_reply
from tests.support.otlp import Receiver, attributes_of, decoded, otlp_receiver

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


def http_tool(base: str) -> dict[str, Any]:
    return {"onboardingBlockId": "h", "blocks": {
        "h": {"type": "httpCall", "id": "h", "method": "GET", "url": base + "/echo",
              "responseBodyVariable": "resp", "onError": "blocking", "outputConditions": [],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{resp.n}}"}}}


@pytest.fixture
def otlp() -> Iterator[Receiver]:
    with otlp_receiver() as receiver:
        yield receiver


@pytest.fixture
def upstream(http_server: LoopbackServer) -> LoopbackServer:
    http_server.route("GET", "/echo", lambda _r: json_reply({"n": 1}))
    return http_server


def with_trace(command: ExecuteToolCommand, traceparent: Any, tracestate: Any = None
               ) -> ExecuteToolCommand:
    return msgspec.structs.replace(command, traceparent=traceparent, tracestate=tracestate)


async def root_log(h: Harness, exec_id: str) -> list[Any]:
    raw = await h.client.get(h.keys.log(h.keys.partition_of_exec(exec_id), exec_id))
    return decode_log(raw or b"")


@contextmanager
def debug_logs() -> Iterator[list[MutableMapping[str, Any]]]:
    """Every log line, debug ones included, whatever level an earlier test of this process
    configured (capture_logs keeps the configured level filter)."""
    before = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with structlog.testing.capture_logs() as logs:
            yield logs
    finally:
        structlog.configure(**before)


async def test_a_malformed_traceparent_is_ignored_and_the_trace_starts_at_the_command(
        redis_url: str, prefix: str, upstream: LoopbackServer, otlp: Receiver) -> None:
    h = Harness(redis_url, prefix, otel_traces_endpoint=otlp.endpoint)
    try:
        await h.put_tool("t", http_tool(upstream.base))
        await h.start_worker()
        with debug_logs() as logs:
            results = [await h.run_command(with_trace(h.command("t"), bad))
                       for bad in ("00-zz-not-a-header", 12345, "00-" + "0" * 32 + "-" + PARENT + "-01")]
        assert all(r.ok and r.result == "1" for r in results), results
        notes = [e for e in logs if e["event"].startswith("traceparent ignored")]
        assert len(notes) == 3 and {n["log_level"] for n in notes} == {"debug"}, notes
        spans = await otlp.wait(lambda s: sum(x.name.startswith("chatflow.execute") for x in s) >= 3)
        roots = [s for s in spans if s.name.startswith("chatflow.execute")]
        assert all(s.parent_id == "" for s in roots)  # each its own trace, started here
        assert len({s.trace_id for s in roots}) == 3
        for r in results:  # nothing was kept of the bad values
            started = (await root_log(h, r.executionId or ""))[0]
            assert "traceparent" not in (started.detail or {})
    finally:
        await h.close()


async def test_an_unsampled_producer_is_obeyed_and_its_decision_sent_on(
        redis_url: str, prefix: str, upstream: LoopbackServer, otlp: Receiver) -> None:
    """Parent-based sampling: the producer's 'not sampled' holds for the whole tree (no span
    is exported) and is passed on to the customer's API (flags 00)."""
    h = Harness(redis_url, prefix, otel_traces_endpoint=otlp.endpoint)
    try:
        await h.put_tool("t", http_tool(upstream.base))
        await h.start_worker()
        unsampled = await h.run_command(with_trace(h.command("t"), f"00-{TRACE}-{PARENT}-00"))
        sampled = await h.run_command(with_trace(h.command("t"), f"00-{TRACE}-{PARENT}-01"))
        assert unsampled.ok and sampled.ok
        sent = [r.headers["traceparent"] for r in upstream.requests]
        assert sent[0].startswith(f"00-{TRACE}-") and sent[0].endswith("-00")
        assert sent[1].startswith(f"00-{TRACE}-") and sent[1].endswith("-01")
        spans = await otlp.wait(lambda s: any(x.name.startswith("chatflow.execute") for x in s))
        await h.drained(h.keys.executions, "chatflow-tracing")
        executions = {s.attributes["chatflow.execution_id"] for s in otlp.snapshot()}
        assert executions == {sampled.executionId}, spans
    finally:
        await h.close()


async def test_tracing_off_reads_no_traceparent_and_sends_none(
        redis_url: str, prefix: str, upstream: LoopbackServer) -> None:
    h = Harness(redis_url, prefix)  # no OTEL_EXPORTER_OTLP_ENDPOINT: tracing is off
    try:
        await h.put_tool("t", http_tool(upstream.base))
        worker = await h.start_worker()
        assert worker.tracing is None and worker.spans is None
        result = await h.run_command(with_trace(h.command("t"), f"00-{TRACE}-{PARENT}-01"))
        assert result.ok
        assert "traceparent" not in {k.lower() for k in upstream.requests[0].headers}
        started = (await root_log(h, result.executionId or ""))[0]
        assert "traceparent" not in (started.detail or {})
        groups = {g["name"].decode() for g in await h.client.xinfo_groups(h.keys.executions)}
        assert "chatflow-tracing" not in groups
    finally:
        await h.close()


def test_an_absent_traceparent_adds_no_byte_to_a_command_or_a_state() -> None:
    action = ExecuteToolAction(id="a", toolId="t", publishedToolId="pt")
    command = ExecuteToolCommand("c-1", action)
    assert b"trace" not in msgspec.json.encode(command)
    root = RootInfo("c-1", action, None, {}, "", {}, {}, 0)
    assert b"trace" not in state_encoder.encode(root)
    traced = msgspec.structs.replace(root, traceparent=f"00-{TRACE}-{PARENT}-01")
    assert b"traceparent" in state_encoder.encode(traced)


async def test_a_repeat_export_is_the_same_span_byte_for_byte(
        redis_url: str, prefix: str, upstream: LoopbackServer, otlp: Receiver) -> None:
    """A rebuilt (or redelivered) tracing projection exports the spans again with the same
    ids and the same content: at a collector, one span per block visit."""
    h = Harness(redis_url, prefix, otel_traces_endpoint=otlp.endpoint)
    try:
        await h.put_tool("t", http_tool(upstream.base))
        await h.start_worker()
        assert (await h.run("t")).ok
        first = await otlp.wait(lambda s: len(s) >= 3)
        await h.drained(h.keys.executions, "chatflow-tracing")
        await h.client.xgroup_setid(h.keys.executions, "chatflow-tracing", "0")  # a rebuild
        again = await otlp.wait(lambda s: len(s) >= 2 * len(first))
        by_id: dict[str, set[bytes]] = {}
        for span in again:
            by_id.setdefault(span.span_id, set()).add(span.raw)
        assert len(by_id) == len(first) and all(len(v) == 1 for v in by_id.values())
    finally:
        await h.close()


async def test_a_sampled_trees_durations_carry_its_trace_id_as_an_exemplar(
        redis_url: str, prefix: str, upstream: LoopbackServer, otlp: Receiver) -> None:
    h = Harness(redis_url, prefix, otel_traces_endpoint=otlp.endpoint)
    try:
        await h.put_tool("t", http_tool(upstream.base))
        await h.start_worker()
        result = await h.run_command(with_trace(h.command("t"), f"00-{TRACE}-{PARENT}-01"))
        assert result.ok
        exemplar = f'# {{trace_id="{TRACE}"}}'

        def carried(text: str, metric: str) -> bool:
            return any(line.startswith(metric) and exemplar in line for line in text.splitlines())

        # The result is out the moment the commit ran; the worker (its tracing projection, for
        # the exemplars) counts it after: wait for both histograms, bounded.
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            body, ctype = metrics.negotiated("application/openmetrics-text; version=1.0.0")
            text = body.decode()
            if (carried(text, "chatflow_tool_execution_duration_seconds_bucket")
                    and carried(text, "chatflow_block_duration_seconds_bucket")) \
                    or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.01)  # the worker's turn on this loop, bounded above
        assert ctype.startswith("application/openmetrics-text")
        assert carried(text, "chatflow_block_duration_seconds_bucket"), text[-3000:]
        assert carried(text, "chatflow_tool_execution_duration_seconds_bucket")
        plain, _ = metrics.negotiated("text/plain")
        assert b"trace_id" not in plain  # the Prometheus text format has no exemplars
    finally:
        await h.close()


def test_log_lines_inside_a_sampled_block_carry_its_trace_and_span_ids() -> None:
    tracing = Tracing("http://127.0.0.1:9/v1/traces")
    root = RootInfo("c-1", ExecuteToolAction(id="a", toolId="t", publishedToolId="pt"),
                    None, {}, "", {}, {}, 0, traceparent=f"00-{TRACE}-{PARENT}-01")
    state = msgspec.convert({
        "execId": "1-abc", "rootId": "1-abc", "partition": 1, "depth": 0, "toolId": "t",
        "publishedToolId": "pt", "defHash": "", "block": "h", "variables": {},
        "context": {}, "root": msgspec.to_builtins(root), "startedMs": 0,
        "deadlineMs": 1, "hops": 2}, type=ExecState)
    use_tracing(tracing)
    token = enter_execution(state)
    try:
        event = add_execution_ids(None, "info", {"event": "x"})
    finally:
        leave_execution(token)
        use_tracing(None)
    assert event["trace_id"] == TRACE
    assert event["span_id"] == f"{visit_span_id('1-abc', 2):016x}"
    # the header the block's request carries names that same span
    assert tracing.visit_headers(state)["traceparent"] == f"00-{TRACE}-{event['span_id']}-01"


def test_span_urls_are_masked_as_the_history_masks_them() -> None:
    masked = span_url("https://user:pw@api.example.com/v1?api_key=s3cr3t&q=1&sig=abc&k=stor3dvalue#x",
                      secrets=("stor3dvalue",))
    assert "user" not in masked and "pw@" not in masked and "s3cr3t" not in masked
    assert "abc" not in masked and "stor3dvalue" not in masked
    assert "q=1" in masked and masked.startswith("https://api.example.com/v1?")


def test_retry_attempts_become_span_events() -> None:
    events = retry_events({"attempts": [{"at": 5, "status": 503}, {"at": 9, "status": 200}]})
    assert [e.name for e in events] == ["chatflow.attempt"] * 2
    assert [e.attributes["http.request.resend_count"] for e in events] == [0, 1]
    assert events[0].attributes["http.response.status_code"] == 503
    assert retry_events({}) == []


def test_the_standard_samplers_and_a_bad_one() -> None:
    assert "ParentBased" in type(sampler_of("parentbased_traceidratio", "0.01")).__name__
    assert sampler_of("always_off", "").get_description() == "AlwaysOffSampler"
    with pytest.raises(ValueError, match="OTEL_TRACES_SAMPLER"):
        sampler_of("sometimes", "")
    with pytest.raises(ValueError, match="OTEL_TRACES_SAMPLER_ARG"):
        sampler_of("traceidratio", "2")


def test_one_percent_sampling_exports_about_one_tree_in_a_hundred() -> None:
    tracing = Tracing("http://127.0.0.1:9/v1/traces", sampler=sampler_of("parentbased_traceidratio", "0.01"))
    sampled = sum(tracing.tree(f"1-{i:032x}").sampled for i in range(20_000))
    assert 100 <= sampled <= 300  # 200 expected


def _one_block_tree(contact: str) -> tuple[Any, list[Any]]:
    from chatflow.runtime.state import LogEntry
    from chatflow.schemas.wire import ToolExecutionStreamEvent

    root = "1-" + "b" * 32
    log = [LogEntry("started", root, 1_000, blockId="r",
                    detail={"publishedToolId": "pt", "context": {"contact": {"id": contact}}}),
           LogEntry("block", root, 1_002, blockId="r", blockType="return", durationMs=0, ok=True),
           LogEntry("finished", root, 1_002, ok=True, result="x")]
    event = ToolExecutionStreamEvent("t", "pt", 2, True, "2026-01-01T00:00:00+00:00", root, root,
                                     "cmd-1", 0)
    return event, log


def test_the_contact_id_is_on_a_span_only_when_the_operator_opts_in() -> None:
    from chatflow.handlers.projections.spans import SpanBuilder

    event, log = _one_block_tree("5511999990000")
    default = decoded(SpanBuilder(Tracing("http://127.0.0.1:9/v1/traces")).spans(event, log))
    opted = decoded(SpanBuilder(Tracing("http://127.0.0.1:9/v1/traces", contact=True))
                    .spans(event, log))
    assert [s.name for s in default] == ["chatflow.execute t", "chatflow.block return r"]
    assert all("5511999990000" not in str(attributes_of(s)) for s in default)
    assert attributes_of(opted[0])["chatflow.contact_id"] == "5511999990000"
