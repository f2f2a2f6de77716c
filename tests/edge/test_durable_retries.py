"""A retry's wait is a step held by Valkey, not by a worker, and its request carries one
idempotency key across attempts and redeliveries: real ``chatflow worker`` processes,
SIGKILLed, against a real loopback upstream."""

from __future__ import annotations

import asyncio
import threading

from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer, Reply, Request, json_reply
from tests.support.processes import kill, start_worker
from tests.support.waiting import until

from .test_retries import Scripted

WORKER = {"claim_idle_ms": "1000", "block_ms": "200", "reaper_interval_ms": "100"}




async def test_a_worker_killed_during_a_two_second_backoff_still_makes_exactly_one_more_attempt(
        client_only: Harness, http_server: LoopbackServer, redis_url: str, prefix: str) -> None:
    h = client_only
    upstream = Scripted(json_reply({}, 503), json_reply({"ok": True}))
    http_server.route("GET", "/flaky", upstream)
    policy = {"maxAttempts": 3, "initialIntervalMs": 2_000, "maxIntervalMs": 2_000}
    await h.put_tool("pt", tool("h", http("h", http_server.base + "/flaky", to("r"),
                                          responseStatusVariable="st", retry=policy),
                                ret("r", "{{st}}")))
    first = start_worker(redis_url, prefix, **WORKER)
    second = None
    try:
        mark = await h.mark()
        command = h.command("pt")
        await h.send(command)

        async def waiting() -> bool:
            counts = [await h.client.zcard(h.keys.delayed(n)) for n in range(h.keys.partitions)]
            return sum(counts) == 1

        # The first attempt failed and its retry waits in Valkey: the worker holds nothing.
        await until(waiting, 60, "no delayed step after the first attempt")
        assert len(upstream.times) == 1
        kill(first)
        second = start_worker(redis_url, prefix, **WORKER)
        found = await h.results_after(mark, {command.commandId}, timeout_s=60)
        (result,) = found[command.commandId]
        assert (result.ok, result.result) == (True, "200"), result
        assert len(upstream.times) == 2, upstream.times
        assert upstream.times[1] - upstream.times[0] >= 1.5, upstream.times  # 2 s, jittered
        assert sum([await h.client.zcard(h.keys.delayed(n))
                    for n in range(h.keys.partitions)]) == 0
    finally:
        kill(first)
        if second is not None:
            kill(second)


class HeldFirst:
    """Holds the first request until ``release``; then answers 503 once, then 200. Keeps
    every request's Idempotency-Key."""

    def __init__(self) -> None:
        self.keys: list[str | None] = []
        self.arrived = threading.Event()
        self.released = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        with self.lock:
            self.keys.append(request.headers.get("idempotency-key"))
            n = len(self.keys)
        if n == 1:
            self.arrived.set()
            self.released.wait(60)
            return json_reply({"late": True})
        return json_reply({}, 503) if n == 2 else json_reply({"ok": True})


async def test_the_idempotency_key_is_the_same_across_attempts_and_redeliveries(
        client_only: Harness, http_server: LoopbackServer, redis_url: str, prefix: str) -> None:
    h = client_only
    upstream = HeldFirst()
    http_server.route("POST", "/pay", upstream)
    policy = {"maxAttempts": 3, "initialIntervalMs": 50, "maxIntervalMs": 100}
    await h.put_tool("pt", tool("h", http("h", http_server.base + "/pay", to("r"),
                                          method="POST", body='{"amount": 10}',
                                          responseStatusVariable="st", retry=policy),
                                ret("r", "{{st}}")))
    first = start_worker(redis_url, prefix, **WORKER)
    second = None
    try:
        mark = await h.mark()
        command = h.command("pt")
        await h.send(command)
        assert await asyncio.to_thread(upstream.arrived.wait, 60)
        kill(first)  # mid-call: the step is redelivered to the next worker
        upstream.released.set()
        second = start_worker(redis_url, prefix, **WORKER)
        found = await h.results_after(mark, {command.commandId}, timeout_s=60)
        (result,) = found[command.commandId]
        assert (result.ok, result.result) == (True, "200"), result
    finally:
        kill(first)
        if second is not None:
            kill(second)
    # The killed worker's request, the redelivered one (503) and its retry (200): one key.
    assert len(upstream.keys) == 3, upstream.keys
    assert upstream.keys[0] and len(set(upstream.keys)) == 1, upstream.keys
