"""Leases: a healthy slow block runs once; contradicting settings are refused at start.

A killed worker's in-flight entries are still reclaimed: tests/chaos/test_worker_killed_in_flight.py.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from chatflow.handlers.dataplane.worker import Worker, ensure_groups
from chatflow.handlers.keys import COMMANDS_GROUP, STEPS_GROUP
from chatflow.runtime.errors import ConfigurationError
from chatflow.runtime.outcome import BlockOutcome
from chatflow.runtime.state import ExecState
from chatflow.schemas.wire import ExecuteToolCommand
from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer, Reply, Request, json_reply

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


class Hanging:
    """A block executor that never returns until the test lets it (a stuck worker)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, state: ExecState, block: Any, now_ms: int) -> BlockOutcome:
        self.entered.set()
        await self.release.wait()
        return BlockOutcome()


async def test_a_stuck_workers_entry_is_reclaimed_once_held_past_the_tool_deadline(
        redis_url: str, prefix: str) -> None:
    h = Harness(redis_url, prefix, claim_idle_ms=CLAIM_IDLE_MS, claim_interval_ms=50,
                tool_timeout_ms=1000)
    hanging = Hanging()
    stuck = Worker(h.settings, redis_url, extra_executors={"fetchMedia": hanging})
    h.workers.append(stuck)
    try:
        await stuck.start()
        block = {"type": "fetchMedia", "id": "m", "mode": "url", "mediaIdVariable": "",
                 "urlVariable": "http://127.0.0.1:9/x", "base64Variable": "b",
                 "mimeTypeVariable": "m", "onError": "blocking", "outputConditions": [],
                 "defaultOutput": {"type": "block", "blockId": "r"}}
        await h.put_tool("pt-stuck", tool("m", block, ret("r", "x")))
        command = h.command("pt-stuck")
        after = await h.mark()
        await h.send(command)
        await asyncio.wait_for(hanging.entered.wait(), 15)
        rescuer = await h.start_worker()
        # The reaper answers at the deadline; once the stuck worker has held the step past
        # the deadline plus one idle period, its lease lapses and the rescuer acks it.
        found = await h.results_after(after, {command.commandId})
        (result,) = found[command.commandId]
        assert result.error is not None and result.error.code == "tool_timeout"
        await h.drained(h.keys.steps(h.keys.partition_of(command.commandId)), "chatflow-workers")
        assert rescuer.recovery.reclaimed == 1
    finally:
        hanging.release.set()
        await h.close()


def _command_in(h: Harness, partition: int, pt: str) -> ExecuteToolCommand:
    for i in range(10_000):
        cid = f"cmd-{pt}-{i}"
        if h.keys.partition_of(cid) == partition:
            return h.command(pt, command_id=cid)
    raise AssertionError("no command id for the partition")


async def test_a_slow_reclaimed_step_does_not_hold_up_reclaim_of_the_other_partitions(
        redis_url: str, prefix: str, http_server: LoopbackServer) -> None:
    release = threading.Event()
    http_server.route("GET", "/slow", lambda _r: (release.wait(30), json_reply({"v": "slow"}))[1])
    http_server.route("GET", "/quick", {"v": "quick"})
    h = Harness(redis_url, prefix, claim_idle_ms=CLAIM_IDLE_MS, claim_interval_ms=50)
    intake_only = Worker(h.settings, redis_url)  # never started: its intake alone
    h.workers.append(intake_only)
    try:
        await ensure_groups(h.client, h.keys)
        await intake_only.store.load_scripts()
        for name in ("slow", "quick"):
            await h.put_tool(f"pt-{name}", tool(
                "h", http("h", f"{http_server.base}/{name}", to("r"), timeoutMs=30_000,
                          responseBodyVariable="b"), ret("r", "{{b.v}}")))
        # Reclaim visits partitions in order: the slow step's first.
        slow, quick = _command_in(h, 0, "pt-slow"), _command_in(h, 1, "pt-quick")
        after = await h.mark()
        for command in (slow, quick):
            await h.send(command)
        (_s, entries), = await h.client.xreadgroup(COMMANDS_GROUP, "t", {h.keys.commands: ">"})
        await intake_only.intake.process(entries)
        # A worker that died holding both steps: they are pending, and nobody renews them.
        for n in (0, 1):
            (_s, steps), = await h.client.xreadgroup(STEPS_GROUP, "dead", {h.keys.steps(n): ">"})
            assert len(steps) == 1
        await h.start_worker()
        found = await h.results_after(after, {quick.commandId}, timeout_s=10)
        assert found[quick.commandId][0].result == "quick"
        assert not release.is_set()  # the slow step is still in its HTTP call
        release.set()
        found = await h.results_after(after, {slow.commandId}, timeout_s=10)
        assert found[slow.commandId][0].result == "slow"
        assert sorted(r.path for r in http_server.requests) == ["/quick", "/slow"]
    finally:
        release.set()
        await h.close()


async def test_a_lease_is_renewed_only_by_the_consumer_that_owns_the_entry(
        redis_url: str, prefix: str) -> None:
    from chatflow.handlers.dataplane.leases import Leases
    from chatflow.handlers.dataplane.store import Store
    from chatflow.handlers.keys import Keys
    from chatflow.handlers.redis_client import make_client

    keys = Keys(prefix, 1)
    client = make_client(redis_url)
    store = Store(client, keys, state_ttl_s=60, dedup_ttl_s=60, marker_ttl_s=60)
    stream = keys.steps(0)
    try:
        await store.load_scripts()
        await client.xgroup_create(stream, STEPS_GROUP, id="0", mkstream=True)
        entry_id = await client.xadd(stream, {"d": "x"})
        await client.xreadgroup(STEPS_GROUP, "a", {stream: ">"})
        owner, other = Leases(store, "a", max_hold_ms=60_000), Leases(store, "b", max_hold_ms=60_000)
        owner.hold(stream, STEPS_GROUP, [entry_id])
        other.hold(stream, STEPS_GROUP, [entry_id])
        assert await owner.renew() == 1
        assert await other.renew() == 0  # b does not own it: no renewal, no takeover
        (pending,) = await client.xpending_range(stream, STEPS_GROUP, min="-", max="+", count=1)
        assert pending["consumer"] == b"a"
        assert pending["times_delivered"] == 1  # renewals count no delivery
    finally:
        await client.aclose()
