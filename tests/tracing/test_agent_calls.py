"""An agent's tool calls carry its span: a native tool's call (the worker's ``execute_tool``
span continues the agent's trace) and a custom tool's command (the runtime's spans join it).
Real Valkey, a real worker serving tests/bridge/native_tools.py, a loopback OTLP receiver,
and the agent's own OpenTelemetry SDK tracer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from chatflow.handlers.dataplane.native import load_native_tools
from chatflow.handlers.dataplane.worker import Worker
from chatflow_agent.runtime_specs import custom_tool_spec
from chatflow_agent.runtime_tools import NativeToolProxy, RuntimeConnection, RuntimeTool
from tests.bridge.native_tools import update_sentiment
from tests.harness import Harness
from tests.support.otlp import Receiver, otlp_receiver

ANSWER = {"onboardingBlockId": "r", "enabledForAI": True, "slug": "answer",
          "inputs": [{"name": "q", "type": "string", "description": "A question.",
                      "required": True}],
          "blocks": {"r": {"type": "return", "id": "r", "value": "42 for {{q}}"}}}


@pytest.fixture
def otlp() -> Iterator[Receiver]:
    with otlp_receiver() as receiver:
        yield receiver


async def test_an_agents_tool_calls_continue_its_trace_in_the_runtime(
        redis_url: str, prefix: str, otlp: Receiver) -> None:
    h = Harness(redis_url, prefix, otel_traces_endpoint=otlp.endpoint)
    worker = Worker(h.settings, h.url, native_tools=load_native_tools(["tests.bridge.native_tools"]))
    await worker.start()
    h.workers.append(worker)
    tracer = TracerProvider().get_tracer("agent")  # the agent's own SDK, not the runtime's
    try:
        await h.put_tool("answer", ANSWER, tool_id="t-answer")
        connection = RuntimeConnection(h.url, prefix=h.keys.prefix, timeout_s=30)
        native = NativeToolProxy.from_tool(update_sentiment, connection)
        custom = RuntimeTool(custom_tool_spec({"id": "answer", "toolId": "t-answer",
                                               "name": "answer", "definition": ANSWER}),
                             connection, published_tool_id="answer", tool_id="t-answer")
        with tracer.start_as_current_span("execute_tool updateSentiment") as mine:
            assert (await native.execute_async(sentiment="positive", score=5))["saved"]
        with tracer.start_as_current_span("execute_tool answer") as asked:
            assert await custom.execute_async(q="life") == "42 for life"
        spans = await otlp.wait(lambda s: {x.name for x in s} >= {
            "execute_tool updateSentiment", "chatflow.execute t-answer"})
        ran = next(s for s in spans if s.name == "execute_tool updateSentiment")
        ctx = mine.get_span_context()
        assert (ran.trace_id, ran.parent_id) == (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")
        assert ran.attributes["gen_ai.tool.name"] == "updateSentiment"
        root = next(s for s in spans if s.name == "chatflow.execute t-answer")
        ctx = asked.get_span_context()
        assert (root.trace_id, root.parent_id) == (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")
        assert trace.get_current_span().get_span_context().is_valid is False
    finally:
        await h.close()
