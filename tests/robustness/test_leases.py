"""Leases: a healthy slow block runs once; contradicting settings are refused at start.

A killed worker's in-flight entries are still reclaimed: tests/chaos/test_worker_killed_in_flight.py.
"""

from __future__ import annotations

import threading

import pytest

from chatflow.handlers.worker import Worker
from chatflow.runtime.errors import ConfigurationError
from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.httpserver import LoopbackServer, Reply, Request, json_reply

CLAIM_IDLE_MS = 500


class SlowEndpoint:
    """Answers after four claim idle periods, or as soon as a second request arrives (a
    reclaim ran the block again: the test has failed, no need to wait)."""

    def __init__(self) -> None:
        self.second = threading.Event()
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        with self.lock:
            self.count += 1
            if self.count > 1:
                self.second.set()
        self.second.wait(4 * CLAIM_IDLE_MS / 1000)
        return json_reply({"slow": "done"})


async def test_a_healthy_block_slower_than_the_claim_idle_time_runs_once_and_answers_once(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    endpoint = SlowEndpoint()
    http_server.route("GET", "/slow", endpoint)
    h = Harness(redis_url, prefix, claim_idle_ms=CLAIM_IDLE_MS, claim_interval_ms=50)
    try:
        worker = await h.start_worker()
        await h.put_tool("pt-slow", tool(
            "h", http("h", http_server.base + "/slow", to("r"), timeoutMs=10_000,
                      responseBodyVariable="resp"),
            ret("r", "{{resp.slow}}")))
        after = await h.mark()
        command = h.command("pt-slow")
        await h.send(command)
        found = await h.results_after(after, {command.commandId})
        (result,) = found[command.commandId]
        assert result.ok and result.result == "done"
        assert len(http_server.requests) == 1
        assert worker.recovery.reclaimed == 0
        assert worker.leases.renewed > 0  # the lease was renewed while the call ran
        await h.drained(h.keys.steps(h.keys.partition_of(command.commandId)), "chatflow-workers")
        results = await h.stream(h.keys.results)
        assert [r["commandId"] for r in results] == [command.commandId]
    finally:
        await h.close()


async def test_a_lease_renewed_less_often_than_twice_per_claim_idle_time_is_refused_at_start(
        redis_url: str, prefix: str) -> None:
    h = Harness(redis_url, prefix, claim_idle_ms=1000, lease_renew_ms=600)
    try:
        with pytest.raises(ConfigurationError) as refused:
            Worker(h.settings, redis_url)
        assert "CHATFLOW_LEASE_RENEW_MS (600)" in str(refused.value)
        assert "CHATFLOW_CLAIM_IDLE_MS (1000)" in str(refused.value)
    finally:
        await h.close()
