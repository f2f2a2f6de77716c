"""An Agent calling the runtime's tools: custom ones on the command stream, native ones on workers.

Real Valkey, real workers, and each fake provider on loopback scripting the model's calls.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatflow.handlers.dataplane.native import load_native_tools
from chatflow.handlers.dataplane.worker import Worker
from chatflow.handlers.registry.crypto import SecretBox
from chatflow.handlers.registry.models import ToolCreate
from chatflow.handlers.registry.registry import Registry
from chatflow.handlers.registry.tools import ToolOps
from chatflow_agent import Agent, Runner, RunResult, ToolExecutionError, tool
from chatflow_agent.runtime_tools import (
    NativeToolProxy,
    RuntimeConnection,
    RuntimeTool,
    RuntimeTools,
    RuntimeToolsError,
)
from tests.bridge import native_tools
from tests.harness import Harness
from tests.sdk.fakes import ProviderFake, Recorded

ORDER_STATUS = {
    "blocks": {"r": {"type": "return", "id": "r",
                     "value": "order {{orderId}}: shipped (express={{express}}, weight={{weight}})"}},
    "onboardingBlockId": "r",
    "enabledForAI": True, "slug": "order_status", "returnDescription": "Returns the order's status.",
    "inputs": [
        {"name": "orderId", "type": "string", "description": "The order number.", "required": True},
        {"name": "express", "type": "boolean", "description": "Whether it ships express."},
        {"name": "weight", "type": "number", "description": "Parcel weight in kg."},
    ],
}
TRACK_PARCEL = {
    "blocks": {
        "s": {"type": "executeScript", "id": "s", "outputVariable": "v",
              "source": "throw new Error('carrier down for ' + input.code)",
              "inputVariables": [{"name": "code", "value": "{{code}}"}],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{v}}"},
    },
    "onboardingBlockId": "s",
    "enabledForAI": True, "slug": "track_parcel", "description": "Track a parcel with the carrier.",
    "inputs": [{"name": "code", "type": "string", "description": "The tracking code.", "required": True}],
}


@tool
def local_discount(percent: int) -> str:
    """Give the contact a discount.

    Args:
        percent: How much off, in percent.
    """
    return f"{percent}% off"


class Runtime:
    def __init__(self, harness: Harness, ops: ToolOps) -> None:
        self.harness = harness
        self.ops = ops

    async def publish(self, tool_id: str, definition: dict[str, Any], description: str) -> str:
        await self.ops.create(ToolCreate(id=tool_id, name=tool_id, description=description,
                                         definition=definition))
        view = await self.ops.publish(tool_id)
        return str(view["publishedToolId"])

    def connection(self, timeout_s: float = 30.0) -> RuntimeConnection:
        return RuntimeConnection(self.harness.url, prefix=self.harness.keys.prefix, timeout_s=timeout_s)


@pytest.fixture
async def runtime(harness: Harness) -> AsyncIterator[Runtime]:
    """The harness's plain worker, plus one that serves the native tools, and a registry."""
    worker = Worker(harness.settings, harness.url,
                    native_tools=load_native_tools(["tests.bridge.native_tools"]))
    await worker.start()
    harness.workers.append(worker)
    registry = Registry(harness.client, harness.keys, SecretBox(None))
    await registry.start()
    yield Runtime(harness, ToolOps(registry))


# ------------------------------------------------------------------ what the model sees


def declared(fake: ProviderFake, request: Recorded) -> dict[str, dict[str, Any]]:
    """Per function: its description, parameter descriptions and required list, in any dialect."""
    body = request.body
    if fake.family == "gemini":
        functions = [(d, d.get("parameters") or {}) for d in body["tools"][0]["functionDeclarations"]]
    elif fake.family == "openai":
        functions = [(t["function"], t["function"]["parameters"]) for t in body["tools"]]
    else:
        functions = [(t, t["input_schema"]) for t in body["tools"]]
    return {
        f["name"]: {
            "description": f.get("description"),
            "params": {k: v.get("description") for k, v in (p.get("properties") or {}).items()},
            "required": p.get("required", []),
        }
        for f, p in functions
    }


def result_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content)


# ------------------------------------------------------------------ tests


async def test_an_agent_runs_custom_native_and_local_tools_and_goes_on_after_a_failure(
    runtime: Runtime, fake_provider: ProviderFake
) -> None:
    order_pt = await runtime.publish("t-order", ORDER_STATUS, "Finds orders.")
    track_pt = await runtime.publish("t-track", TRACK_PARCEL, "General tracking text.")
    tools = await RuntimeTools.load(runtime.connection(), published_tool_ids=[order_pt, track_pt],
                                    native_names=["updateSentiment"])
    fake = fake_provider
    fake.server.script(
        fake.calls(("order_status", {"orderId": "A-17", "express": True, "weight": 2.5}),
                   ("updateSentiment", {"sentiment": "positive", "score": 80}),
                   ("local_discount", {"percent": 10})),
        fake.calls(("track_parcel", {"code": "BR123"})),
        fake.text("Your order A-17 has shipped; tracking is down right now."),
    )
    agent = Agent("Support", "Help with orders.", tools=[*tools, local_discount], model=fake.model)

    result = await Runner(starting_agent=agent).run_async(session_id="s-1", user_message="Where is A-17?")

    assert result.content == "Your order A-17 has shipped; tracking is down right now."
    assert result.tool_calls_executed == ["order_status", "updateSentiment", "local_discount",
                                          "track_parcel"]
    first, second, third = fake.server.requests
    specs = declared(fake, first)
    assert specs["order_status"] == {
        "description": "Finds orders. Returns the order's status.",
        "params": {"orderId": "The order number.", "express": "Whether it ships express.",
                   "weight": "Parcel weight in kg."},
        "required": ["orderId"],
    }
    assert specs["track_parcel"]["description"] == "Track a parcel with the carrier."
    assert specs["track_parcel"]["params"] == {"code": "The tracking code."}
    assert specs["updateSentiment"]["description"] == "Record how the contact feels about the conversation."
    assert specs["updateSentiment"]["params"]["sentiment"] == "The contact's mood, as the model reads it."
    assert specs["local_discount"]["params"] == {"percent": "How much off, in percent."}

    seen = {r.name: r for r in fake.tool_results(second)}
    assert "order A-17: shipped (express=true, weight=2.5)" in result_text(seen["order_status"].content)
    sentiment_text = result_text(seen["updateSentiment"].content).replace(" ", "")
    assert '"saved":true' in sentiment_text and '"sentiment":"positive"' in sentiment_text
    assert "10% off" in result_text(seen["local_discount"].content)
    assert not any(r.is_error for r in seen.values())
    [failed] = fake.tool_results(third)
    assert failed.name == "track_parcel" and failed.is_error
    assert "carrier down for BR123" in result_text(failed.content)
    assert ("positive", 80) in native_tools.RECORDED


async def test_a_failing_custom_tool_raises_the_runtime_s_error_message(runtime: Runtime) -> None:
    pt = await runtime.publish("t-track", TRACK_PARCEL, "Tracking.")
    [track] = await RuntimeTools.load(runtime.connection(), published_tool_ids=[pt])
    with pytest.raises(ToolExecutionError, match="carrier down for X9"):
        await track.execute_async(code="X9")


async def test_a_model_s_argument_is_data_never_a_template_over_the_contact_s_variables(
    runtime: Runtime,
) -> None:
    pt = await runtime.publish("t-order", ORDER_STATUS, "Finds orders.")
    connection = RuntimeConnection(runtime.harness.url, prefix=runtime.harness.keys.prefix,
                                   variables={"secret": "s3cr3t"})
    [order] = await RuntimeTools.load(connection, published_tool_ids=[pt])
    answer = await order.execute_async(orderId="{{secret}}", express=False)
    assert answer == "order {{secret}}: shipped (express=false, weight=)"


async def test_a_raising_native_tool_answers_with_an_error_and_the_worker_keeps_serving(
    runtime: Runtime,
) -> None:
    tools = await RuntimeTools.load(runtime.connection(), native_names=["openTicket", "updateSentiment"])
    ticket, sentiment = tools
    assert isinstance(ticket, NativeToolProxy)
    with pytest.raises(Exception, match="ticket system rejected 'refund'") as info:
        await ticket.execute_async(subject="refund")
    assert type(info.value).__name__ == "ToolExecutionError"
    assert await sentiment.execute_async(sentiment="neutral") == {
        "saved": True, "sentiment": "neutral", "score": 0}


async def test_native_arguments_are_checked_on_the_worker_against_the_signature(runtime: Runtime) -> None:
    [sentiment] = await RuntimeTools.load(runtime.connection(), native_names=["updateSentiment"])
    with pytest.raises(Exception, match="sentiment"):
        await sentiment.execute_async(sentiment="furious")


async def test_an_agent_cache_gives_its_custom_and_native_tools(runtime: Runtime) -> None:
    pt = await runtime.publish("t-order", ORDER_STATUS, "Finds orders.")
    await runtime.ops.create(ToolCreate(id="t-hidden", name="hidden", definition={
        "blocks": {"r": {"type": "return", "id": "r", "value": "x"}}, "onboardingBlockId": "r"}))
    await runtime.ops.publish("t-hidden")
    await runtime.ops.create(ToolCreate(id="t-sent", name="Sentiment", kind="native",
                                        nativeName="updateSentiment"))
    for tool_id in ("t-order", "t-hidden", "t-sent"):
        await runtime.ops.link("agent-1", tool_id)

    tools = await RuntimeTools.load(runtime.connection(), agent_id="agent-1")

    assert [t.name for t in tools] == ["order_status", "updateSentiment"]
    order = tools[0]
    assert isinstance(order, RuntimeTool) and order.published_tool_id == pt
    assert order.description == "Finds orders. Returns the order's status."
    assert await order.execute_async(orderId="B-2") == "order B-2: shipped (express=, weight=)"


async def test_loading_what_the_runtime_does_not_have_fails_by_name(runtime: Runtime) -> None:
    with pytest.raises(RuntimeToolsError, match="pt-nope"):
        await RuntimeTools.load(runtime.connection(), published_tool_ids=["pt-nope"])
    with pytest.raises(RuntimeToolsError, match="no worker serves native tool 'ghost'"):
        await RuntimeTools.load(runtime.connection(), native_names=["ghost"])
    with pytest.raises(RuntimeToolsError, match="agent-x"):
        await RuntimeTools.load(runtime.connection(), agent_id="agent-x")


async def test_tools_loaded_in_one_event_loop_work_in_the_runner_s_own(
    runtime: Runtime, fake_provider: ProviderFake
) -> None:
    order_pt = await runtime.publish("t-order", ORDER_STATUS, "Finds orders.")
    fake = fake_provider
    fake.server.script(fake.calls(("order_status", {"orderId": "C-3"})), fake.text("done"))

    def blocking_caller() -> RunResult:
        # Runs on a thread with no event loop: load_sync and Runner.run each start their own,
        # while this test's loop keeps the workers going.
        tools = RuntimeTools.load_sync(runtime.connection(), published_tool_ids=[order_pt])
        agent = Agent("Support", tools=list(tools), model=fake.model)
        return Runner(starting_agent=agent).run(session_id="s-2", user_message="C-3?")

    result = await asyncio.to_thread(blocking_caller)

    assert result.content == "done"
    [outcome] = result.tool_results
    assert not outcome.is_error and outcome.content.startswith("order C-3: shipped")
