"""What people read shows what happened: a callTool block takes as long as its child."""

from __future__ import annotations

import asyncio
import json

from chatflow.handlers.operations.metrics import REGISTRY
from tests.harness import Harness
from tests.ops.conftest import GatedServer
from tests.ops.tools import calling, http_then_return


def call_tool_seconds() -> float:
    return REGISTRY.get_sample_value("chatflow_block_duration_seconds_sum",
                                     {"block_type": "callTool"}) or 0.0


async def test_a_call_tool_block_reports_the_time_its_child_took(
        harness: Harness, gated: GatedServer) -> None:
    await harness.put_tool("pt-slow", http_then_return(gated.url))
    await harness.put_tool("pt-outer", calling("pt-slow"))
    before = call_tool_seconds()
    command = harness.command("pt-outer", debug=True)
    after = await harness.mark()
    await harness.send(command)
    await asyncio.wait_for(gated.arrived.wait(), timeout=30)
    asyncio.get_running_loop().call_later(0.3, gated.release.set)  # the child's call: 300 ms
    (result,) = (await harness.results_after(after, {command.commandId}))[command.commandId]
    assert result.ok and result.executionId
    (entry,) = [e for e in await harness.trace(result.executionId) if e.blockType == "callTool"]
    assert entry.durationMs is not None and entry.durationMs >= 300
    debug = [json.loads(f[b"data"]) for _id, f in
             await harness.client.xrange(harness.keys.debug(command.context.contactId))]
    (event,) = [d["payload"] for d in debug
                if d["payload"].get("blockType") == "callTool" and d["payload"]["depth"] == 0]
    assert event["durationMs"] >= 300
    assert call_tool_seconds() - before >= 0.3
