"""chatflow_agent.testing: TestModel and FunctionModel on each provider's own code path.

Each test runs once per provider family (the agent's model name picks it). The
request each test model answers was built by the real provider encoder and is
checked here against the vendor SDK's request types; the answers are read by the
real decoders (and, streamed, by the real SSE reader and accumulators).
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from chatflow_agent import Agent, Runner, UsageLimitExceeded, UsageLimits, tool
from chatflow_agent.core.events import FinalEvent, TextDelta, ToolCallEvent
from chatflow_agent.core.messages import AssistantMessage, Message, ToolResult
from chatflow_agent.testing import AgentInfo, Call, FunctionModel, ModelTurn, TestModel, TestModelError
from tests.sdk.wire import check_anthropic_request, check_gemini_request, check_openai_request

MODELS = {"gemini": "gemini-2.5-flash", "openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
CHECKS = {
    "gemini": check_gemini_request,
    "openai": check_openai_request,
    "anthropic": check_anthropic_request,
}


@pytest.fixture(params=sorted(MODELS))
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


class Address(BaseModel):
    street: str
    number: int = Field(ge=1)
    unit: str | None = None


received: dict[str, Any] = {}


@tool
def ship(
    to: Address,
    sizes: list[Size],
    speed: Literal["slow", "fast"],
    tags: dict[str, int],
    note: str | None = None,
    count: int = Field(default=1, ge=1, le=5),
) -> str:
    """Ship a parcel."""
    received.update(to=to, sizes=sizes, speed=speed, tags=tags, note=note, count=count)
    return f"shipped {count} to {to.street}"


@tool
def weigh(grams: float) -> float:
    """Weigh something."""
    return grams / 1000


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def _agent(family: str, model: Any, **options: Any) -> Agent:
    tools = options.pop("tools", [ship, weigh])
    return Agent("tester", "Be brief.", tools=tools, model=MODELS[family], provider=model, **options)


def _check_wire(family: str, test_model: TestModel | FunctionModel) -> None:
    for exchange in test_model.exchanges:
        CHECKS[family](exchange.body)


# ---------------------------------------------------------------- TestModel


def test_test_model_calls_every_tool_with_arguments_valid_for_its_schema(family: str) -> None:
    received.clear()
    test_model = TestModel()
    result = Runner(_agent(family, test_model)).run("s", "ship it")

    assert sorted(result.tool_calls_executed) == ["ship", "weigh"]
    assert not any(r.is_error for r in result.tool_results)
    assert received["to"].number >= 1 and isinstance(received["sizes"][0], Size)
    assert received["speed"] in ("slow", "fast") and 1 <= received["count"] <= 5
    assert isinstance(received["tags"], dict) and received["tags"]
    calls = test_model.exchanges[1].messages[-3].tool_calls  # type: ignore[union-attr]
    for call in calls:
        # The arguments as the model sent them, checked against the JSON Schema.
        if family != "gemini":
            jsonschema.validate(
                call.arguments, {"ship": ship, "weigh": weigh}[call.name].to_openai_parameters()
            )
    assert "note" in calls[0].arguments  # optional parameters are filled in too
    _check_wire(family, test_model)


def test_test_model_answers_with_a_summary_of_the_tool_results(family: str) -> None:
    result = Runner(_agent(family, TestModel())).run("s", "ship it")
    assert result.content is not None
    assert '"ship": "shipped 1 to a"' in result.content or '"ship": "shipped' in result.content
    assert '"weigh": 0.0' in result.content


def test_test_model_counts_usage_as_each_provider_reports_it(family: str) -> None:
    test_model = TestModel()
    result = Runner(_agent(family, test_model)).run("s", "ship it")

    assert result.usage.requests == 2 == len(test_model.exchanges)
    assert result.usage.input_tokens == sum(e.input_tokens for e in test_model.exchanges)
    assert result.usage.output_tokens == sum(e.output_tokens for e in test_model.exchanges)
    assert result.usage.input_tokens > 100  # 50 per request, plus the words


def test_a_failing_tool_is_an_error_result_and_the_other_tools_still_run(family: str) -> None:
    test_model = TestModel()
    result = Runner(_agent(family, test_model, tools=[weigh, explode])).run("s", "go")

    assert [r.is_error for r in result.tool_results] == [False, True]
    results = [m for m in test_model.exchanges[1].messages if isinstance(m, ToolResult)]
    assert [(r.name, r.is_error) for r in results] == [("weigh", False), ("explode", True)]
    assert "boom: a" in results[1].content
    assert result.content is not None and '"explode": {"error"' in result.content


@pytest.mark.parametrize("where", ["agent", "run"])
def test_test_model_honours_tool_choice_none_and_a_named_tool(family: str, where: str) -> None:
    for choice, called in (("none", []), ("weigh", ["weigh"]), ("required", ["ship", "weigh"])):
        test_model = TestModel()
        options = {"tool_choice": choice} if where == "agent" else {}
        runner = Runner(_agent(family, test_model, **options))
        result = runner.run("s", "go", tool_choice=choice if where == "run" else None)

        assert result.tool_calls_executed == called, choice
        assert test_model.exchanges[0].info.tool_choice == choice  # as read back from the wire
        _check_wire(family, test_model)


def test_test_model_is_stopped_by_usage_limits_with_the_usage_so_far(family: str) -> None:
    with pytest.raises(UsageLimitExceeded, match="request_limit=1") as stopped:
        Runner(_agent(family, TestModel())).run("s", "go", usage_limits=UsageLimits(request_limit=1))
    assert stopped.value.usage.requests == 1


class Verdict(BaseModel):
    label: Literal["spam", "ham"]
    score: float = Field(ge=0, le=1)
    reasons: list[str]


@pytest.mark.parametrize("with_tools", [False, True])
def test_test_model_gives_a_final_answer_that_fits_the_output_type(family: str, with_tools: bool) -> None:
    test_model = TestModel()
    tools = [weigh] if with_tools else []
    result = Runner(_agent(family, test_model, tools=tools, output_type=Verdict)).run("s", "judge")

    assert isinstance(result.output, Verdict)
    assert result.output.label == "spam" and result.output.reasons == ["a"]
    _check_wire(family, test_model)


async def test_test_model_streams_through_each_provider_s_event_format(family: str) -> None:
    test_model = TestModel()
    events = [e async for e in Runner(_agent(family, test_model)).run_streamed("s", "go")]

    final = events[-1]
    assert isinstance(final, FinalEvent)
    streamed = "".join(e.delta for e in events if isinstance(e, TextDelta))
    assert streamed == final.result.content and len([e for e in events if isinstance(e, TextDelta)]) > 1
    assert sorted(e.tool_call.name for e in events if isinstance(e, ToolCallEvent)) == ["ship", "weigh"]
    assert final.result.usage.output_tokens == sum(e.output_tokens for e in test_model.exchanges)
    _check_wire(family, test_model)


def test_call_tools_naming_an_undeclared_tool_is_a_clear_error(family: str) -> None:
    with pytest.raises(TestModelError, match=r"call_tools=.*nope.*declares: ship, weigh"):
        Runner(_agent(family, TestModel(call_tools=["nope"]))).run("s", "go")


# ------------------------------------------------------------ FunctionModel


def _two_step(messages: list[Message], info: AgentInfo) -> str | list[Call]:
    if isinstance(messages[-1], ToolResult):
        return " / ".join(f"{m.name}={m.content}" for m in messages if isinstance(m, ToolResult))
    assert [t.name for t in info.tools] == ["ship", "weigh"]
    return [Call("weigh", {"grams": 2500}), Call("ship", {"to": {"street": "x"}})]


async def _two_step_async(messages: list[Message], info: AgentInfo) -> str | list[Call]:
    return _two_step(messages, info)


@pytest.mark.parametrize("function", [_two_step, _two_step_async], ids=["sync", "async"])
def test_a_function_model_plays_the_model_and_sees_the_results_as_sent(family: str, function: Any) -> None:
    model = FunctionModel(function)
    result = Runner(_agent(family, model)).run("s", "go")

    # ship's call misses required arguments: an error result the function sees, flagged.
    assert result.content is not None and result.content.startswith("weigh=2.5 / ship=")
    assert [r.is_error for r in result.tool_results] == [False, True]
    seen = [m for m in model.exchanges[1].messages if isinstance(m, ToolResult)]
    assert seen[1].is_error and "to.number: Field required" in seen[1].content
    assert model.exchanges[0].info.instructions == "Be brief."
    _check_wire(family, model)


def test_a_function_model_sees_the_declared_schema_in_the_provider_s_dialect(family: str) -> None:
    seen: dict[str, Any] = {}

    def capture(messages: list[Message], info: AgentInfo) -> str:
        seen.update({t.name: t.parameters for t in info.tools})
        return "ok"

    Runner(_agent(family, FunctionModel(capture))).run("s", "go")
    expected = (
        ship.to_gemini_declaration()["parameters"] if family == "gemini" else ship.to_openai_parameters()
    )
    assert seen["ship"] == expected


def test_a_function_model_streams_the_pieces_it_yields(family: str) -> None:
    def stream(messages: list[Message], info: AgentInfo) -> Iterator[str | Call]:
        if isinstance(messages[-1], ToolResult):
            yield from ("It ", "weighs ", messages[-1].content)
        else:
            yield Call("weigh", {"grams": 500})

    async def collect() -> list[Any]:
        runner = Runner(_agent(family, FunctionModel(stream_function=stream)))
        return [e async for e in runner.run_streamed("s", "go")]

    import asyncio

    events = asyncio.run(collect())
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["It ", "weighs ", "0.5"]
    assert events[-1].result.content == "It weighs 0.5"


async def test_an_async_stream_function_serves_a_whole_run_too(family: str) -> None:
    async def stream(messages: list[Message], info: AgentInfo) -> AsyncIterator[str | Call]:
        yield "no "
        yield "tools"

    result = await Runner(_agent(family, FunctionModel(stream_function=stream))).run_async("s", "go")
    assert result.content == "no tools"


@pytest.mark.parametrize("bad", [42, [], None])
def test_a_function_model_returning_something_else_is_a_clear_error(family: str, bad: Any) -> None:
    with pytest.raises(TestModelError, match=r"must return a str, a Call"):
        Runner(_agent(family, FunctionModel(lambda m, i: bad))).run("s", "go")


def test_a_function_model_answer_can_carry_text_and_calls(family: str) -> None:
    def both(messages: list[Message], info: AgentInfo) -> ModelTurn:
        if isinstance(messages[-1], ToolResult):
            return ModelTurn("done")
        return ModelTurn("Let me weigh it.", (Call("weigh", {"grams": 1000}),))

    result = Runner(_agent(family, FunctionModel(both))).run("s", "go")
    first = result.messages[1]
    assert isinstance(first, AssistantMessage) and first.content == "Let me weigh it."
    assert result.content == "done"


def test_a_test_model_needs_a_known_family() -> None:
    with pytest.raises(ValueError, match="family 'cohere'"):
        TestModel(family="cohere")
    agent = Agent("a", model="my-model", provider=TestModel())
    with pytest.raises(Exception, match=r"family='gemini', 'openai' or 'anthropic'"):
        Runner(agent).run("s", "hi")
    assert Runner(Agent("a", model="my-model", provider=TestModel(family="openai"))).run("s", "hi").content


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_an_error_raised_by_the_model_function_reaches_the_test_unchanged(
    family: str, streamed: bool
) -> None:
    def broken(messages: list[Message], info: AgentInfo) -> str:
        raise LookupError("the fixture has no answer for this")

    runner = Runner(_agent(family, FunctionModel(broken)))
    with pytest.raises(LookupError, match="the fixture has no answer"):
        if streamed:
            async for _ in runner.run_streamed("s", "go"):
                pass
        else:
            await runner.run_async("s", "go")
    # Nothing of the failed run is kept: the next run starts from a clean session.
    assert await runner.session_store.load("s") == []


def test_test_model_arguments_fit_openai_s_strict_schema_too() -> None:
    @tool
    def deliver(to: Address, size: Size, note: str | None = None) -> str:
        """Deliver a parcel."""
        return f"{size.value} to {to.street}"

    test_model = TestModel()
    strict = Agent("a", tools=[deliver], model="gpt-4o-mini", provider=test_model, strict_tools=True)
    result = Runner(strict).run("s", "go")

    assert result.tool_calls_executed == ["deliver"] and not result.tool_results[0].is_error
    declared = test_model.exchanges[0].body["tools"][0]["function"]
    assert declared["strict"] is True
    call = test_model.exchanges[1].messages[-2].tool_calls[0]  # type: ignore[union-attr]
    jsonschema.validate(call.arguments, declared["parameters"])
    assert set(call.arguments) == {"to", "size", "note"}  # strict: every property is sent
    _check_wire("openai", test_model)
