"""Session storage: in memory by default, Redis as a one-line choice."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatflow_agent import Agent, Runner, ToolCall, ToolResult, tool
from chatflow_agent.core.memory import RedisSessionStore, SessionStore
from chatflow_agent.core.messages import AssistantMessage, UserMessage
from tests.sdk.fakes import ProviderFake

HISTORY = [
    UserMessage("hi"),
    AssistantMessage(
        None,
        (ToolCall("c1", "lookup", {"code": "X", "n": [1, 2]}),),
        provider="gemini",
        raw=[
            {"functionCall": {"name": "lookup", "args": {"code": "X"}}, "thoughtSignature": "c2ln"}
        ],
    ),
    ToolResult("c1", "lookup", '{"ok": true}', data={"ok": True}),
    ToolResult("c2", "other", "boom", is_error=True),
    AssistantMessage("done", provider="gemini", raw=[{"text": "done"}]),
]


async def test_the_in_memory_store_keeps_sessions_apart() -> None:
    store = SessionStore()
    assert await store.load("a") == []
    await store.append("a", HISTORY[:2])
    await store.append("b", HISTORY[2:3])
    await store.append("a", HISTORY[2:])
    assert await store.load("a") == HISTORY
    assert await store.load("b") == HISTORY[2:3]
    await store.clear("a")
    assert await store.load("a") == []


@pytest.fixture
def redis_url(valkey_server: Any) -> str:
    return f"redis://{valkey_server.host}:{valkey_server.port}/0"


async def test_the_redis_store_round_trips_every_kind_of_message(redis_url: str) -> None:
    store = SessionStore.redis(redis_url, prefix="test-roundtrip:")
    await store.clear("s")
    await store.append("s", HISTORY)
    loaded = await store.load("s")
    assert loaded == HISTORY
    assert loaded[1].raw == HISTORY[1].raw  # type: ignore[union-attr]
    assert loaded[2].data == {"ok": True}  # type: ignore[union-attr]
    await store.clear("s")
    assert await store.load("s") == []


async def test_the_redis_store_expires_idle_sessions(redis_url: str, valkey_server: Any) -> None:
    store = RedisSessionStore(redis_url, prefix="test-ttl:", ttl_seconds=600)
    await store.append("s", HISTORY[:1])
    client = valkey_server.client()
    try:
        assert 0 < client.ttl("test-ttl:s") <= 600
    finally:
        client.close()


async def test_the_redis_store_can_use_an_app_owned_client(redis_url: str) -> None:
    from redis.asyncio import from_url

    async with from_url(redis_url) as client:
        store = RedisSessionStore(prefix="test-own:", client=client)
        await store.clear("s")
        await store.append("s", HISTORY[:1])
        assert await store.load("s") == HISTORY[:1]


@tool
def lookup(code: str) -> dict[str, str]:
    """Look a code up."""
    return {"code": code}


def test_a_runner_with_a_redis_store_carries_history_across_runners(
    redis_url: str, fake_provider: ProviderFake
) -> None:
    fake_provider.server.script(
        fake_provider.calls(("lookup", {"code": "A"})),
        fake_provider.text("found A"),
        fake_provider.text("you asked about A"),
    )
    session = f"redis-{fake_provider.family}"
    asyncio.run(SessionStore.redis(redis_url).clear(session))
    agent = Agent(name="a", tools=[lookup], model=fake_provider.model)
    Runner(starting_agent=agent, session_store=SessionStore.redis(redis_url)).run(
        session_id=session, user_message="look A up"
    )
    # A fresh runner and store, as after a restart: history comes from Redis.
    later = Runner(starting_agent=agent, session_store=SessionStore.redis(redis_url))
    assert later.run(session_id=session, user_message="what was it?").content == "you asked about A"
    assert "look A up" in str(fake_provider.server.requests[2].body)
    stored = asyncio.run(SessionStore.redis(redis_url).load(session))
    assert [m.role for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]


def test_an_empty_reply_leaves_a_redis_session_usable_for_later_runners(
    redis_url: str, fake_provider: ProviderFake
) -> None:
    blocked = {"gemini": "SAFETY", "openai": "content_filter", "anthropic": "refusal"}
    fake_provider.server.script(
        fake_provider.empty(blocked[fake_provider.family]), fake_provider.text("fine now")
    )
    session = f"redis-empty-{fake_provider.family}"
    asyncio.run(SessionStore.redis(redis_url).clear(session))
    agent = Agent(name="a", tools=[lookup], model=fake_provider.model)
    first = Runner(agent, session_store=SessionStore.redis(redis_url)).run(session, "first")
    assert (first.content, first.finish_reason) == (None, "content_filter")
    # A fresh runner replays the history from Redis; the fake refuses an empty turn in it.
    later = Runner(agent, session_store=SessionStore.redis(redis_url)).run(session, "second")
    assert later.content == "fine now"
    stored = asyncio.run(SessionStore.redis(redis_url).load(session))
    assert [m.role for m in stored] == ["user", "user", "assistant"]
