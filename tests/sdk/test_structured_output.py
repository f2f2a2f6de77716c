"""Agent(output_type=...): each provider's native structured output, validated, retried once."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest
from pydantic import BaseModel

from chatflow_agent import Agent, Runner, tool
from chatflow_agent.errors import OutputValidationError
from tests.sdk.fakes import ProviderFake, Recorded


class Verdict(BaseModel):
    label: Literal["spam", "ham"]
    score: float
    tags: list[str] = []


@tool
def sender_reputation(address: str) -> str:
    """How trustworthy a sender is."""
    return "known spammer"


def _native_request(fake: ProviderFake, request: Recorded) -> None:
    body = request.body
    if fake.family == "openai":
        spec = body["response_format"]["json_schema"]
        assert body["response_format"]["type"] == "json_schema"
        assert (spec["name"], spec["strict"]) == ("Verdict", True)
        assert spec["schema"]["required"] == ["label", "score", "tags"]
    elif fake.family == "gemini":
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseSchema"]["properties"]["label"]["enum"] == ["spam", "ham"]
    else:
        assert body["tools"][-1]["name"] == "final_result"
        assert body["tool_choice"] == {"type": "tool", "name": "final_result"}


def test_the_output_is_a_validated_instance_asked_for_natively(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(fake_provider.final({"label": "spam", "score": 0.9, "tags": []}))
    agent = Agent("classifier", "Classify the mail.", model=fake_provider.model,
                  output_type=Verdict)  # fmt: skip
    result = Runner(agent).run(session_id="s", user_message="WIN A PRIZE")
    assert result.output == Verdict(label="spam", score=0.9)
    _native_request(fake_provider, fake_provider.server.requests[0])


def test_tools_still_run_before_the_structured_answer(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(
        fake_provider.calls(("sender_reputation", {"address": "a@b.c"})),
        fake_provider.final({"label": "spam", "score": 1.0, "tags": ["reputation"]}),
    )
    agent = Agent("c", tools=[sender_reputation], model=fake_provider.model, output_type=Verdict)
    result = Runner(agent).run(session_id="s", user_message="mail from a@b.c")
    assert result.tool_calls_executed == ["sender_reputation"]
    assert result.output == Verdict(label="spam", score=1.0, tags=["reputation"])
    first = fake_provider.server.requests[0].body
    if fake_provider.family == "anthropic":
        assert first["tool_choice"] == {"type": "any"}
    if fake_provider.family == "gemini":
        assert first["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
        assert "responseSchema" not in first.get("generationConfig", {})
        declared = fake_provider.declared_tools(fake_provider.server.requests[0])
        assert declared == ["sender_reputation", "final_result"]


def test_an_invalid_answer_is_fed_back_once_then_accepted(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(
        fake_provider.final({"label": "maybe", "score": 0.5}),
        fake_provider.final({"label": "ham", "score": 0.1}),
    )
    agent = Agent("c", model=fake_provider.model, output_type=Verdict)
    result = Runner(agent).run(session_id="s", user_message="hello")
    assert result.output == Verdict(label="ham", score=0.1)
    retry = str(fake_provider.server.requests[1].body)
    assert "does not fit Verdict" in retry and "label" in retry


def test_a_second_invalid_answer_is_a_clear_error_and_the_session_stays_usable(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(
        fake_provider.final({"label": "maybe", "score": 0.5}),
        fake_provider.final({"score": "high"}),
        fake_provider.text("plain text now"),
    )
    runner = Runner(Agent("c", model=fake_provider.model, output_type=Verdict))
    with pytest.raises(OutputValidationError, match=r"'c'.*does not fit Verdict.*told once"):
        runner.run(session_id="s", user_message="hello")
    plain = Runner(Agent("c", model=fake_provider.model), session_store=runner.session_store)
    assert plain.run(session_id="s", user_message="again").content == "plain text now"
    assert asyncio.run(runner.session_store.load("s"))


def test_a_non_object_output_type_is_wrapped_in_a_result_key(openai_fake: ProviderFake) -> None:
    openai_fake.server.script(openai_fake.final({"result": ["a", "b"]}))
    agent = Agent("c", model=openai_fake.model, output_type=list[str])
    assert Runner(agent).run(session_id="s", user_message="?").output == ["a", "b"]


def test_a_streamed_run_gives_the_same_validated_output(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(fake_provider.final({"label": "ham", "score": 0.2}))
    runner = Runner(Agent("c", model=fake_provider.model, output_type=Verdict))

    async def last_event() -> object:
        events = [e async for e in runner.run_streamed(session_id="s", user_message="hello")]
        return events[-1]

    final = asyncio.run(last_event())
    assert final.type == "final"  # type: ignore[attr-defined]
    assert final.result.output == Verdict(label="ham", score=0.2)  # type: ignore[attr-defined]


def test_a_tool_named_final_result_clashes_with_an_output_type() -> None:
    from chatflow_agent import ToolSchemaError

    @tool
    def final_result(text: str) -> str:
        """Mine."""
        return text

    with pytest.raises(ToolSchemaError, match="clashes with output_type"):
        Agent("c", tools=[final_result], output_type=Verdict)
