"""Provider selection, configuration from the environment, and each wire format's details."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest

from chatflow_agent import Agent, Runner, tool
from chatflow_agent.errors import ProviderConfigError, ProviderError
from chatflow_agent.providers import (
    AnthropicProvider,
    GeminiProvider,
    OpenAIProvider,
    provider_family,
    provider_for_model,
)
from tests.sdk.fakes import FAKE_KEY, GeminiFake, ProviderFake, Recorded, Reply


@tool
def lookup(code: str, limit: int = 5) -> dict[str, Any]:
    """Look a code up."""
    return {"code": code, "limit": limit}


def run_once(model: str, message: str = "hi", **agent_options: Any) -> Any:
    agent = Agent(name="a", instructions="Be brief.", tools=[lookup], model=model, **agent_options)
    return Runner(starting_agent=agent).run(session_id="s", user_message=message)


@pytest.mark.parametrize(
    ("model", "family"),
    [("gemini-2.5-flash", "gemini"), ("models/gemini-2.0-pro", "gemini"), ("gpt-4o", "openai"),
     ("gpt-4.1-mini", "openai"), ("o3-mini", "openai"), ("o1", "openai"),
     ("claude-sonnet-4-5", "anthropic"), ("claude-3-5-haiku-latest", "anthropic")],
)  # fmt: skip
def test_the_model_name_picks_the_provider(model: str, family: str) -> None:
    assert provider_family(model) == family


@pytest.mark.parametrize("model", ["llama-3", "mistral-large", "ogpt", ""])
def test_an_unknown_model_name_is_a_configuration_error(model: str) -> None:
    with pytest.raises(ProviderConfigError, match="no provider for model"):
        provider_family(model)


@pytest.mark.parametrize(
    ("model", "variables"),
    [("gemini-2.5-flash", "GEMINI_API_KEY or GOOGLE_API_KEY"), ("gpt-4o", "OPENAI_API_KEY"),
     ("claude-sonnet-4-5", "ANTHROPIC_API_KEY")],
)  # fmt: skip
def test_a_missing_key_names_the_variable_to_set(model: str, variables: str) -> None:
    with pytest.raises(ProviderConfigError, match=variables):
        run_once(model)


def test_google_api_key_is_accepted_for_gemini(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    provider = provider_for_model("gemini-2.5-flash")
    assert provider.headers() == {"x-goog-api-key": "google-key"}


def test_keys_stay_out_of_provider_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(variable, FAKE_KEY)
    for model in ("gemini-2.5-flash", "gpt-4o", "claude-sonnet-4-5"):
        assert FAKE_KEY not in repr(provider_for_model(model))


@pytest.mark.parametrize(
    ("provider", "base", "endpoint"),
    [(GeminiProvider, "http://h/", "http://h/v1beta/models/gemini-x:generateContent"),
     (GeminiProvider, "http://h/v1", "http://h/v1/models/gemini-x:generateContent"),
     (GeminiProvider, "http://h/v1alpha", "http://h/v1alpha/models/gemini-x:generateContent"),
     (OpenAIProvider, "http://h/v1/", "http://h/v1/chat/completions"),
     (AnthropicProvider, "http://h", "http://h/v1/messages"),
     (AnthropicProvider, "http://h/v1", "http://h/v1/messages")],
)  # fmt: skip
def test_base_urls_are_joined_with_each_api_path(provider: Any, base: str, endpoint: str) -> None:
    agent = Agent(name="a", model="gemini-x", provider=provider(api_key="k", base_url=base))
    assert agent.provider is not None
    assert agent.provider.endpoint(agent) == endpoint


def test_an_unreachable_provider_is_a_clear_error_without_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    provider = provider_for_model("gpt-4o")
    provider.retry_backoff = 0
    with pytest.raises(ProviderError, match="openai could not be reached") as caught:
        run_once("gpt-4o", provider=provider)
    assert FAKE_KEY not in str(caught.value)


def test_keys_never_reach_the_logs(
    fake_provider: ProviderFake, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    provider = provider_for_model(fake_provider.model)
    provider.retry_backoff = 0
    fake_provider.server.script(
        Reply({"error": {"message": "busy"}}, status=429),
        fake_provider.calls(("lookup", {"code": 7})),
        fake_provider.text("done"),
    )
    run_once(fake_provider.model, provider=provider)
    assert caplog.records
    assert all(FAKE_KEY not in record.getMessage() for record in caplog.records)
    assert FAKE_KEY not in caplog.text


# ------------------------------------------------------------------ Gemini


def test_gemini_gets_system_instruction_declarations_and_tool_results(
    gemini_fake: ProviderFake,
) -> None:
    gemini_fake.server.script(gemini_fake.calls(("lookup", {"code": "X"})), gemini_fake.text("ok"))
    run_once("gemini-2.5-flash", temperature=0.3, max_output_tokens=100)
    first, second = gemini_fake.server.requests
    assert first.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert first.body["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 100}
    assert first.body["tools"] == [{"functionDeclarations": [lookup.to_gemini_declaration()]}]
    _user, model, results = second.body["contents"]
    assert model["role"] == "model" and "functionCall" in model["parts"][0]
    assert results == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "lookup", "response": {"code": "X", "limit": 5}}}],
    }


def test_gemini_call_ids_are_echoed_in_function_responses(gemini_fake: ProviderFake) -> None:
    call = {"functionCall": {"id": "fc-1", "name": "lookup", "args": {"code": "Y"}}}
    gemini_fake.server.script(GeminiFake._reply([call]), gemini_fake.text("ok"))
    result = run_once("gemini-2.5-flash")
    assert result.tool_results[0].tool_call_id == "fc-1"
    response = gemini_fake.server.requests[1].body["contents"][-1]["parts"][0]["functionResponse"]
    assert response["id"] == "fc-1"


def test_gemini_scalar_results_are_wrapped_in_an_object(gemini_fake: ProviderFake) -> None:
    @tool
    def answer() -> int:
        return 42

    gemini_fake.server.script(gemini_fake.calls(("answer", {})), gemini_fake.text("42"))
    agent = Agent(name="a", tools=[answer], model="gemini-2.5-flash")
    Runner(starting_agent=agent).run(session_id="s", user_message="?")
    part = gemini_fake.server.requests[1].body["contents"][-1]["parts"][0]
    assert part["functionResponse"]["response"] == {"result": 42}


def test_gemini_thoughts_are_not_part_of_the_answer(gemini_fake: ProviderFake) -> None:
    gemini_fake.server.script(
        GeminiFake._reply([{"text": "thinking...", "thought": True}, {"text": "Answer."}])
    )
    assert run_once("gemini-2.5-flash").content == "Answer."


def test_a_gemini_reply_without_candidates_is_reported_as_blocked(
    gemini_fake: ProviderFake,
) -> None:
    gemini_fake.server.script(Reply({"promptFeedback": {"blockReason": "SAFETY"}}))
    result = run_once("gemini-2.5-flash")
    assert (result.content, result.finish_reason) == (None, "content_filter")


# ------------------------------------------------------------------ OpenAI


def test_openai_gets_messages_tools_and_tool_messages(openai_fake: ProviderFake) -> None:
    openai_fake.server.script(openai_fake.calls(("lookup", {"code": "Z"})), openai_fake.text("ok"))
    run_once("gpt-4o-mini", max_output_tokens=50)
    first, second = openai_fake.server.requests
    assert first.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert first.body["tools"] == [lookup.to_openai_tool()]
    assert first.body["max_completion_tokens"] == 50
    assistant, tool_message = second.body["messages"][-2:]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "lookup",
        "arguments": '{"code": "Z"}',
    }
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == assistant["tool_calls"][0]["id"]


def _o_series_check(request: Recorded) -> None:
    assert request.body["messages"][0]["role"] == "developer"


def test_openai_reasoning_models_get_instructions_as_developer_messages(
    openai_fake: ProviderFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answer(request: Recorded) -> Reply:
        _o_series_check(request)
        return openai_fake.text("ok")

    openai_fake.server.script(answer)
    run_once("o3-mini")


def test_openai_strict_tools_are_sent_strict_and_nulls_restore_defaults(
    openai_fake: ProviderFake,
) -> None:
    openai_fake.server.script(
        openai_fake.calls(("lookup", {"code": "Q", "limit": None})), openai_fake.text("ok")
    )
    result = run_once("gpt-4o-mini", strict_tools=True)
    function = openai_fake.server.requests[0].body["tools"][0]["function"]
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["code", "limit"]
    assert result.tool_results[0].data == {"code": "Q", "limit": 5}


def test_openai_arguments_that_are_not_json_come_back_as_an_error(
    openai_fake: ProviderFake,
) -> None:
    reply = openai_fake.calls(("lookup", {}))
    reply.body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{not json"
    openai_fake.server.script(reply, openai_fake.text("sorry"))
    result = run_once("gpt-4o-mini")
    assert result.tool_results[0].is_error
    assert "not a JSON object" in result.tool_results[0].content


# ------------------------------------------------------------------ Anthropic


def test_anthropic_gets_system_tools_and_one_user_message_of_results(
    anthropic_fake: ProviderFake,
) -> None:
    anthropic_fake.server.script(
        anthropic_fake.calls(("lookup", {"code": "A"}), ("lookup", {"code": "B"})),
        anthropic_fake.text("ok"),
    )
    run_once("claude-sonnet-4-5")
    first, second = anthropic_fake.server.requests
    assert first.body["system"] == "Be brief."
    assert first.body["max_tokens"] == 4096
    assert first.body["tools"] == [lookup.to_anthropic_tool()]
    assistant, results = second.body["messages"][-2:]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use"]
    assert results["role"] == "user"
    assert [b["type"] for b in results["content"]] == ["tool_result", "tool_result"]
