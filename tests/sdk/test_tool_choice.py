"""tool_choice, as the OpenAI Agents SDK's ModelSettings.tool_choice, on each fake provider."""

from __future__ import annotations

from typing import Any

import pytest

from chatflow_agent import Agent, Runner, tool
from tests.sdk.fakes import ProviderFake


@tool
def lookup(code: str) -> str:
    """Look a code up."""
    return f"{code} ok"


@tool
def other(x: int) -> int:
    """Another tool."""
    return x


def _choice(family: str, body: dict[str, Any]) -> Any:
    if family == "gemini":
        return body.get("toolConfig", {}).get("functionCallingConfig")
    return body.get("tool_choice")


EXPECTED: dict[str, dict[str, Any]] = {
    "gemini": {"auto": {"mode": "AUTO"}, "required": {"mode": "ANY"}, "none": {"mode": "NONE"},
               "lookup": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}},
    "openai": {"auto": "auto", "required": "required", "none": "none",
               "lookup": {"type": "function", "function": {"name": "lookup"}}},
    "anthropic": {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"},
                  "lookup": {"type": "tool", "name": "lookup"}},
}  # fmt: skip


@pytest.mark.parametrize("choice", ["auto", "required", "none", "lookup"])
def test_tool_choice_reaches_the_first_request_in_the_provider_s_words_then_is_reset(
    fake_provider: ProviderFake, choice: str
) -> None:
    fake_provider.server.script(
        fake_provider.calls(("lookup", {"code": "A"})), fake_provider.text("done")
    )
    agent = Agent("a", tools=[lookup, other], model=fake_provider.model, tool_choice=choice)

    result = Runner(agent).run("s", "go")

    assert result.content == "done"
    first, second = (r.body for r in fake_provider.server.requests)
    assert _choice(fake_provider.family, first) == EXPECTED[fake_provider.family][choice]
    # After a tool result the provider decides again, so "required" cannot loop forever.
    assert _choice(fake_provider.family, second) is None


def test_a_tool_choice_naming_no_tool_of_the_agent_is_refused_with_the_options() -> None:
    with pytest.raises(ValueError, match=r"'lookpu'.*its tools: lookup, other"):
        Agent("a", tools=[lookup, other], model="gpt-4o", tool_choice="lookpu")


@pytest.mark.parametrize("choice", ["auto", "required", "none", "lookup"])
def test_a_per_run_tool_choice_goes_on_the_wire_in_the_provider_s_words(
    fake_provider: ProviderFake, choice: str
) -> None:
    fake_provider.server.script(
        fake_provider.calls(("lookup", {"code": "A"})), fake_provider.text("done")
    )
    agent = Agent("a", tools=[lookup, other], model=fake_provider.model)

    result = Runner(agent).run("s", "go", tool_choice=choice)

    assert result.content == "done"
    first, second = (r.body for r in fake_provider.server.requests)
    assert _choice(fake_provider.family, first) == EXPECTED[fake_provider.family][choice]
    assert _choice(fake_provider.family, second) is None
    assert agent.tool_choice is None  # the run's choice did not stick to the agent


def test_a_per_run_tool_choice_replaces_the_agent_s_for_that_run_only(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(fake_provider.text("no tools"), fake_provider.text("again"))
    agent = Agent("a", tools=[lookup, other], model=fake_provider.model, tool_choice="required")
    runner = Runner(agent)

    runner.run("s", "go", tool_choice="none")
    runner.run("t", "go")

    first, second = (r.body for r in fake_provider.server.requests)
    assert _choice(fake_provider.family, first) == EXPECTED[fake_provider.family]["none"]
    assert _choice(fake_provider.family, second) == EXPECTED[fake_provider.family]["required"]


def test_a_per_run_tool_choice_naming_no_tool_is_refused_before_any_request() -> None:
    agent = Agent("a", tools=[lookup], model="gpt-4o")
    with pytest.raises(ValueError, match=r"'lookpu'.*its tools: lookup"):
        Runner(agent).run("s", "go", tool_choice="lookpu")
