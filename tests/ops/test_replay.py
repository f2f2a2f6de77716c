"""Replay: traces rebuilt from event streams equal the live ones, and a changed transition is
reported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

import chatflow.runtime.machine
from chatflow.handlers.cli.replay_cmd import load_definitions, replay_execution
from chatflow.runtime.replay import definition_hashes, replay
from chatflow.runtime.state import LogEntry
from chatflow.schemas.wire import ToolResult
from tests.harness import Harness
from tests.ops.tools import http_then_return, publish_examples, script_failing
from tests.support.http import LoopbackServer, json_reply


@pytest.fixture
def cep() -> Iterator[LoopbackServer]:
    server = LoopbackServer()
    server.route("GET", "/ws/01001000/json/", {"logradouro": "Praça da Sé", "bairro": "Sé",
                                               "localidade": "São Paulo", "uf": "SP"})
    server.route("GET", "/ws/99999999/json/", lambda _r: json_reply({"erro": True}))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def live_timeline(events: list[dict[str, Any]], command_id: str) -> list[tuple[Any, ...]]:
    """What a person saw on the debug stream, block by block."""
    rows = []
    for e in events:
        if e["commandId"] != command_id or not e["actionType"].startswith("executeTool:"):
            continue
        p = e["payload"]
        rows.append((p["depth"], p["blockId"], p["blockType"], p.get("error"),
                     p.get("matchedConditionId"), p.get("durationMs", 0)))
    return rows


def rebuilt_timeline(entries: list[LogEntry]) -> list[tuple[Any, ...]]:
    return [(e.execId.count("."), e.blockId, e.blockType, e.error.message if e.error else None,
             e.matchedConditionId, e.durationMs or 0) for e in entries if e.type == "block"]


CASES = [
    ("pt-greeting", {"name": "  ana "}),
    ("pt-greeting", {"name": ""}),
    ("pt-cep", {"cep": "01001000"}),
    ("pt-cep", {"cep": "99999999"}),
    ("pt-delivery-quote", {"cep": "01001000", "weightKg": "3"}),
    ("pt-delivery-quote", {"cep": "99999999", "weightKg": "1"}),
    ("pt-script-fails", {}),
    ("pt-http-continues", {}),
    ("pt-missing-child", {}),
]


async def run_case(h: Harness, pt: str, inputs: dict[str, str]) -> ToolResult:
    return await h.run(pt, inputs=inputs, debug=True, contact="replay-contact")


async def publish_cases(h: Harness, cep: LoopbackServer) -> None:
    await publish_examples(h, cep.base + "/ws/{{cep}}/json/")
    await h.put_tool("pt-script-fails", script_failing())
    await h.put_tool("pt-http-continues", http_then_return(cep.base + "/missing", "continue"))
    await h.put_tool("pt-missing-child", {
        "onboardingBlockId": "c",
        "blocks": {"c": {"type": "callTool", "id": "c", "toolId": "t-x", "publishedToolId": "pt-x",
                         "inputVariables": [], "outputVariable": "o", "onError": "blocking",
                         "outputConditions": [], "defaultOutput": {"type": "endAttendance"}}}})


async def test_traces_rebuilt_from_event_streams_equal_the_live_ones(
        harness: Harness, cep: LoopbackServer) -> None:
    await publish_cases(harness, cep)
    for pt, inputs in CASES:
        result = await run_case(harness, pt, inputs)
        assert result.executionId
        report = await replay_execution(harness.client, harness.keys, result.executionId)
        assert report.ok, (pt, inputs, report.first)
        events = await harness.stream(harness.keys.debug("replay-contact"))
        assert rebuilt_timeline(report.trace) == live_timeline(events, result.commandId), pt
        root_end = [e for e in report.trace if e.execId == result.executionId
                    and e.type in ("finished", "aborted")]
        assert len(root_end) == 1
        assert root_end[0].ok is result.ok
        if result.ok:
            assert root_end[0].result == result.result
        else:
            assert root_end[0].error == result.error


async def test_a_nested_execution_replays_with_its_children(harness: Harness,
                                                          cep: LoopbackServer) -> None:
    await publish_cases(harness, cep)
    result = await run_case(harness, "pt-delivery-quote", {"cep": "01001000", "weightKg": "2"})
    assert result.ok and result.executionId
    report = await replay_execution(harness.client, harness.keys, result.executionId)
    assert report.executions == 2 and report.ok
    assert {e.execId.count(".") for e in report.trace} == {0, 1}


async def test_a_changed_navigation_in_the_machine_is_reported(
        harness: Harness, cep: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    await publish_cases(harness, cep)
    result = await run_case(harness, "pt-greeting", {"name": ""})
    assert result.ok and result.executionId
    entries = await harness.trace(result.executionId)
    definitions = await load_definitions(harness.client, harness.keys,
                                         harness.keys.partition_of_exec(result.executionId),
                                         definition_hashes(entries))
    assert replay(entries, definitions).ok

    def always_default(_conditions: Any, default: Any, *_args: Any, **_kw: Any) -> Any:
        return default, None

    monkeypatch.setattr(chatflow.runtime.machine, "pick_target", always_default)
    report = replay(entries, definitions)
    assert report.first is not None
    assert "matched=no-name" in report.first.recorded
    assert "next=greet" in report.first.expected and "next=ask" in report.first.recorded
    assert report.trace[report.first.index].blockId == "clean"


async def test_a_tampered_record_is_reported_at_its_first_differing_transition(
        harness: Harness, cep: LoopbackServer) -> None:
    await publish_cases(harness, cep)
    result = await run_case(harness, "pt-delivery-quote", {"cep": "01001000", "weightKg": "2"})
    assert result.executionId
    entries = await harness.trace(result.executionId)
    definitions = await load_definitions(harness.client, harness.keys,
                                         harness.keys.partition_of_exec(result.executionId),
                                         definition_hashes(entries))
    index = next(i for i, e in enumerate(entries) if e.type == "block" and e.blockId == "price")
    entries[index] = msgspec.structs.replace(entries[index], next="sorry")
    report = replay(entries, definitions)
    assert report.first is not None and report.first.index == index
    assert "next=quote" in report.first.expected and "next=sorry" in report.first.recorded


async def test_replay_cli_prints_the_trace_and_the_verdict(
        harness: Harness, cep: LoopbackServer, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from chatflow.handlers.cli.main import main

    await publish_cases(harness, cep)
    result = await run_case(harness, "pt-greeting", {"name": "bia"})
    monkeypatch.setenv("CHATFLOW_PREFIX", harness.settings.prefix)
    monkeypatch.setenv("REDIS_URL", harness.url)
    import asyncio
    code = await asyncio.to_thread(main, ["replay", str(result.executionId)])
    out = capsys.readouterr().out
    assert code == 0
    assert "clean [executeScript]" in out and "every transition matches the record" in out
    assert json.dumps("Olá, Bia!", ensure_ascii=False) in out.replace("'", '"')


async def test_replay_verify_checks_every_recent_tree_and_names_the_ones_that_differ(
        harness: Harness, cep: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatflow.handlers.cli.replay_cmd import verify_recent

    await publish_cases(harness, cep)
    roots = [(await run_case(harness, pt, inputs)).executionId for pt, inputs in CASES]
    # A root's execution event is appended by the same commit as its result.
    bulk = await verify_recent(harness.client, harness.keys, 1_000)
    assert bulk.trees == len(CASES) and not bulk.differing and bulk.expired == 0
    assert bulk.transitions > len(CASES)

    def always_default(_conditions: Any, default: Any, *_args: Any, **_kw: Any) -> Any:
        return default, None

    monkeypatch.setattr(chatflow.runtime.machine, "pick_target", always_default)
    bulk = await verify_recent(harness.client, harness.keys, 1_000)
    assert bulk.differing, "a machine that ignores conditions must differ from the record"
    assert {root for root, _ in bulk.differing} <= set(roots)

