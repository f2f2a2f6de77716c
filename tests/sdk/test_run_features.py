"""Usage, RunContext, per-tool timeouts and hooks, against each fake provider."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from chatflow_agent import Agent, RunContext, RunHooks, Runner, ToolCall, ToolResult, Usage, tool
from chatflow_agent.core.messages import Message
from chatflow_agent.providers.anthropic import anthropic_usage
from chatflow_agent.providers.base import ModelReply
from chatflow_agent.providers.gemini import gemini_usage
from tests.sdk.fakes import ProviderFake


@tool
def lookup(code: str) -> str:
    """Look a code up."""
    return f"{code} ok"


def test_usage_sums_every_model_call_of_the_run(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(
        fake_provider.calls(("lookup", {"code": "A"})), fake_provider.text("done")
    )
    result = Runner(Agent("a", tools=[lookup], model=fake_provider.model)).run("s", "go")
    # Each fake reports 10 input and 5 output tokens per call.
    assert result.usage == Usage(input_tokens=20, output_tokens=10, total_tokens=30, requests=2)


def test_gemini_thinking_tokens_count_as_output_and_its_total_is_kept() -> None:
    metadata = {"promptTokenCount": 3, "candidatesTokenCount": 2, "thoughtsTokenCount": 4,
                "totalTokenCount": 9}  # fmt: skip
    assert gemini_usage(metadata) == Usage(3, 6, 9, 1)


def test_anthropic_cached_prompt_tokens_count_as_input_and_total_is_the_sum() -> None:
    usage = {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7,
             "output_tokens": 3}  # fmt: skip
    assert anthropic_usage(usage) == Usage(112, 3, 115, 1)


@dataclass
class Deps:
    user: str


@tool
def greet(ctx: RunContext[Deps], greeting: str) -> str:
    """Greet the signed-in user."""
    return f"{greeting} {ctx.deps.user} in {ctx.session_id} after {ctx.usage.requests} call(s)"


@tool
async def greet_async(ctx: RunContext[Deps], /, greeting: str) -> str:
    """Greet asynchronously."""
    return f"{greeting} {ctx.deps.user}"


def test_run_context_reaches_sync_and_async_tools_and_no_schema_shows_it(
    fake_provider: ProviderFake,
) -> None:
    for context_tool in (greet, greet_async):
        assert list(context_tool.to_openai_parameters()["properties"]) == ["greeting"]
        assert list(context_tool.to_openai_parameters(strict=True)["properties"]) == ["greeting"]
        assert list(context_tool.to_anthropic_tool()["input_schema"]["properties"]) == ["greeting"]
        gemini = context_tool.to_gemini_declaration()["parameters"]
        assert list(gemini["properties"]) == ["greeting"] and gemini["required"] == ["greeting"]
    fake_provider.server.script(
        fake_provider.calls(("greet", {"greeting": "Hi"}), ("greet_async", {"greeting": "Yo"})),
        fake_provider.text("done"),
    )
    agent = Agent("a", tools=[greet, greet_async], model=fake_provider.model)
    result = Runner(agent).run(session_id="c-9", user_message="hi", context=Deps("ana"))
    assert [r.content for r in result.tool_results] == ["Hi ana in c-9 after 1 call(s)", "Yo ana"]


def test_a_context_tool_outside_a_run_takes_its_context_explicitly() -> None:
    assert greet.execute(ctx=RunContext(Deps("bo")), greeting="Hey").startswith("Hey bo")
    with pytest.raises(Exception, match="takes a RunContext"):
        greet.execute(greeting="Hey")


def test_a_tool_timeout_gives_the_model_an_error_result_and_the_run_goes_on(
    fake_provider: ProviderFake,
) -> None:
    @tool(timeout=0.5)
    async def slow_search(query: str) -> str:
        """Search slowly."""
        await asyncio.sleep(5)
        return "never"

    fake_provider.server.script(
        fake_provider.calls(("slow_search", {"query": "x"})), fake_provider.text("it timed out")
    )
    started = time.monotonic()
    result = Runner(Agent("a", tools=[slow_search], model=fake_provider.model)).run("s", "go")
    assert time.monotonic() - started < 2.5
    assert result.content == "it timed out"
    (timed_out,) = result.tool_results
    assert timed_out.is_error and "did not finish within 0.5 s" in timed_out.content
    assert fake_provider.tool_results(fake_provider.server.requests[1])[0].is_error


def test_the_agent_tool_timeout_is_the_default_for_sync_tools_too(
    openai_fake: ProviderFake,
) -> None:
    release = threading.Event()

    @tool
    def stuck() -> str:
        """Wait for a release."""
        release.wait(10)
        return "late"

    openai_fake.server.script(openai_fake.calls(("stuck", {})), openai_fake.text("gave up"))
    try:
        agent = Agent("a", tools=[stuck], model=openai_fake.model, tool_timeout=0.3)
        result = Runner(agent).run("s", "go")
    finally:
        release.set()
    assert result.tool_results[0].is_error
    assert "within 0.3 s" in result.tool_results[0].content


class Recorder(RunHooks):
    def __init__(self) -> None:
        self.events: list[str] = []

    async def on_model_request(
        self, context: RunContext[Any], agent: Agent, messages: Sequence[Message]
    ) -> None:
        self.events.append(f"request:{len(messages)}")

    async def on_model_response(
        self, context: RunContext[Any], agent: Agent, reply: ModelReply
    ) -> None:
        self.events.append(f"response:{reply.finish_reason}:{reply.usage.total_tokens}")

    async def on_tool_start(self, context: RunContext[Any], agent: Agent, call: ToolCall) -> None:
        self.events.append(f"start:{call.name}:{context.deps}")

    async def on_tool_end(
        self, context: RunContext[Any], agent: Agent, call: ToolCall, result: ToolResult
    ) -> None:
        self.events.append(f"end:{call.name}:{result.content}")


def test_hooks_see_each_model_call_and_each_tool_call_in_order(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(
        fake_provider.calls(("lookup", {"code": "A"})), fake_provider.text("done")
    )
    hooks = Recorder()
    agent = Agent("a", tools=[lookup], model=fake_provider.model)
    Runner(agent, hooks=hooks).run("s", "go", context="deps-1")
    assert hooks.events == [
        "request:1", "response:tool_calls:15", "start:lookup:deps-1", "end:lookup:A ok",
        "request:3", "response:stop:15",
    ]  # fmt: skip


def test_the_opentelemetry_hook_emits_gen_ai_spans_for_model_and_tool_calls(
    fake_provider: ProviderFake,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from chatflow_agent.otel import OpenTelemetryHooks

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    fake_provider.server.script(
        fake_provider.calls(("lookup", {"code": "A"})), fake_provider.text("done")
    )
    agent = Agent("a", tools=[lookup], model=fake_provider.model)
    Runner(agent, hooks=OpenTelemetryHooks(provider)).run("s-1", "go")
    spans = exporter.get_finished_spans()
    model = fake_provider.model
    assert [s.name for s in spans] == [f"chat {model}", "execute_tool lookup", f"chat {model}"]
    chat = spans[0].attributes or {}
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.request.model"] == model
    assert chat["gen_ai.usage.input_tokens"] == 10 and chat["gen_ai.usage.output_tokens"] == 5
    assert chat["gen_ai.conversation.id"] == "s-1"
    assert tuple(chat["gen_ai.response.finish_reasons"]) == ("tool_calls",)  # type: ignore[arg-type]
    tool_span = spans[1].attributes or {}
    assert (tool_span["gen_ai.operation.name"], tool_span["gen_ai.tool.name"]) == (
        "execute_tool", "lookup",
    )  # fmt: skip
