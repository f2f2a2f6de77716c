"""Long requests are bounded per key and per workspace, draw on a pool of their own, and an
idle live-debug stream stays open: one viewer key holding streams cannot make another
tenant's request fail (issue 29), and the page does not flip to "reconnecting" every 5 s
(issue 32)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import msgspec
import pytest

from chatflow.handlers.api.debug_routes import HEARTBEAT_MS
from chatflow.schemas.wire import DebugEvent
from tests.api.support import Api, api_settings, running_api


@pytest.fixture
async def capped(redis_url: str, prefix: str) -> AsyncIterator[Api]:
    settings = api_settings(redis_url, prefix, api_held_per_key=3, api_held_per_workspace=4)
    async with running_api(settings) as api:
        yield api


@asynccontextmanager
async def stream(client: httpx.AsyncClient, contact: str = "c-1") -> AsyncIterator[
        tuple[httpx.Response, AsyncIterator[str]]]:
    """A live-debug stream, opened; its response and its lines."""
    async with client.stream("GET", f"/debug/{contact}/stream") as response:
        yield response, response.aiter_lines()


async def next_event(lines: AsyncIterator[str], prefix: str) -> str:
    """The next line starting with ``prefix`` (an SSE field or a comment)."""
    async for line in lines:
        if line.startswith(prefix):
            return line
    raise AssertionError(f"the stream ended before a {prefix!r} line")


async def test_a_key_holding_its_streams_gets_429_and_every_other_tenant_still_answers(
        capped: Api) -> None:
    api = capped
    viewer = api.as_key(await api.new_key("a", "viewer"))
    other = api.as_key(await api.new_key("b", "viewer"))
    kept = []  # each stream's line iterator: dropping one would close its stream
    async with AsyncExitStack() as held:
        for _ in range(3):
            response, lines = await held.enter_async_context(stream(viewer))
            assert response.status_code == 200
            await next_event(lines, "event: ready")
            kept.append(lines)
        refused = await viewer.get("/debug/c-1/stream")
        assert refused.status_code == 429, refused.text
        body = refused.json()
        assert body["error"] == "too_many_held" and body["setting"] == "CHATFLOW_API_HELD_PER_KEY"
        assert "CHATFLOW_API_HELD_PER_KEY" in body["message"] and body["limit"] == 3
        # Another tenant's requests, while the first holds everything it may: all answered.
        answers = await asyncio.gather(*(other.get(path) for path in
                                         ["/tools", "/executions", "/integration-servers"] * 10))
        assert {r.status_code for r in answers} == {200}, [r.text for r in answers
                                                          if r.status_code != 200]
        async with stream(other) as (response, lines):
            assert response.status_code == 200
            await next_event(lines, "event: ready")
    # The streams closed: their leases came back, the key opens again.
    async with stream(viewer) as (response, lines):
        assert response.status_code == 200
        await next_event(lines, "event: ready")
    await viewer.aclose()
    await other.aclose()


async def test_the_workspace_cap_holds_across_its_keys(capped: Api) -> None:
    api = capped
    first = api.as_key(await api.new_key("a", "viewer"))
    second = api.as_key(await api.new_key("a", "editor"))
    kept = []  # each stream's line iterator: dropping one would close its stream
    async with AsyncExitStack() as held:
        for client in (first, first, first, second):
            response, lines = await held.enter_async_context(stream(client))
            assert response.status_code == 200
            await next_event(lines, "event: ready")
            kept.append(lines)
        refused = await second.get("/debug/c-1/stream")
        assert refused.status_code == 429
        assert refused.json()["setting"] == "CHATFLOW_API_HELD_PER_WORKSPACE"
        # A test run is a long request too: it waits its turn in the same budget.
        test_run = await second.post("/tools/test-block", json={
            "block": {"type": "return", "id": "r", "value": "x"}})
        assert test_run.status_code == 429
    await first.aclose()
    await second.aclose()


async def test_an_idle_stream_stays_open_with_its_keep_alive_and_still_delivers(
        api: Api) -> None:
    viewer = api.as_key(await api.new_key("a", "viewer"))
    async with stream(viewer, "c-idle") as (response, lines):
        assert response.status_code == 200
        await next_event(lines, "event: ready")
        # Idle for a whole heartbeat (10 s: longer than redis-py's 5 s default socket
        # timeout, which used to end the stream): the keep-alive comes, the stream stays.
        keep_alive = await asyncio.wait_for(next_event(lines, ":"), HEARTBEAT_MS / 1000 + 10)
        assert keep_alive == ": keep-alive"
        event = DebugEvent(type="action_start", actionType="executeTool", actionId="a",
                           commandId="cmd-idle", executionId="0-x", occurredAt="now",
                           payload={"ok": True}, workspace="a")
        await api.client.xadd(api.keys.debug("c-idle"), {"data": msgspec.json.encode(event)})
        data = await asyncio.wait_for(next_event(lines, "data: "), 15)
        assert json.loads(data.removeprefix("data: "))["commandId"] == "cmd-idle"
    await viewer.aclose()


async def test_a_busy_stream_stays_counted_against_its_cap(
        redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream fed an event more often than its heartbeat renews its lease all the same:
    before, only an empty read renewed it, so a busy stream's lease lapsed and the key could
    open more streams than its cap."""
    from chatflow.handlers.api import debug_routes, held

    monkeypatch.setattr(held, "LEASE_MS", 1_500)
    monkeypatch.setattr(debug_routes, "HEARTBEAT_MS", 300)
    settings = api_settings(redis_url, prefix, api_held_per_key=1)
    async with running_api(settings) as api:
        viewer = api.as_key(await api.new_key("a", "viewer"))
        async with stream(viewer, "c-busy") as (response, lines):
            assert response.status_code == 200
            await next_event(lines, "event: ready")
            await next_event(lines, "data: ")  # the ready frame's own
            # Events back to back for three lease periods: every read returns one.
            loop = asyncio.get_running_loop()
            until = loop.time() + 3 * held.LEASE_MS / 1000
            n = 0
            while loop.time() < until:
                n += 1
                event = DebugEvent(type="action_start", actionType="executeTool", actionId="a",
                                   commandId=f"cmd-{n}", executionId="0-x", occurredAt="now",
                                   payload={}, workspace="a")
                await api.client.xadd(api.keys.debug("c-busy"),
                                      {"data": msgspec.json.encode(event)})
                data = await asyncio.wait_for(next_event(lines, "data: "), 10)
                assert json.loads(data.removeprefix("data: ")).get("commandId") == f"cmd-{n}", data
            # Streamed: a stream let through (the bug) must fail here, not hang the test.
            async with viewer.stream("GET", "/debug/c-busy/stream") as refused:
                assert refused.status_code == 429, n
                assert json.loads(await refused.aread())["setting"] == "CHATFLOW_API_HELD_PER_KEY"
        await viewer.aclose()
