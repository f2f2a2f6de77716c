"""Poison and bad input through a real worker: Hypothesis-generated malformed commands and
definitions, published in large batches; each gets a clear error result, or a dead letter when
no commandId can be read, and the worker keeps serving. A step that keeps failing is
dead-lettered after ``max_deliveries``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError

from chatflow.handlers.dataplane.trees import trees_ended
from chatflow.handlers.dataplane.worker import Worker
from chatflow.handlers.keys import COMMANDS_GROUP
from chatflow.runtime.outcome import BlockOutcome
from chatflow.runtime.state import ExecState
from tests.core.tools import ret, script, tool
from tests.harness import Harness

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
BLOCK_TYPES = ["httpCall", "executeScript", "callTool", "return", "fetchMedia", "callAI",
               "callEndpoint", "conditional", "nope", "", "🙃"]


def corpus(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
    """``n`` examples of ``strategy`` (generation only: no shrinking, no database)."""
    out: list[Any] = []

    @settings(max_examples=n, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: Any) -> None:
        out.append(value)

    collect()
    return out


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- payloads without a readable commandId: dead letters ------------------------------------------

def _invalid_utf8(b: bytes) -> bytes:
    return b"\xff" + b + b"\xc3"


UNREADABLE: st.SearchStrategy[bytes] = st.one_of(
    st.binary(max_size=64).map(_invalid_utf8),
    st.text(max_size=64).filter(lambda t: t[:1] not in "{[").map(str.encode),
    JSON.filter(lambda v: not isinstance(v, dict) or not isinstance(v.get("commandId"), str))
        .map(lambda v: json.dumps(v).encode()),
    st.integers(100, 200_000).map(lambda d: nested(d).encode()),
    st.integers(1, 50).map(lambda d: ('{"commandId": ' * d + "1" + "}" * d).encode()),
    st.integers(10_000, 2_000_000).map(lambda n: json.dumps({"commandId": 7, "x": "a" * n}).encode()),
)


# -- commands whose commandId is readable but whose shape is wrong: invalid_command ---------------

def _wrong_command(fields: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {"action": {"id": "a", "type": "executeTool", "toolId": "t",
                                       "publishedToolId": "pt"},
                            "context": {"contactId": "c", "variables": {}}}
    for path, value in fields.items():
        target = base
        *parents, leaf = path.split(".")
        for p in parents:
            target = target.setdefault(p, {}) if isinstance(target.get(p), dict) else target
        target[leaf] = value
    if isinstance(base.get("replyTo"), str):  # a string is a valid reply stream: keep it wrong
        base["replyTo"] = 5
    return base


WRONG_FIELD = st.sampled_from(["action", "action.id", "action.publishedToolId", "action.toolId",
                               "action.inputVariables", "action.onError", "action.type", "context",
                               "context.variables", "context.debug", "replyTo"])
NOT_A_STRING = st.one_of(st.integers(), st.booleans(), st.lists(st.integers(), max_size=3),
                         st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                         st.sampled_from(["", "maybe", "executeToolX"]))
WRONG_TYPES = st.dictionaries(WRONG_FIELD, NOT_A_STRING, min_size=1, max_size=3).map(_wrong_command)


# -- definitions that are not tools: a tool_definition_invalid (or similar) result ----------------

def _definition(kind: str, value: Any) -> Any:
    """A definition, or the raw record text when it is nested too deep for Python's json."""
    if kind == "deep":
        blocks = nested(int(value))
        return f'{{"id": "x", "toolId": "t", "definition": {{"onboardingBlockId": "b", "blocks": {blocks}}}}}'
    if kind == "block":
        return {"onboardingBlockId": "b", "blocks": {"b": {"type": value, "id": "b"}}}
    if kind == "fields":
        return {"onboardingBlockId": "b", "blocks": {"b": value}}
    if kind == "huge":
        return {"onboardingBlockId": "b" * int(value), "blocks": {}}
    return value


BAD_DEFINITION = st.one_of(
    st.tuples(st.just("block"), st.sampled_from(BLOCK_TYPES)),
    st.tuples(st.just("fields"), JSON),
    st.tuples(st.just("deep"), st.integers(50, 200_000)),
    st.tuples(st.just("huge"), st.integers(100_000, 1_000_000)),
    st.tuples(st.just("any"), JSON),
).map(lambda kv: _definition(*kv))
NOT_A_RECORD = st.one_of(st.binary(max_size=40).map(_invalid_utf8), st.text(max_size=40).map(str.encode))


# -- interpolation bombs ---------------------------------------------------------------------------

BOMB = st.tuples(st.integers(1, 20_000), st.integers(1, 100_000))


def bomb_tool(tokens: int) -> dict[str, Any]:
    return tool("s", script("s", "return x.length", "n", {"type": "block", "blockId": "r"},
                            inputs={"x": "{{x}}" * tokens}), ret("r", "{{x}}" * tokens + "{{n}}"))


@pytest.mark.slow  # a thousand commands: the slow tier
async def test_a_thousand_malformed_commands_and_definitions_get_clear_answers_and_the_worker_serves_on(
        harness: Harness) -> None:
    unreadable = corpus(UNREADABLE, 300)
    wrong = corpus(WRONG_TYPES, 300)
    definitions = corpus(BAD_DEFINITION, 300)
    records = corpus(NOT_A_RECORD, 50)
    bombs = corpus(BOMB, 100)
    assert len(unreadable) + len(wrong) + len(definitions) + len(records) + len(bombs) >= 1000

    after = await harness.mark()
    dead_entries: set[str] = set()
    for payload in unreadable:
        dead_entries.add((await harness.publish_raw({"data": payload})).decode())
    expected: dict[str, Callable[[str], bool]] = {}

    def invalid(code: str) -> bool:  # a string where one fits is a command for a missing tool
        return code in {"invalid_command", "tool_not_found"}

    for i, command in enumerate(wrong):
        cid = f"wrong-{i}"
        expected[cid] = invalid
        await harness.publish_raw({"data": json.dumps({"commandId": cid, **command})})

    def definition_error(code: str) -> bool:
        return code in {"tool_definition_invalid", "tool_not_published", "tool_block_invalid",
                        "tool_block_type_unknown", "tool_not_found"}

    for i, definition in enumerate(definitions):
        pt, cid = f"pt-def-{i}", f"def-{i}"
        if isinstance(definition, str):
            await harness.client.set(harness.keys.tool(pt), definition)
        else:
            await harness.put_tool(pt, definition)
        expected[cid] = definition_error
        await harness.send(harness.command(pt, command_id=cid))
    for i, raw in enumerate(records):
        pt, cid = f"pt-rec-{i}", f"rec-{i}"
        await harness.client.set(harness.keys.tool(pt), raw)
        expected[cid] = definition_error
        await harness.send(harness.command(pt, command_id=cid))

    def too_large(code: str) -> bool:
        return code == "render_too_large"

    for i, (value_tokens, template_tokens) in enumerate(bombs):
        pt, cid = f"pt-bomb-{i}", f"bomb-{i}"
        await harness.put_tool(pt, bomb_tool(template_tokens))
        expected[cid] = too_large
        inputs = {"y": "{{x}}" * template_tokens} if i % 2 else {}
        await harness.send(harness.command(pt, command_id=cid, inputs=inputs,
                                           variables={"x": "{{x}}" * value_tokens}))

    found = await harness.results_after(after, set(expected), timeout_s=90)
    await harness.drained(harness.keys.commands, COMMANDS_GROUP)
    assert _unclear(expected, found) == []
    letters = await harness.stream(harness.keys.dead_letters)
    assert {d["entryId"] for d in letters} == dead_entries
    assert all(d["reason"] for d in letters)

    await harness.put_tool("pt-alive", tool("r", ret("r", "alive")))
    assert (await harness.run("pt-alive")).result == "alive"


def _unclear(expected: dict[str, Callable[[str], bool]], found: dict[str, list[Any]]) -> list[Any]:
    """The answers that are not one clear error of the expected kind."""
    unclear: list[tuple[str, Any]] = []
    for cid, accept in expected.items():
        (result,) = found[cid]
        if result.ok:
            continue  # a bomb small enough to fit the cap renders; still one answer
        if result.error is None or not result.error.message or not accept(result.error.code):
            unclear.append((cid, result.error))
    return unclear


class AlwaysFailing:
    """An executor whose every attempt fails the way an outage does (left pending, retried)."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, state: ExecState, block: Any, now_ms: int) -> BlockOutcome:
        self.calls += 1
        raise RedisConnectionError("simulated outage that never ends")


async def test_a_step_that_keeps_failing_is_dead_lettered_after_max_deliveries(
        redis_url: str, prefix: str) -> None:
    harness = Harness(redis_url, prefix, max_deliveries=3, claim_idle_ms=100, claim_interval_ms=20)
    failing = AlwaysFailing()
    worker = Worker(harness.settings, redis_url, extra_executors={"fetchMedia": failing})
    await worker.start()
    harness.workers.append(worker)
    try:
        block = {"type": "fetchMedia", "id": "m", "mode": "url", "mediaIdVariable": "",
                 "urlVariable": "http://127.0.0.1:9/x", "base64Variable": "b", "mimeTypeVariable": "m",
                 "onError": "blocking", "outputConditions": [],
                 "defaultOutput": {"type": "block", "blockId": "r"}}
        await harness.put_tool("pt-poison", tool("m", block, ret("r", "x")))
        result = await harness.run("pt-poison", command_id="cmd-poison")
        assert result.error is not None and result.error.code == "internal_error"
        assert "dead-lettered" in result.error.message
        letters = await harness.stream(harness.keys.dead_letters)
        assert len(letters) == 1 and letters[0]["deliveries"] == 3
        assert ":steps" in letters[0]["stream"]
        assert failing.calls == 3
        # counted where every process sees it, and the poison entry leaves its stream
        deadline = asyncio.get_running_loop().time() + 10
        while (await trees_ended(harness.client, harness.keys))["dead_lettered"] != 1:
            assert asyncio.get_running_loop().time() < deadline, "dead letter not counted"
            await asyncio.sleep(0.02)  # polling a counter on the server, bounded above
        step_stream = letters[0]["stream"]
        while await harness.client.xlen(step_stream) != 0:
            assert asyncio.get_running_loop().time() < deadline, "poison step kept"
            await asyncio.sleep(0.02)  # polling the stream, bounded above
        await harness.put_tool("pt-alive", tool("r", ret("r", "alive")))
        assert (await harness.run("pt-alive")).result == "alive"
    finally:
        await harness.close()


async def test_a_command_nested_twenty_thousand_levels_deep_gets_an_invalid_command_result(
        harness: Harness) -> None:
    deep = nested(20_000)
    raw = ('{"commandId": "cmd-deep", "action": {"id": "act-deep", "type": "executeTool", '
           '"toolId": "t", "publishedToolId": "pt"}, "context": {"contactId": "c", '
           f'"variables": {{"x": {deep}}}}}}}')
    after = await harness.mark()
    await harness.publish_raw({"data": raw})
    found = await harness.results_after(after, {"cmd-deep"}, timeout_s=15)
    (result,) = found["cmd-deep"]
    assert result.error is not None and result.error.code == "invalid_command"
    assert "nested too deep" in result.error.message
    assert result.actionId == "act-deep"
    await harness.drained(harness.keys.commands, COMMANDS_GROUP)
    assert await harness.stream(harness.keys.dead_letters) == []


async def test_a_return_too_large_after_an_inert_block_answers_render_too_large(
        harness: Harness) -> None:
    # The return is planned inside the intake's run-ahead, not on the step path.
    await harness.put_tool("pt-bomb", tool("s", script("s", "return 1", "n", {"type": "block",
                                                                               "blockId": "r"}),
                                           ret("r", "{{x}}" * 1_000)))
    result = await harness.run("pt-bomb", variables={"x": "x" * 100_000}, timeout_s=15)
    assert result.error is not None and result.error.code == "render_too_large"
