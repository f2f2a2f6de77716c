"""A block's retry policy against real loopback upstreams that count and time what they
receive, through real workers (SPEC, "Extensions to the definition": ``retry``)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from chatflow.handlers.operations.metrics import REGISTRY
from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer, Reply, Request, json_reply

from .support import endpoint_tool, put_server

FAST_RETRY = {"maxAttempts": 3, "initialIntervalMs": 50, "maxIntervalMs": 200}


class Scripted:
    """Answers in turn from ``replies`` (the last one repeats); notes when each request came."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.times: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        with self.lock:
            self.times.append(time.monotonic())
            return self.replies[min(len(self.times) - 1, len(self.replies) - 1)]


def retried(url: str, policy: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return tool("h", http("h", url, to("r"), responseStatusVariable="st",
                          retry=policy or FAST_RETRY, **extra), ret("r", "{{st}}"))


async def test_a_503_then_a_200_is_answered_ok_in_two_requests(
        harness: Harness, http_server: LoopbackServer) -> None:
    upstream = Scripted(json_reply({}, 503), json_reply({"ok": True}))
    http_server.route("GET", "/flaky", upstream)
    await harness.put_tool("pt", retried(http_server.base + "/flaky"))
    result = await harness.run("pt", debug=True)
    assert (result.ok, result.result) == (True, "200"), result
    assert len(upstream.times) == 2
    (block,) = [e for e in await harness.trace(result.executionId) if e.type == "block" and e.blockId == "h"]
    attempts = (block.detail or {})["attempts"]
    assert [a.get("status") for a in attempts] == [503, 200], attempts
    assert attempts[0]["waitMs"] == 0 and attempts[1]["waitMs"] >= 40, attempts


async def test_a_429_with_retry_after_one_second_waits_at_least_that_long(
        harness: Harness, http_server: LoopbackServer) -> None:
    throttled = (429, {"Retry-After": "1", "Content-Type": "application/json"}, b"{}")
    upstream = Scripted(throttled, json_reply({"ok": True}))
    http_server.route("GET", "/throttled", upstream)
    await harness.put_tool("pt", retried(http_server.base + "/throttled"))  # backoff: 50 ms
    result = await harness.run("pt")
    assert (result.ok, result.result) == (True, "200"), result
    assert len(upstream.times) == 2
    assert upstream.times[1] - upstream.times[0] >= 1.0, upstream.times


async def test_a_backoff_that_would_cross_the_deadline_is_not_attempted(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    upstream = Scripted(json_reply({}, 503))
    http_server.route("GET", "/down", upstream)
    h = Harness(redis_url, prefix, tool_timeout_ms=2_000)
    try:
        await h.start_worker()
        policy = {"maxAttempts": 5, "initialIntervalMs": 2_500, "maxIntervalMs": 5_000}
        await h.put_tool("pt", retried(http_server.base + "/down", policy))
        result = await h.run("pt")
    finally:
        await h.close()
    # The first attempt failed; the next would start 2-3 s later (2.5 s, jittered), past the
    # 2 s deadline: the block ends with its own error at once, saying so.
    assert not result.ok and result.error is not None
    assert result.error.code == "http_status", result.error
    assert "após 1 tentativa; a próxima não começaria antes do prazo da tool" in \
        result.error.message, result.error
    assert len(upstream.times) == 1  # (had it waited past the deadline: tool_timeout)


async def test_the_block_s_debug_event_lists_every_attempt(
        harness: Harness, http_server: LoopbackServer) -> None:
    upstream = Scripted(json_reply({}, 502), json_reply({}, 503), json_reply({"ok": True}))
    http_server.route("GET", "/flaky", upstream)
    await harness.put_tool("pt", retried(http_server.base + "/flaky"))
    result = await harness.run("pt", debug=True, contact="c-debug")
    assert result.ok, result
    events = await harness.stream(harness.keys.debug("c-debug"))
    (block,) = [e["payload"] for e in events if e["actionType"] == "executeTool:httpCall"]
    assert [a["status"] for a in block["attempts"]] == [502, 503, 200], block
    assert all(set(a) == {"status", "durationMs", "waitMs"} for a in block["attempts"])
    assert block["status"] == 200


async def test_a_server_s_default_retry_applies_to_its_endpoints(
        harness: Harness, http_server: LoopbackServer) -> None:
    upstream = Scripted(json_reply({}, 503), json_reply({"ok": True}))
    http_server.route("GET", "/call", upstream)
    await put_server(harness, "srv", http_server.base, retry=FAST_RETRY)
    await harness.put_tool("pt", endpoint_tool("srv"))
    result = await harness.run("pt")
    assert (result.ok, result.result) == (True, "200"), result
    assert len(upstream.times) == 2
    # The block's own policy wins over the server's.
    upstream.times.clear()
    await harness.put_tool("pt-once", endpoint_tool("srv", retry={"maxAttempts": 1}))
    result = await harness.run("pt-once")
    assert result.error is not None and result.error.code == "http_status"
    assert len(upstream.times) == 1


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_attempts_are_counted_ok_retried_and_failed(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/flaky", Scripted(json_reply({}, 503), json_reply({"ok": True})))
    http_server.route("GET", "/down", Scripted(json_reply({}, 503)))
    await harness.put_tool("pt-m1", retried(http_server.base + "/flaky"))
    await harness.put_tool("pt-m2", retried(http_server.base + "/down", {"maxAttempts": 2,
                                                                         "initialIntervalMs": 10}))
    before = {(t, o): _sample("chatflow_http_attempts_total", tool=t, outcome=o)
              for t in ("pt-m1", "pt-m2") for o in ("ok", "retried", "failed")}
    assert (await harness.run("pt-m1")).ok
    assert not (await harness.run("pt-m2")).ok
    wanted = {("pt-m1", "ok"): 1, ("pt-m1", "retried"): 1, ("pt-m1", "failed"): 0,
              ("pt-m2", "ok"): 0, ("pt-m2", "retried"): 1, ("pt-m2", "failed"): 1}
    # Attempts reach the counter when the worker counts the commit they led to, just after
    # that commit wrote the result this test already read: wait for it, bounded.
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        after = {key: _sample("chatflow_http_attempts_total", tool=key[0], outcome=key[1])
                 - value for key, value in before.items()}
        if after == wanted or asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.01)  # the worker's turn on this loop
    assert after == wanted
