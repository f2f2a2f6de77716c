"""A block's retry policy against real loopback upstreams that count and time what they
receive, through real workers (SPEC, "Extensions to the definition": ``retry``)."""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer, Reply, Request, json_reply

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
    assert len(upstream.times) == 1
    assert result.durationMs < 1_500, result  # it did not wait for the deadline either
