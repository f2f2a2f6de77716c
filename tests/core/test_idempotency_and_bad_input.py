"""Repeated commandIds, malformed commands, dead letters: the worker keeps going."""

from __future__ import annotations

import asyncio
import json

from tests.core.tools import ret, tool
from tests.harness import Harness


async def _count_results(harness: Harness, command_id: str) -> int:
    return sum(1 for r in await harness.stream(harness.keys.results)
               if r["commandId"] == command_id)


async def test_a_command_published_twice_runs_once(harness: Harness) -> None:
    await harness.put_tool("pt-1", tool("r", ret("r", "x")))
    command = harness.command("pt-1", command_id="cmd-dup")
    after = await harness.mark()
    await harness.send(command)
    await harness.send(command)
    await harness.results_after(after, {"cmd-dup"})
    await harness.drained(harness.keys.commands, "chatflow-workers")
    assert await _count_results(harness, "cmd-dup") == 1


async def test_a_repeated_command_id_is_not_executed_again_later(harness: Harness) -> None:
    await harness.put_tool("pt-1", tool("r", ret("r", "first")))
    first = await harness.run("pt-1", command_id="cmd-once")
    await harness.put_tool("pt-1", tool("r", ret("r", "second")))
    after = await harness.mark()
    await harness.send(harness.command("pt-1", command_id="cmd-once"))
    await harness.drained(harness.keys.commands, "chatflow-workers")
    await harness.send(harness.command("pt-1", command_id="cmd-next"))
    found = await harness.results_after(after, {"cmd-next"})
    assert first.result == "first" and "cmd-once" not in found
    assert await _count_results(harness, "cmd-once") == 1


async def test_a_command_that_is_not_json_with_no_command_id_is_dead_lettered(
        harness: Harness) -> None:
    entry = await harness.publish_raw({"data": "{not json"})
    await harness.run_command(harness.command("pt-none"))  # the worker kept going
    # Usually there at once; when a reader's connection dropped after XREADGROUP delivered
    # the entry (seen on the cluster), it waits in the pending list for the claim window.
    deadline = asyncio.get_running_loop().time() + 30
    letters = await harness.stream(harness.keys.dead_letters)
    while not letters and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)  # polling the dead-letter stream, bounded
        letters = await harness.stream(harness.keys.dead_letters)
    assert [d["entryId"] for d in letters] == [entry.decode()]
    assert "invalid executeTool command" in letters[0]["reason"]


async def test_an_entry_without_a_data_field_is_dead_lettered(harness: Harness) -> None:
    await harness.publish_raw({"payload": "x"})
    await harness.run_command(harness.command("pt-none"))
    letters = await harness.stream(harness.keys.dead_letters)
    assert letters[0]["reason"] == "entry has no 'data' field"


async def test_a_command_missing_fields_gets_an_error_result_naming_the_field(
        harness: Harness) -> None:
    after = await harness.mark()
    await harness.publish_raw({"data": json.dumps({"commandId": "cmd-bad",
                                                   "action": {"id": "a-9", "toolId": "t"}})})
    found = await harness.results_after(after, {"cmd-bad"})
    result = found["cmd-bad"][0]
    assert result.error is not None and result.error.code == "invalid_command"
    assert "publishedToolId" in result.error.message
    assert result.actionId == "a-9" and result.next == "handoff"


async def test_a_command_with_wrong_types_gets_an_error_result(harness: Harness) -> None:
    after = await harness.mark()
    body = {"commandId": "cmd-types", "action": {"id": "a", "toolId": "t", "publishedToolId": 5}}
    await harness.publish_raw({"data": json.dumps(body)})
    result = (await harness.results_after(after, {"cmd-types"}))["cmd-types"][0]
    assert result.error is not None and "$.action.publishedToolId" in result.error.message


async def test_invalid_utf8_is_dead_lettered_and_the_worker_goes_on(harness: Harness) -> None:
    await harness.publish_raw({"data": b"\xff\xfe{"})
    await harness.put_tool("pt-1", tool("r", ret("r", "alive")))
    assert (await harness.run("pt-1")).result == "alive"
    assert len(await harness.stream(harness.keys.dead_letters)) == 1
