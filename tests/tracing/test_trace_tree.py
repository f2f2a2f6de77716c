"""One trace from the command to the customer's API, received over real OTLP/HTTP.

A loopback receiver decodes each ``ExportTraceServiceRequest`` (tests/support/otlp.py); the
workers are ``chatflow worker`` processes configured by the standard OTEL_* variables; the
upstream is a loopback server that records the headers it was sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.harness import Harness
from tests.support.http import LoopbackServer, Request, json_reply
from tests.support.otlp import ReceivedSpan, Receiver, otlp_receiver
from tests.support.processes import start_worker, stop
from tests.tracing.tools import TREE_SPANS, leaf_tool, parent_tool

PRODUCER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PRODUCER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$")


def _echo(request: Request) -> tuple[int, dict[str, str], bytes]:
    n = request.path.split("n=", 1)[1].split("&", 1)[0]
    return json_reply({"n": int(n)})


@pytest.fixture
def upstream(http_server: LoopbackServer) -> LoopbackServer:
    http_server.route("GET", "/echo", _echo)
    return http_server


@pytest.fixture
def otlp() -> Iterator[Receiver]:
    with otlp_receiver() as receiver:
        yield receiver


async def _publish_tree(h: Harness, upstream: str) -> None:
    await h.put_tool("top", parent_tool("mid"))
    await h.put_tool("mid", parent_tool("leaf"))
    await h.put_tool("leaf", leaf_tool(upstream))


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def check_tree(spans: list[ReceivedSpan], *, root_parent: str = "") -> dict[str, ReceivedSpan]:
    """Every span of one run of the tree, each under the right parent, in one trace."""
    assert len(spans) == TREE_SPANS, sorted(s.name for s in spans)
    assert len({s.span_id for s in spans}) == TREE_SPANS
    assert len({s.trace_id for s in spans}) == 1
    named = {name: _one(spans, name) for name in (
        "chatflow.execute t-top", "chatflow.execute t-mid",
        "chatflow.execute t-leaf", "chatflow.block httpCall h", "chatflow.block executeScript s")}
    top, mid, leaf = (named[f"chatflow.execute t-{t}"] for t in ("top", "mid", "leaf"))
    calls = [s for s in spans if s.name == "chatflow.block callTool c"]
    returns = [s for s in spans if s.name == "chatflow.block return r"]
    assert len(calls) == 2 and len(returns) == 3
    assert top.parent_id == root_parent
    top_call = next(s for s in calls if s.parent_id == top.span_id)
    mid_call = next(s for s in calls if s.parent_id == mid.span_id)
    assert mid.parent_id == top_call.span_id and leaf.parent_id == mid_call.span_id
    http = named["chatflow.block httpCall h"]
    assert http.parent_id == leaf.span_id
    assert named["chatflow.block executeScript s"].parent_id == leaf.span_id
    assert sorted(r.parent_id for r in returns) == sorted(
        [top.span_id, mid.span_id, leaf.span_id])
    for span in spans:  # a child's span lies within its parent's
        parent = next((p for p in spans if p.span_id == span.parent_id), None)
        if parent is not None:
            assert parent.start_ns <= span.start_ns <= span.end_ns <= parent.end_ns, span.name
    assert top.attributes["chatflow.published_tool_id"] == "top"
    assert leaf.attributes["chatflow.depth"] == 2
    assert http.attributes["chatflow.block_id"] == "h"
    assert top_call.attributes["chatflow.child_execution_id"] == mid.attributes[
        "chatflow.execution_id"]
    return {"http": http, "top": top}


def check_http_span(http: ReceivedSpan, upstream: LoopbackServer) -> None:
    """An HTTP client span (semantic conventions), its URL masked, no header recorded."""
    assert http.kind == 3  # SPAN_KIND_CLIENT
    attributes = http.attributes
    assert attributes["http.request.method"] == "GET"
    assert attributes["http.response.status_code"] == 200
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["url.full"].startswith(upstream.base + "/echo?n=7")
    dumped = json.dumps(attributes)
    assert "s3cr3t" not in dumped and "top-secret" not in dumped, dumped


def check_upstream_parent(upstream: LoopbackServer, http: ReceivedSpan) -> None:
    """The customer's API was sent a traceparent whose parent is the httpCall span."""
    sent = [r.headers.get("traceparent", "") for r in upstream.requests]
    assert len(sent) == 1, sent
    match = TRACEPARENT.match(sent[0])
    assert match, sent
    assert match.group(1) == http.trace_id and match.group(2) == http.span_id
    assert sent[0].endswith("-01")  # sampled


async def test_a_three_level_tree_across_worker_processes_is_one_trace(
        redis_url: str, prefix: str, upstream: LoopbackServer, otlp: Receiver) -> None:
    h = Harness(redis_url, prefix)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_SERVICE_NAME": "chatflow-test"}
    procs = [start_worker(redis_url, prefix, env=env, block_ms="200", claim_interval_ms="200")
             for _ in range(2)]
    try:
        await _publish_tree(h, upstream.base)
        result = await h.run("top", inputs={"n": "7"}, timeout_s=60)
        assert result.ok and result.result == "8", result
        spans = await otlp.wait(lambda s: len(s) >= TREE_SPANS, timeout_s=60)
        named = check_tree(spans)
        assert {s.service for s in spans} == {"chatflow-test"}
        check_http_span(named["http"], upstream)
        check_upstream_parent(upstream, named["http"])
        root = named["top"]
        assert root.attributes["chatflow.execution_id"] == result.executionId
    finally:
        for proc in procs:
            stop(proc)
        await h.close()


async def test_a_command_traceparent_puts_every_span_in_the_producers_trace(
        redis_url: str, prefix: str, upstream: LoopbackServer, otlp: Receiver) -> None:
    h = Harness(redis_url, prefix, otel_traces_endpoint=otlp.endpoint)
    try:
        await _publish_tree(h, upstream.base)
        await h.start_worker()
        command = h.command("top", inputs={"n": "7"})
        command = type(command)(command.commandId, command.action, command.context,
                                traceparent=f"00-{PRODUCER_TRACE}-{PRODUCER_SPAN}-01",
                                tracestate="vendor=x")
        result = await h.run_command(command)
        assert result.ok and result.result == "8", result
        spans = await otlp.wait(lambda s: len(s) >= TREE_SPANS)
        named = check_tree(spans, root_parent=PRODUCER_SPAN)
        assert {s.trace_id for s in spans} == {PRODUCER_TRACE}
        check_upstream_parent(upstream, named["http"])
        assert upstream.requests[0].headers.get("tracestate") == "vendor=x"
    finally:
        await h.close()
