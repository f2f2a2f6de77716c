"""`chatflow executions` sees a nested execution in flight; `chatflow cancel` stops its tree."""

from __future__ import annotations

import asyncio

from chatflow.handlers.cli.cancel_cmd import cancel_execution
from chatflow.handlers.cli.executions_cmd import in_flight, render
from chatflow.handlers.client import last_id, wait_results
from chatflow.handlers.keys import STEPS_GROUP
from tests.harness import Harness
from tests.ops.conftest import GatedServer
from tests.ops.tools import calling, http_then_return


async def start_nested(h: Harness, gated: GatedServer) -> tuple[str, bytes, str]:
    await h.put_tool("pt-slow", http_then_return(gated.url))
    await h.put_tool("pt-outer", calling("pt-slow", on_error="continue"))
    after = await last_id(h.client, h.keys.results)
    command = h.command("pt-outer")
    await h.send(command)
    await asyncio.wait_for(gated.arrived.wait(), timeout=30)
    return command.commandId, after, "pt-outer"


async def test_executions_lists_a_nested_execution_at_its_current_block(
        harness: Harness, gated: GatedServer) -> None:
    command_id, _after, _pt = await start_nested(harness, gated)
    rows = await in_flight(harness.client, harness.keys)
    assert len(rows) == 1
    row = rows[0]
    assert (row.commandId, row.tool, row.block, row.depth) == (command_id, "pt-slow", "call", 1)
    assert row.activeExecutionId.startswith(row.executionId + ".")
    assert row.ageMs >= 0 and 0 < row.deadlineInMs <= 30_000
    table = render(rows)
    assert "pt-slow" in table and "DEADLINE IN" in table
    gated.release.set()


async def test_cancel_stops_the_whole_tree_and_the_caller_gets_one_cancellation(
        harness: Harness, gated: GatedServer) -> None:
    command_id, after, _pt = await start_nested(harness, gated)
    (row,) = await in_flight(harness.client, harness.keys)
    outcome = await cancel_execution(harness.client, harness.keys, row.executionId,
                                     settings=harness.settings)
    assert outcome.cancelled and outcome.leafId == row.activeExecutionId
    found = await wait_results(harness.client, harness.keys.results, {command_id}, after=after)
    (result,) = found[command_id]
    assert not result.ok and result.error is not None
    # fatal: the parent's onError "continue" does not swallow a cancellation
    assert result.error.code == "execution_cancelled"
    assert "cancelada" in result.error.message
    assert await in_flight(harness.client, harness.keys) == []
    # The child's HTTP call now completes; its transition must commit nothing.
    gated.release.set()
    await asyncio.wait_for(gated.answered.wait(), timeout=30)
    # The step that made the call is acked once its (dropped) transition is done.
    partition = harness.keys.partition_of_exec(row.activeExecutionId)
    await harness.drained(harness.keys.steps(partition), STEPS_GROUP)
    again = await cancel_execution(harness.client, harness.keys, row.executionId)
    assert not again.cancelled and again.why == "already answered"
    everything = await harness.client.xrange(harness.keys.results)
    assert sum(1 for _id, f in everything if command_id.encode() in f[b"data"]) == 1
    events = await harness.stream(harness.keys.executions)
    cancelled = {e["executionId"] for e in events if e["errorCode"] == "execution_cancelled"}
    assert cancelled == {row.executionId, row.activeExecutionId}


async def test_cancelling_an_unknown_execution_says_so(harness: Harness) -> None:
    outcome = await cancel_execution(harness.client, harness.keys, "0-nope")
    assert not outcome.cancelled and "no such execution" in outcome.why
    assert not (await cancel_execution(harness.client, harness.keys, "garbage")).cancelled
