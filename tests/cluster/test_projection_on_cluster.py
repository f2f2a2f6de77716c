"""The execution-log projection on a 3-master cluster: a tool's keys share a slot, the tools
set and the source stream do not, so a batch is one script call per tool, then the XACK."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from chatflow.handlers.keys import PROJECTION_GROUP
from chatflow.handlers.projections import ExecutionLog, rebuild, snapshot, tool_metrics
from tests.harness import Harness
from tests.ops.test_projections import HOUR_MS, NOW, add_event
from tests.support.valkey import LocalCluster

pytestmark = pytest.mark.slow


@pytest.fixture
async def bare(cluster: LocalCluster, prefix: str) -> AsyncIterator[Harness]:
    h = Harness(cluster.url, prefix, redis_cluster=True)
    try:
        yield h
    finally:
        await h.close()


async def test_a_batch_of_several_tools_is_counted_once_and_acked_on_a_cluster(
        bare: Harness) -> None:
    client, keys = bare.client, bare.keys
    await client.xgroup_create(keys.executions, PROJECTION_GROUP, id="0", mkstream=True)
    await add_event(bare, tool="t-a", exec_id="a1", at=NOW - 1000, ms=100)
    await add_event(bare, tool="t-b", exec_id="b1", at=NOW - 2000, ok=False, ms=300)
    await client.xadd(keys.executions, {"other": "not an event"})
    await add_event(bare, tool="t-a", exec_id="a1", at=NOW - 1000, ms=100)  # published twice
    await add_event(bare, tool="t-a", exec_id="a2", at=NOW - HOUR_MS, ms=300)
    [(_, entries)] = await client.xreadgroup(PROJECTION_GROUP, "c", {keys.executions: ">"})
    projection = ExecutionLog(client, keys, clock=lambda: NOW)
    assert not projection.direct
    await projection.process(entries)
    await projection.process(entries)  # a redelivery: counted nowhere
    assert (projection.applied, projection.duplicates) == (3, 5)
    assert (await client.xpending(keys.executions, PROJECTION_GROUP))["pending"] == 0
    assert await tool_metrics(client, keys, ["t-a", "t-b"], NOW) == {
        "t-a": {"runs7d": 2, "avgMs": 200, "successRate": 1.0},
        "t-b": {"runs7d": 1, "avgMs": 300, "successRate": 0.0}}
    await rebuild(client, keys, ns="scratch", clock=lambda: NOW)
    assert await snapshot(client, keys, ns="scratch", now=NOW) == \
        await snapshot(client, keys, now=NOW)
