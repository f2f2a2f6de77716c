"""Runner.run_streamed over each provider's server-sent events (the fakes serve the real format)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from chatflow_agent import Agent, Runner, ToolCall, tool
from chatflow_agent.core.memory import SessionStore
from chatflow_agent.core.messages import AssistantMessage, Message, ToolResult
from chatflow_agent.errors import ProviderHTTPError
from tests.sdk.fakes import ProviderFake, Reply


@tool
def check_inventory(sku: str) -> dict[str, Any]:
    """Check stock availability for a product SKU."""
    return {"sku": sku, "in_stock": True}


async def collect(runner: Runner, session: str, message: str) -> list[Any]:
    return [event async for event in runner.run_streamed(session_id=session, user_message=message)]


def _same_ids(messages: list[Message]) -> list[Message]:
    """Gemini calls without ids get generated ones; number them to compare two runs."""
    names: dict[str, str] = {}

    def rename(call_id: str) -> str:
        return names.setdefault(call_id, f"id-{len(names)}")

    out: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls = tuple(dataclasses.replace(c, id=rename(c.id)) for c in message.tool_calls)
            message = dataclasses.replace(message, tool_calls=calls)
        elif isinstance(message, ToolResult):
            message = dataclasses.replace(message, tool_call_id=rename(message.tool_call_id))
        out.append(message)
    return out


def test_run_streamed_yields_typed_events_and_a_final_result(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(
        fake_provider.calls(("check_inventory", {"sku": "SKU-1"})),
        fake_provider.text("SKU-1 is in stock, ships today."),
    )
    runner = Runner(Agent("a", "Help.", tools=[check_inventory], model=fake_provider.model))
    stream = runner.run_streamed(session_id="s", user_message="stock?")
    assert not asyncio.iscoroutine(stream)
    events = asyncio.run(_drain(stream))
    kinds = [e.type for e in events]
    assert kinds[-1] == "final" and kinds.count("final") == 1
    call = next(e for e in events if e.type == "tool_call")
    assert isinstance(call.tool_call, ToolCall) and call.tool_call.arguments == {"sku": "SKU-1"}
    result_event = next(e for e in events if e.type == "tool_result")
    assert result_event.tool_result.data == {"sku": "SKU-1", "in_stock": True}
    assert kinds.index("tool_call") < kinds.index("tool_result")
    deltas = [e.delta for e in events if e.type == "text_delta"]
    assert len(deltas) > 2 and "".join(deltas).endswith("SKU-1 is in stock, ships today.")
    final = events[-1].result
    assert final.content == "SKU-1 is in stock, ships today."
    assert final.tool_calls_executed == ["check_inventory"]
    assert final.usage.requests == 2 and final.usage.input_tokens == 20
    for request in fake_provider.server.requests:
        streaming = request.body.get("stream") or "streamGenerateContent" in request.path
        assert streaming, "every request asks the provider to stream"


async def _drain(stream: Any) -> list[Any]:
    return [event async for event in stream]


def test_the_streamed_history_is_identical_to_a_non_streamed_runs(
    fake_provider: ProviderFake,
) -> None:
    replies = [
        fake_provider.calls(("check_inventory", {"sku": "A"}), ("check_inventory", {"sku": "B"})),
        fake_provider.text("Both are in stock."),
    ]
    fake_provider.server.script(*replies, *replies)
    plain_store, streamed_store = SessionStore(), SessionStore()
    agent = Agent("a", "Help.", tools=[check_inventory], model=fake_provider.model)
    plain = Runner(agent, session_store=plain_store).run("s", "A and B?")
    events = asyncio.run(collect(Runner(agent, session_store=streamed_store), "s", "A and B?"))
    assert events[-1].result.content == plain.content
    assert events[-1].result.usage == plain.usage
    stored_plain = asyncio.run(plain_store.load("s"))
    stored_streamed = asyncio.run(streamed_store.load("s"))
    assert _same_ids(stored_streamed) == _same_ids(stored_plain)
    raw_plain = [m.raw for m in stored_plain if isinstance(m, AssistantMessage)]
    raw_streamed = [m.raw for m in stored_streamed if isinstance(m, AssistantMessage)]
    assert raw_streamed == raw_plain
    # The next turn of the streamed session is a valid request for the real API too.
    fake_provider.server.script(fake_provider.text("Anything else?"))
    Runner(agent, session_store=streamed_store).run("s", "thanks")


def test_a_streamed_blocked_reply_is_reported_and_not_stored(fake_provider: ProviderFake) -> None:
    reason = {"gemini": "SAFETY", "openai": "content_filter", "anthropic": "refusal"}
    fake_provider.server.script(fake_provider.empty(reason[fake_provider.family]))
    runner = Runner(Agent("a", model=fake_provider.model))
    events = asyncio.run(collect(runner, "s", "bad"))
    assert [e.type for e in events] == ["final"]
    assert events[-1].result.finish_reason == "content_filter"
    assert [type(m).__name__ for m in asyncio.run(runner.session_store.load("s"))] == [
        "UserMessage"
    ]


def test_a_provider_error_while_streaming_reaches_the_consumer(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(Reply({"error": {"message": "bad key"}}, status=401))
    runner = Runner(Agent("a", model=fake_provider.model))
    with pytest.raises(ProviderHTTPError, match="HTTP 401: bad key"):
        asyncio.run(collect(runner, "s", "hi"))
