"""The execution log projection: idempotent, rebuildable, and exact at the 7-day window edges."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from structlog.testing import capture_logs

from chatflow.handlers.history.runner import HISTORY_GROUP
from chatflow.handlers.keys import PROJECTION_GROUP
from chatflow.handlers.operations.embedded import EmbeddedServer
from chatflow.handlers.operations.metrics import TRIMMED_UNREAD
from chatflow.handlers.projections import ExecutionLog, rebuild, snapshot, tool_metrics, trim_source
from chatflow.handlers.projections.metrics import HOUR_MS
from tests.harness import Harness
from tests.ops.tools import returning, script_failing

DAY_MS = 24 * HOUR_MS
NOW = int(datetime(2025, 3, 10, 15, 30, tzinfo=UTC).timestamp() * 1000)


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


async def add_event(h: Harness, *, tool: str = "t-a", exec_id: str, at: int, ok: bool = True,
                    ms: int = 100) -> bytes:
    event = {"toolId": tool, "publishedToolId": f"p{tool}", "durationMs": ms, "success": ok,
             "occurredAt": iso(at), "executionId": exec_id}
    entry_id: bytes = await h.client.xadd(h.keys.executions, {"data": json.dumps(event)})
    return entry_id


async def test_an_event_delivered_twice_counts_once(bare: Harness) -> None:
    projection = ExecutionLog(bare.client, bare.keys, clock=lambda: NOW)
    await add_event(bare, exec_id="e1", at=NOW - 1000, ms=100)
    await add_event(bare, exec_id="e2", at=NOW - 2000, ok=False, ms=300)
    await add_event(bare, exec_id="e1", at=NOW - 1000, ms=100)  # a duplicate publication
    entries = await bare.client.xrange(bare.keys.executions)
    assert await projection.apply(entries) == 2
    assert await projection.apply(entries) == 0  # a redelivery of the whole batch
    metrics = await tool_metrics(bare.client, bare.keys, ["t-a"], NOW)
    assert metrics == {"t-a": {"runs7d": 2, "avgMs": 200, "successRate": 0.5}}


async def test_the_window_holds_the_168_hours_ending_with_the_current_one(bare: Harness) -> None:
    projection = ExecutionLog(bare.client, bare.keys, clock=lambda: NOW)
    hour_start = NOW - NOW % HOUR_MS
    first_hour = hour_start - 167 * HOUR_MS
    await add_event(bare, exec_id="oldest-in", at=first_hour, ms=10)
    await add_event(bare, exec_id="newest-out", at=first_hour - 1, ms=1000)
    await add_event(bare, exec_id="now", at=NOW, ms=30)
    await projection.apply(await bare.client.xrange(bare.keys.executions))
    inside = await tool_metrics(bare.client, bare.keys, ["t-a"], NOW)
    assert inside["t-a"] == {"runs7d": 2, "avgMs": 20, "successRate": 1.0}
    at_next_hour = await tool_metrics(bare.client, bare.keys, ["t-a"], hour_start + HOUR_MS)
    assert at_next_hour["t-a"]["runs7d"] == 1
    assert (await tool_metrics(bare.client, bare.keys, ["t-a"],
                               NOW + 7 * DAY_MS))["t-a"]["runs7d"] == 0


async def test_a_tool_that_never_ran_reads_as_zeros(bare: Harness) -> None:
    metrics = await tool_metrics(bare.client, bare.keys, ["t-never"],
                                 datetime.fromtimestamp(NOW / 1000, tz=UTC))
    assert metrics == {"t-never": {"runs7d": 0, "avgMs": 0, "successRate": 0.0}}


async def test_the_worker_projects_real_executions_and_a_rebuild_equals_it(
        harness: Harness) -> None:
    await harness.put_tool("pt-ok", returning("hi {{name}}"), tool_id="t-ok")
    await harness.put_tool("pt-bad", script_failing(), tool_id="t-bad")
    for name in ("ana", "bia", "caio"):
        assert (await harness.run("pt-ok", inputs={"name": name})).ok
    assert not (await harness.run("pt-bad")).ok
    projection = harness.workers[0].projection
    await projection.wait_caught_up()
    live = await tool_metrics(harness.client, harness.keys, ["t-ok", "t-bad"])
    assert live["t-ok"]["runs7d"] == 3 and live["t-ok"]["successRate"] == 1.0
    assert live["t-bad"] == {"runs7d": 1, "avgMs": live["t-bad"]["avgMs"], "successRate": 0.0}
    seen: list[tuple[int, int]] = []
    assert await rebuild(harness.client, harness.keys, ns="scratch",
                         progress=lambda done, total: seen.append((done, total))) == 4
    assert seen[-1] == (4, 4)
    assert await snapshot(harness.client, harness.keys, ns="scratch") == \
        await snapshot(harness.client, harness.keys)


async def test_a_rebuild_in_place_over_the_live_projection_changes_nothing(
        harness: Harness) -> None:
    await harness.put_tool("pt-ok", returning("x"), tool_id="t-ok")
    for _ in range(3):
        await harness.run("pt-ok")
    await harness.workers[0].projection.wait_caught_up()
    before = await snapshot(harness.client, harness.keys)
    await rebuild(harness.client, harness.keys)
    assert await snapshot(harness.client, harness.keys) == before


async def test_the_metrics_survive_the_deletion_of_their_tool_without_an_audit_copy(
        harness: Harness) -> None:
    await harness.put_tool("pt-gone", returning("bye"), tool_id="t-gone")
    result = await harness.run("pt-gone")
    await harness.workers[0].projection.wait_caught_up()
    await harness.client.delete(harness.keys.tool("pt-gone"))
    metrics = await tool_metrics(harness.client, harness.keys, ["t-gone"])
    assert metrics["t-gone"]["runs7d"] == 1
    logged = await harness.client.zrange(harness.keys.proj_log("t-gone"), 0, -1)
    assert logged == [result.executionId.encode()]
    # The audit is the source stream (and the run history), not a copy in the projection.
    assert not await harness.client.exists(harness.keys.proj_events("t-gone"))


async def test_trimming_keeps_what_the_group_has_not_processed(bare: Harness) -> None:
    client, keys = bare.client, bare.keys
    await client.xgroup_create(keys.executions, PROJECTION_GROUP, id="0", mkstream=True)
    await client.xadd(keys.executions, {"data": "{}"}, id=f"{NOW - 3 * DAY_MS}-0")
    await client.xadd(keys.executions, {"data": "{}"}, id=f"{NOW - 2 * DAY_MS}-0")
    await client.xadd(keys.executions, {"data": "{}"}, id=f"{NOW - 1000}-0")
    assert await trim_source(client, keys, retention_ms=DAY_MS, now=NOW) == 0  # none read yet
    await client.xreadgroup(PROJECTION_GROUP, "c", {keys.executions: ">"}, count=2)
    assert await trim_source(client, keys, retention_ms=DAY_MS, now=NOW) == 0  # 2 pending
    await client.xack(keys.executions, PROJECTION_GROUP, f"{NOW - 3 * DAY_MS}-0",
                      f"{NOW - 2 * DAY_MS}-0")
    assert await trim_source(client, keys, retention_ms=DAY_MS, now=NOW) == 1
    assert await client.xlen(keys.executions) == 2


async def test_trimming_waits_for_the_history_group_too(bare: Harness) -> None:
    client, keys = bare.client, bare.keys
    for group in (PROJECTION_GROUP, HISTORY_GROUP):
        await client.xgroup_create(keys.executions, group, id="0", mkstream=True)
    for days in (3, 2):
        await client.xadd(keys.executions, {"data": "{}"}, id=f"{NOW - days * DAY_MS}-0")
    await client.xreadgroup(PROJECTION_GROUP, "c", {keys.executions: ">"})
    await client.xack(keys.executions, PROJECTION_GROUP, f"{NOW - 3 * DAY_MS}-0",
                      f"{NOW - 2 * DAY_MS}-0")
    # The metrics have counted both; the history has read neither: nothing goes.
    assert await trim_source(client, keys, retention_ms=DAY_MS, now=NOW) == 0
    await client.xreadgroup(HISTORY_GROUP, "h", {keys.executions: ">"})
    assert await trim_source(client, keys, retention_ms=DAY_MS, now=NOW) == 0  # 2 pending
    await client.xack(keys.executions, HISTORY_GROUP, f"{NOW - 3 * DAY_MS}-0",
                      f"{NOW - 2 * DAY_MS}-0")
    assert await trim_source(client, keys, retention_ms=DAY_MS, now=NOW) == 1
    assert await client.xlen(keys.executions) == 1


async def test_a_group_stopped_past_the_unread_bound_loses_events_loudly_and_counted(
        bare: Harness) -> None:
    client, keys = bare.client, bare.keys
    await client.xgroup_create(keys.executions, HISTORY_GROUP, id="0", mkstream=True)
    for days in (9, 8, 2):
        await client.xadd(keys.executions, {"data": "{}"}, id=f"{NOW - days * DAY_MS}-0")
    before = TRIMMED_UNREAD._value.get()
    with capture_logs() as logs:
        assert await trim_source(client, keys, retention_ms=DAY_MS, unread_max_ms=7 * DAY_MS,
                                 now=NOW) == 2
    assert TRIMMED_UNREAD._value.get() - before == 2
    [error] = [e for e in logs if e["log_level"] == "error"]
    assert error["lost"] == 2 and error["groups"] == [HISTORY_GROUP]
    assert await client.xlen(keys.executions) == 1  # two days old, unread: kept


async def test_a_rebuild_after_trimming_recovers_only_what_the_stream_still_holds(
        bare: Harness) -> None:
    clock = lambda: NOW  # noqa: E731
    client, keys = bare.client, bare.keys
    old = await add_event(bare, exec_id="old", at=NOW - 2 * DAY_MS)
    await add_event(bare, exec_id="new", at=NOW - 1000)
    await ExecutionLog(client, keys, clock=clock).apply(await client.xrange(keys.executions))
    ms, seq = old.decode().split("-")
    await client.xtrim(keys.executions, minid=f"{ms}-{int(seq) + 1}", approximate=False)
    await rebuild(client, keys, ns="scratch", clock=clock)
    assert (await tool_metrics(client, keys, ["t-a"], NOW))["t-a"]["runs7d"] == 2
    assert (await tool_metrics(client, keys, ["t-a"], NOW, ns="scratch"))["t-a"]["runs7d"] == 1


async def test_the_projection_runs_on_its_own_beside_workers_without_it(bare: Harness) -> None:
    from chatflow.handlers.projections.runner import ProjectionRunner

    await bare.start_worker(projections_enabled=False)
    runner = ProjectionRunner(bare.settings, bare.url, "projection-only")
    await runner.start()
    try:
        await bare.put_tool("pt-alone", returning("x"), tool_id="t-alone")
        assert (await bare.run("pt-alone")).ok
        await runner.projection.wait_caught_up()
        metrics = await tool_metrics(bare.client, bare.keys, ["t-alone"])
        assert metrics["t-alone"]["runs7d"] == 1
    finally:
        await runner.stop()


@pytest.fixture
async def alone(prefix: str) -> AsyncIterator[Harness]:
    """A Valkey of this test alone: it reads the server's command counts."""
    server = EmbeddedServer().start()
    h = Harness(server.url, prefix)
    try:
        yield h
    finally:
        await h.close()
        server.stop()


async def calls(h: Harness) -> dict[str, int]:
    """Commands the server ran, by name (a NOSCRIPT answer is a failed call, not a run)."""
    stats = await h.client.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) - int(v.get("failed_calls", 0))
            - int(v.get("rejected_calls", 0)) for k, v in stats.items()}


async def test_a_batch_of_several_tools_is_counted_and_acked_in_one_script_call(
        alone: Harness) -> None:
    client, keys = alone.client, alone.keys
    await client.xgroup_create(keys.executions, PROJECTION_GROUP, id="0", mkstream=True)
    await add_event(alone, tool="t-a", exec_id="a1", at=NOW - 1000, ms=100)
    await add_event(alone, tool="t-b", exec_id="b1", at=NOW - 2000, ok=False, ms=300)
    await client.xadd(keys.executions, {"other": "not an event"})  # acked, counted nowhere
    await add_event(alone, tool="t-a", exec_id="a1", at=NOW - 1000, ms=100)  # published twice
    await add_event(alone, tool="t-a", exec_id="a2", at=NOW - HOUR_MS, ms=300)
    [(_, entries)] = await client.xreadgroup(PROJECTION_GROUP, "c", {keys.executions: ">"})
    projection = ExecutionLog(client, keys, clock=lambda: NOW)
    await client.config_resetstat()
    await projection.process(entries)
    counted = await calls(alone)
    # One node: one EVALSHA for both tools, with the ack and the tools set inside it.
    assert counted["evalsha"] == 1 and counted["xack"] == 1 and counted["sadd"] == 1
    assert (projection.applied, projection.duplicates) == (3, 1)
    assert (await client.xpending(keys.executions, PROJECTION_GROUP))["pending"] == 0
    assert await tool_metrics(client, keys, ["t-a", "t-b"], NOW) == {
        "t-a": {"runs7d": 2, "avgMs": 200, "successRate": 1.0},
        "t-b": {"runs7d": 1, "avgMs": 300, "successRate": 0.0}}
    assert sorted(await client.smembers(keys.proj_tools())) == [b"t-a", b"t-b"]


async def test_a_batch_whose_script_the_server_lost_is_counted_and_acked_once(
        alone: Harness) -> None:
    client, keys = alone.client, alone.keys
    await client.xgroup_create(keys.executions, PROJECTION_GROUP, id="0", mkstream=True)
    for i in range(3):
        await add_event(alone, exec_id=f"e{i}", at=NOW - 1000 * i, ms=10)
    [(_, entries)] = await client.xreadgroup(PROJECTION_GROUP, "c", {keys.executions: ">"})
    projection = ExecutionLog(client, keys, clock=lambda: NOW)
    await client.script_flush()  # a restarted server: no script cached
    await projection.process(entries)
    assert projection.applied == 3
    assert (await client.xpending(keys.executions, PROJECTION_GROUP))["pending"] == 0
    await projection.process(entries)  # a redelivery after all
    assert (projection.applied, projection.duplicates) == (3, 3)
    assert (await tool_metrics(client, keys, ["t-a"], NOW))["t-a"]["runs7d"] == 3


async def test_a_tools_log_is_pruned_of_ids_past_the_floor_at_most_once_a_minute(
        alone: Harness) -> None:
    client, keys = alone.client, alone.keys
    now = [NOW]
    retention = 2 * DAY_MS
    projection = ExecutionLog(client, keys, log_retention_ms=retention, clock=lambda: now[0])
    await add_event(alone, exec_id="first", at=NOW - retention + 30_000)
    await client.config_resetstat()
    await projection.apply(await client.xrange(keys.executions))
    assert (await calls(alone)).get("zrangebyscore") == 1  # the tool's first batch prunes
    now[0] = NOW + 59_000  # "first" is past the floor now, but the last prune is not a minute old
    await add_event(alone, exec_id="second", at=now[0] - 1000)
    await projection.apply((await client.xrange(keys.executions))[-1:])
    assert (await calls(alone)).get("zrangebyscore") == 1
    assert await client.zscore(keys.proj_log("t-a"), "first") is not None
    now[0] = NOW + 61_000
    await add_event(alone, exec_id="third", at=now[0] - 1000)
    await projection.apply((await client.xrange(keys.executions))[-1:])
    assert (await calls(alone)).get("zrangebyscore") == 2
    assert await client.zrange(keys.proj_log("t-a"), 0, -1) == [b"second", b"third"]
