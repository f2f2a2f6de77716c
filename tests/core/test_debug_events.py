"""Debug events on stream:debug:{contactId}: order, payloads, nesting."""

from __future__ import annotations

import json

from tests.core.tools import call, http, ret, script, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer


async def _debug(harness: Harness, contact: str) -> list[dict]:
    return await harness.stream(harness.keys.debug(contact))


async def test_debug_events_come_in_order_with_nested_depth(harness: Harness) -> None:
    await harness.put_tool("pt-child", tool("s", script("s", "return 'c'", "v", to("r")),
                                            ret("r", "{{v}}")), tool_id="t-child")
    await harness.put_tool("pt-parent", tool("c", call("c", "pt-child", "o", to("r")),
                                             ret("r", "{{o}}!")), tool_id="t-parent")
    result = await harness.run("pt-parent", debug=True, contact="c-1", inputs={"a": "1"})
    assert result.result == "c!"
    events = await _debug(harness, "c-1")
    kinds = [(e["type"], e["actionType"]) for e in events]
    assert kinds == [
        ("action_start", "executeTool"),
        ("action_result", "executeTool:executeScript"),
        ("action_result", "executeTool:return"),
        ("action_result", "executeTool:callTool"),
        ("action_result", "executeTool:return"),
        ("action_result", "executeTool"),
    ]
    start, child_script, _child_ret, call_block, _ret, final = events
    assert start["payload"] == {"toolId": "t-pt-parent", "publishedToolId": "pt-parent",
                                "inputs": {"a": "1"}}
    assert child_script["payload"]["depth"] == 1 and child_script["payload"]["toolId"] == "t-child"
    assert call_block["payload"]["depth"] == 0 and call_block["payload"]["toolId"] == "t-parent"
    assert final["payload"] == {"inputs": {"a": "1"}, "result": "c!"}


async def test_final_debug_event_carries_the_error(harness: Harness) -> None:
    result = await harness.run("pt-none", debug=True, contact="c-2")
    events = await _debug(harness, "c-2")
    assert events[-1]["payload"]["error"]["code"] == "tool_not_found"
    assert result.error is not None


async def test_debug_events_for_conditions_name_the_matched_condition(harness: Harness) -> None:
    cond = {"id": "yes", "rules": [{"variable": "v", "operator": "equals", "value": "1"}],
            "target": to("r")}
    await harness.put_tool("pt-c", tool("s", script("s", "return 1", "v", to("r"),
                                                    conditions=[cond]), ret("r", "ok")))
    await harness.run("pt-c", debug=True, contact="c-3")
    events = await _debug(harness, "c-3")
    assert events[1]["payload"]["matchedConditionId"] == "yes"


async def test_no_debug_events_without_debug(harness: Harness) -> None:
    await harness.put_tool("pt-q", tool("r", ret("r", "x")))
    await harness.run("pt-q", contact="c-4")
    assert await _debug(harness, "c-4") == []


async def test_a_per_contact_flag_turns_debug_on_for_every_command(harness: Harness) -> None:
    await harness.put_tool("pt-q", tool("r", ret("r", "x")))
    await harness.client.set(harness.keys.debug_flag("c-5"), "1")
    await harness.run("pt-q", contact="c-5")
    assert len(await _debug(harness, "c-5")) == 3


async def test_every_tool_run_emits_an_execution_event(harness: Harness) -> None:
    await harness.put_tool("pt-child", tool("r", ret("r", "x")), tool_id="t-child")
    await harness.put_tool("pt-parent", tool("c", call("c", "pt-child", "o", to("r")),
                                             ret("r", "{{o}}")), tool_id="t-parent")
    result = await harness.run("pt-parent")
    events = await harness.stream(harness.keys.executions)
    mine = [e for e in events if e["rootExecutionId"] == result.executionId]
    assert sorted((e["publishedToolId"], e["success"], e["depth"]) for e in mine) == [
        ("pt-child", True, 1), ("pt-parent", True, 0)]
    assert all(set(e) >= {"toolId", "publishedToolId", "durationMs", "success", "occurredAt"}
               for e in mine)


async def test_a_one_megabyte_http_body_gives_bounded_debug_events_that_say_it_was_cut(
        harness: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/big", {"blob": "x" * 1_000_000})
    await harness.put_tool("pt-big", tool("h", http("h", http_server.base + "/big", to("r"),
                                                    responseBodyVariable="body"),
                                          ret("r", "{{body.blob}}")))
    result = await harness.run("pt-big", debug=True, contact="c-big")
    assert result.result == "x" * 1_000_000  # the answer itself is whole
    events = await _debug(harness, "c-big")
    assert all(len(json.dumps(e)) < 40_000 for e in events)
    returned, final = events[-2:]
    for event in (returned, final):
        cut = event["payload"]["result"]
        assert cut["truncated"] is True and cut["bytes"] == 1_000_002  # the JSON string's size
        assert cut["head"].startswith('"xxx')
