"""Runs that used to hang, break a session or lose a turn, against each fake provider."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from chatflow_agent import Agent, Runner, tool
from chatflow_agent.core.memory import SessionStore
from chatflow_agent.tools import configure_tool_threads
from tests.sdk.fakes import FAKE_KEY, ProviderFake, Recorded, Reply
from tests.sdk.provider_fixtures import serve_fake

EMPTY_REPLIES = [
    ("gemini", "SAFETY", "content_filter"), ("gemini", "MAX_TOKENS", "length"),
    ("openai", "content_filter", "content_filter"), ("openai", "length", "length"),
    ("anthropic", "refusal", "content_filter"), ("anthropic", "max_tokens", "length"),
    ("anthropic", "end_turn", "stop"),
]  # fmt: skip


@pytest.fixture
def two_tool_threads() -> Iterator[None]:
    configure_tool_threads(2)
    yield
    configure_tool_threads(8)


@tool
def lookup(code: str) -> dict[str, str]:
    """Look a code up."""
    return {"code": code, "status": "ok"}


def test_a_sync_tool_running_an_agent_called_more_often_than_the_pool_has_threads_finishes(
    fake_provider: ProviderFake, two_tool_threads: None
) -> None:
    inner = Agent("inner", "Answer from lookups.", tools=[lookup], model=fake_provider.model)

    @tool
    def ask_expert(question: str) -> str:
        """Ask the expert agent."""
        answer = Runner(inner).run(session_id=f"inner-{question}", user_message=question)
        return answer.content or ""

    def answer(request: Recorded) -> Reply:
        tools = fake_provider.declared_tools(request)
        if fake_provider.answers_tools(request):
            return fake_provider.text("done")
        if tools == ["lookup"]:
            return fake_provider.calls(("lookup", {"code": "X"}))
        return fake_provider.calls(*[("ask_expert", {"question": f"q{i}"}) for i in range(6)])

    fake_provider.server.fallback = answer
    outer = Agent("outer", "Delegate.", tools=[ask_expert], model=fake_provider.model)
    finished = threading.Event()
    outcome: dict[str, Any] = {}

    def run() -> None:
        outcome["result"] = Runner(outer).run(session_id="s", user_message="go")
        finished.set()

    threading.Thread(target=run, daemon=True).start()
    assert finished.wait(30), "the nested sync tools starved the tool thread pool"
    result = outcome["result"]
    assert result.content == "done"
    assert result.tool_calls_executed == ["ask_expert"] * 6
    assert all(r.content == "done" and not r.is_error for r in result.tool_results)


@pytest.mark.parametrize(("family", "wire_reason", "finish"), EMPTY_REPLIES)
def test_an_empty_reply_is_reported_and_never_stored_so_the_session_goes_on(
    family: str, wire_reason: str, finish: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for fake_provider in serve_fake(family, monkeypatch):
        _empty_reply_then_more(fake_provider, wire_reason, finish)


def _empty_reply_then_more(fake_provider: ProviderFake, wire_reason: str, finish: str) -> None:
    fake_provider.server.script(
        fake_provider.empty(wire_reason),
        fake_provider.calls(("lookup", {"code": "A"})),
        fake_provider.text("A is ok."),
    )
    runner = Runner(Agent("a", "Help.", tools=[lookup], model=fake_provider.model))
    blocked = runner.run(session_id="s", user_message="first")
    assert (blocked.content, blocked.finish_reason) == (None, finish)
    stored = asyncio.run(runner.session_store.load("s"))
    assert [type(m).__name__ for m in stored] == ["UserMessage"]
    # The fake refuses parts: [] / content: [] / a bare assistant message like the real APIs.
    later = runner.run(session_id="s", user_message="second")
    assert later.content == "A is ok." and later.finish_reason == "stop"


def test_a_reply_cut_at_the_token_limit_keeps_its_text_and_says_so(
    anthropic_fake: ProviderFake,
) -> None:
    reply = anthropic_fake.text("The answer is")
    reply.body["stop_reason"] = "max_tokens"
    anthropic_fake.server.script(reply)
    result = Runner(Agent("a", model=anthropic_fake.model)).run(session_id="s", user_message="?")
    assert (result.content, result.finish_reason) == ("The answer is", "length")


def test_the_fakes_refuse_an_empty_turn_like_the_real_apis(fake_provider: ProviderFake) -> None:
    from chatflow_agent.core.messages import AssistantMessage, UserMessage

    store = SessionStore()
    raw: Any = [] if fake_provider.family != "openai" else None
    empty = AssistantMessage(None, provider=fake_provider.family, raw=raw)
    asyncio.run(store.append("s", [UserMessage("hi"), empty]))
    fake_provider.server.script(fake_provider.text("never sent"))
    runner = Runner(Agent("a", model=fake_provider.model), session_store=store)
    with pytest.raises(Exception, match="HTTP 400"):
        runner.run(session_id="s", user_message="again")
    assert fake_provider.server.failures
    fake_provider.server.failures.clear()


@pytest.mark.parametrize(
    ("value", "expected"),
    [(b"\x89PNG\r\n\x1a\n\x00\xff", {"mime_type": "image/png", "base64": "iVBORw0KGgoA/w=="}),
     ({"blob": b"\xff\xfe"}, {"blob": {"mime_type": "application/octet-stream",
                                       "base64": "//4="}}),
     (float("nan"), None), ({"ratio": float("inf"), "n": [float("-inf"), 1.5]},
                            {"ratio": None, "n": [None, 1.5]})],
    ids=["png bytes", "bytes in a dict", "nan", "infinities"],
)  # fmt: skip
def test_bytes_and_non_finite_results_reach_the_model_and_the_run_goes_on(
    fake_provider: ProviderFake, value: Any, expected: Any
) -> None:
    @tool
    def produce() -> Any:
        """Produce a value."""
        return value

    fake_provider.server.script(fake_provider.calls(("produce", {})), fake_provider.text("ok"))
    result = Runner(Agent("a", tools=[produce], model=fake_provider.model)).run("s", "go")
    assert result.content == "ok"
    (produced,) = result.tool_results
    assert not produced.is_error and produced.data == expected
    assert not fake_provider.server.failures


def test_a_result_that_cannot_be_json_is_an_error_result_and_the_run_goes_on(
    openai_fake: ProviderFake,
) -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop

    @tool
    def circular() -> dict[str, Any]:
        """Return a circular structure."""
        return loop

    openai_fake.server.script(openai_fake.calls(("circular", {})), openai_fake.text("sorry"))
    result = Runner(Agent("a", tools=[circular], model=openai_fake.model)).run("s", "go")
    assert result.content == "sorry"
    assert result.tool_results[0].is_error
    assert "cannot be sent as JSON" in result.tool_results[0].content


def test_tool_calls_executed_lists_only_tools_that_ran(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(
        fake_provider.calls(("teleport", {"to": "moon"}), ("lookup", {"code": "A"}),
                            ("lookup", {"code": 5})),
        fake_provider.text("ok"),
    )  # fmt: skip
    result = Runner(Agent("a", tools=[lookup], model=fake_provider.model)).run("s", "go")
    assert result.tool_calls_executed == ["lookup"]
    assert [r.is_error for r in result.tool_results] == [True, False, True]


def test_a_failed_call_is_logged_with_the_tool_name_and_the_error(
    openai_fake: ProviderFake, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    def flaky(n: int) -> int:
        """Fail."""
        raise RuntimeError("disk full")

    openai_fake.server.script(openai_fake.calls(("flaky", {"n": 1})), openai_fake.text("ok"))
    caplog.set_level(logging.WARNING, logger="chatflow_agent.runner")
    Runner(Agent("a", tools=[flaky], model=openai_fake.model)).run("s", "go")
    (record,) = [r for r in caplog.records if r.name == "chatflow_agent.runner"]
    assert "flaky" in record.getMessage() and "disk full" in record.getMessage()


def test_malformed_openai_arguments_are_echoed_back_exactly_as_sent(
    openai_fake: ProviderFake,
) -> None:
    reply = openai_fake.calls(("lookup", {}))
    reply.body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"code": A'
    openai_fake.server.script(reply, openai_fake.text("sorry"))
    result = Runner(Agent("a", tools=[lookup], model=openai_fake.model)).run("s", "go")
    assert result.tool_results[0].is_error and result.tool_calls_executed == []
    sent = openai_fake.server.requests[1].body["messages"][-2]["tool_calls"][0]["function"]
    assert sent["arguments"] == '{"code": A'


def test_the_fakes_refuse_non_finite_numbers(fake_provider: ProviderFake) -> None:
    import httpx

    response = httpx.post(
        f"{fake_provider.server.url}/anything",
        content=b'{"value": NaN}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400 and "NaN" in response.text
    assert fake_provider.server.failures
    fake_provider.server.failures.clear()


def test_the_fake_gemini_refuses_additional_properties_in_a_declaration(
    gemini_fake: ProviderFake,
) -> None:
    import httpx

    declaration = {"name": "f", "parameters": {"type": "OBJECT", "properties": {
        "m": {"type": "OBJECT", "additionalProperties": {"type": "NUMBER"}}}}}  # fmt: skip
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [declaration]}]}  # fmt: skip
    response = httpx.post(
        f"{gemini_fake.server.url}/v1beta/models/gemini-2.5-flash:generateContent",
        json=body,
        headers={"x-goog-api-key": FAKE_KEY},
    )
    assert response.status_code == 400 and "additionalProperties" in response.text
    gemini_fake.server.failures.clear()
