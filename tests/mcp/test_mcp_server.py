"""``chatflow mcp`` against the official MCP client, over stdio and streamable HTTP.

Real Valkey, a real registry, real workers (one of them serving native tools); the stdio
server is the ``chatflow mcp`` command in a subprocess, the HTTP server runs on a loopback port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from chatflow.handlers.controlplane.apikeys import revoke_api_key
from chatflow.handlers.interfaces.mcp_server import MCP_PATH, SessionLimits, http_app
from chatflow.handlers.registry.scope import Scope
from chatflow_agent.runtime_tools import RuntimeConnection
from tests.harness import Harness
from tests.mcp.support import (
    SHOP_TOOLS,
    Runtime,
    http_session,
    make_runtime,
    returning,
    stdio_session,
)
from tests.support.http import serve_asgi

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
async def runtime(harness: Harness) -> Runtime:
    return await make_runtime(harness)


@pytest.fixture
async def shop_url(runtime: Runtime) -> AsyncIterator[str]:
    h = runtime.harness
    connection = RuntimeConnection(h.url, prefix=h.keys.prefix, timeout_s=30, contact_id="mcp")
    async with serve_asgi(http_app(connection, "shop", host="127.0.0.1", port=0)) as base:
        yield base + MCP_PATH
    await connection.aclose()


def by_name(tools: list[types.Tool]) -> dict[str, types.Tool]:
    return {t.name: t for t in tools}


def text(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def check_shop_listing(tools: dict[str, types.Tool]) -> None:
    assert set(tools) == SHOP_TOOLS
    order = tools["order_status"]
    # Seed "Descrição": no definition.description, so Tool.description, plus returnDescription.
    assert order.description == "Finds orders. Returns the order's status."
    assert order.input_schema == {
        "type": "object",
        "properties": {"orderId": {"type": "string", "description": "The order number."},
                       "express": {"type": "boolean", "description": "Whether it ships express."}},
        "required": ["orderId"],
    }
    # definition.description wins over the tool's own.
    assert tools["track_parcel"].description == "Track a parcel with the carrier."
    assert tools["track_parcel"].input_schema["properties"]["code"]["description"] == "The tracking code."
    sentiment = tools["updateSentiment"]
    assert sentiment.description == "Record how the contact feels about the conversation."
    assert sentiment.input_schema["properties"]["sentiment"]["enum"] == ["positive", "neutral", "negative"]
    assert sentiment.input_schema["properties"]["sentiment"]["description"] == (
        "The contact's mood, as the model reads it.")


# ------------------------------------------------------------------ stdio


async def test_stdio_lists_exactly_the_workspace_s_ai_tools_and_runs_them(runtime: Runtime) -> None:
    async with stdio_session(runtime.stdio("shop")) as session:
        check_shop_listing(by_name((await session.list_tools()).tools))

        done = await session.call_tool("order_status", {"orderId": "A-17", "express": True})
        assert not done.is_error
        assert text(done) == "order A-17: shipped (express=true)"

        native = await session.call_tool("updateSentiment", {"sentiment": "positive", "score": 80})
        assert not native.is_error
        assert '"saved": true' in text(native) and '"score": 80' in text(native)


async def test_stdio_of_another_workspace_shows_only_that_workspace_s_tools(runtime: Runtime) -> None:
    async with stdio_session(runtime.stdio("other")) as session:
        assert set(by_name((await session.list_tools()).tools)) == {"other_tool"}
        assert text(await session.call_tool("other_tool", {})) == "other's secret"
        refused = await session.call_tool("order_status", {"orderId": "A-1"})
    assert refused.is_error
    assert "no tool 'order_status' in workspace 'other'" in text(refused)


async def test_a_failing_tool_answers_is_error_with_the_runtime_s_message_over_stdio(
    runtime: Runtime,
) -> None:
    h = runtime.harness
    direct = await h.run(runtime.published["t-track"], inputs={"code": "X9"})
    assert not direct.ok and direct.error is not None
    async with stdio_session(runtime.stdio("shop")) as session:
        failed = await session.call_tool("track_parcel", {"code": "X9"})
        ticket = await session.call_tool("openTicket", {"subject": "refund"})
    assert failed.is_error
    assert text(failed) == direct.error.message  # the seed's message, verbatim
    assert "carrier down for X9" in text(failed)
    assert ticket.is_error and text(ticket) == "ticket system rejected 'refund'"


async def test_a_tool_of_another_workspace_cannot_be_called_by_its_slug(runtime: Runtime) -> None:
    async with stdio_session(runtime.stdio("shop")) as session:
        refused = await session.call_tool("other_tool", {})
    assert refused.is_error and "other's secret" not in text(refused)


# ------------------------------------------------------------------ streamable HTTP


async def test_http_lists_and_runs_the_workspace_s_tools_with_an_editor_key(
    runtime: Runtime, shop_url: str
) -> None:
    async with http_session(shop_url, runtime.tokens["shop-editor"]) as session:
        check_shop_listing(by_name((await session.list_tools()).tools))
        done = await session.call_tool("order_status", {"orderId": "B-2"})
        failed = await session.call_tool("track_parcel", {"code": "Z1"})
        bad = await session.call_tool("order_status", {"express": True})
    assert not done.is_error and text(done) == "order B-2: shipped (express=)"
    assert failed.is_error and "carrier down for Z1" in text(failed)
    assert bad.is_error and "missing required argument 'orderId'" in text(bad)


async def post_initialize(url: str, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})


@pytest.mark.parametrize("who", ["no key", "a malformed key", "another workspace's key",
                                 "a revoked key"])
async def test_http_refuses_a_caller_without_a_live_key_of_the_workspace(
    runtime: Runtime, shop_url: str, who: str
) -> None:
    tokens = runtime.tokens
    if who == "a revoked key":
        await revoke_api_key(runtime.harness.client, runtime.harness.keys,
                             runtime.key_ids["shop-editor"])
    header = {"no key": None, "a malformed key": "cfk_nope",
              "another workspace's key": tokens["other-admin"],
              "a revoked key": tokens["shop-editor"]}[who]
    response = await post_initialize(shop_url, {"Authorization": f"Bearer {header}"} if header else {})
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "order_status" not in response.text


async def test_the_official_client_fails_to_connect_with_another_workspace_s_key(
    runtime: Runtime, shop_url: str
) -> None:
    with pytest.raises(BaseExceptionGroup) as info:
        async with http_session(shop_url, runtime.tokens["other-admin"]):
            pass
    assert any(isinstance(e, MCPError) for e in leaves(info.value)), info.value


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def test_a_viewer_key_lists_the_tools_but_cannot_run_them(
    runtime: Runtime, shop_url: str
) -> None:
    async with http_session(shop_url, runtime.tokens["shop-viewer"]) as session:
        assert set(by_name((await session.list_tools()).tools)) == SHOP_TOOLS
        refused = await session.call_tool("updateSentiment", {"sentiment": "negative"})
    assert refused.is_error
    assert text(refused) == "a viewer caller cannot run tools; it needs an admin or editor key"


async def test_a_nested_tool_missing_from_the_cache_gives_the_seed_s_not_found_message(
    runtime: Runtime, shop_url: str
) -> None:
    await runtime.tool("shop", "t-child", returning("child"), "The child.")
    child = runtime.published["t-child"]
    nested = {
        "blocks": {
            "c": {"type": "callTool", "id": "c", "toolId": "t-child", "publishedToolId": child,
                  "inputVariables": [], "outputVariable": "v", "onError": "blocking",
                  "defaultOutput": {"type": "block", "blockId": "r"}},
            "r": {"type": "return", "id": "r", "value": "{{v}}"},
        },
        "onboardingBlockId": "c", "enabledForAI": True, "slug": "nested",
    }
    await runtime.tool("shop", "t-nested", nested, "Calls the child.")
    h = runtime.harness
    await h.client.delete(h.keys.tool(child))  # the child's cache entry is gone (seed: Redis only)
    async with http_session(shop_url, runtime.tokens["shop-editor"]) as session:
        failed = await session.call_tool("nested", {})
    assert failed.is_error
    assert f"tool não encontrada: publishedToolId={child}" in text(failed)


@asynccontextmanager
async def modern_client(url: str, token: str) -> AsyncIterator[Client]:
    async with (create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
                Client(streamable_http_client(url, http_client=http), mode="auto") as client):
        yield client


async def test_the_2026_protocol_era_gets_the_same_tools_and_the_same_role_check(
    runtime: Runtime, shop_url: str
) -> None:
    async with modern_client(shop_url, runtime.tokens["shop-editor"]) as editor:
        assert editor.protocol_version == "2026-07-28"
        assert {t.name for t in (await editor.list_tools()).tools} == SHOP_TOOLS
        done = await editor.call_tool("order_status", {"orderId": "M-1"})
    async with modern_client(shop_url, runtime.tokens["shop-viewer"]) as viewer:
        refused = await viewer.call_tool("order_status", {"orderId": "M-1"})
    assert not done.is_error and text(done) == "order M-1: shipped (express=)"
    assert refused.is_error and "needs an admin or editor key" in text(refused)


async def test_a_tool_published_or_trashed_while_serving_shows_on_the_next_listing(
    runtime: Runtime, shop_url: str
) -> None:
    async with http_session(shop_url, runtime.tokens["shop-editor"]) as session:
        assert "late_tool" not in by_name((await session.list_tools()).tools)
        await runtime.tool("shop", "t-late", returning("late", enabledForAI=True, slug="late_tool"),
                           "Published later.")
        assert by_name((await session.list_tools()).tools)["late_tool"].description == "Published later."
        assert text(await session.call_tool("late_tool", {})) == "late"
        await runtime.ops.trash("t-late", scope=Scope("shop", "test"))
        assert "late_tool" not in by_name((await session.list_tools()).tools)
        gone = await session.call_tool("late_tool", {})
    assert gone.is_error and "no tool 'late_tool'" in text(gone)


async def test_a_loopback_http_server_refuses_a_rebound_host_or_a_foreign_origin(
        runtime: Runtime, shop_url: str) -> None:
    # DNS rebinding: a page of attacker.example whose name now resolves to 127.0.0.1 reaches
    # the loopback server with its own Host (and Origin) header. A valid key does not help it.
    key = {"Authorization": f"Bearer {runtime.tokens['shop-editor']}"}
    rebound = await post_initialize(shop_url, {**key, "Host": "attacker.example:80"})
    assert rebound.status_code in (400, 403, 421), rebound.text
    foreign = await post_initialize(shop_url, {**key, "Origin": "http://attacker.example"})
    assert foreign.status_code in (400, 403), foreign.text
    assert (await post_initialize(shop_url, key)).status_code == 200


# ------------------------------------------------------------------ sessions, capped per key


async def test_one_key_cannot_hold_more_than_its_sessions_and_a_deleted_one_frees_its_place(
    runtime: Runtime
) -> None:
    h = runtime.harness
    connection = RuntimeConnection(h.url, prefix=h.keys.prefix, timeout_s=30, contact_id="mcp")
    limits = SessionLimits(per_key=2, max=3, idle_s=600)
    viewer = {"Authorization": f"Bearer {runtime.tokens['shop-viewer']}"}
    editor = {"Authorization": f"Bearer {runtime.tokens['shop-editor']}"}
    try:
        async with serve_asgi(http_app(connection, "shop", host="127.0.0.1", port=0,
                                       limits=limits)) as base:
            url = base + MCP_PATH
            opened = [await post_initialize(url, viewer) for _ in range(2)]
            assert [r.status_code for r in opened] == [200, 200]
            refused = await post_initialize(url, viewer)
            assert refused.status_code == 429
            # The same key spelled another way is the same key.
            respelled = {"Authorization": f"bearer  {runtime.tokens['shop-viewer']}"}
            assert (await post_initialize(url, respelled)).status_code == 429
            assert "CHATFLOW_MCP_SESSIONS_PER_KEY" in refused.json()["error"]["message"]
            # Another key of the workspace still gets in, up to the process's own cap.
            assert (await post_initialize(url, editor)).status_code == 200
            assert (await post_initialize(url, editor)).status_code == 503
            # A session the client ends gives its place back.
            async with httpx.AsyncClient(timeout=30) as http:
                ended = await http.delete(url, headers={
                    **viewer, "mcp-session-id": opened[0].headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-06-18"})
            assert ended.status_code == 200, ended.text
            assert (await post_initialize(url, viewer)).status_code == 200
    finally:
        await connection.aclose()


async def test_made_up_tokens_leave_no_entry_behind_in_the_session_table(runtime: Runtime) -> None:
    # Each request naming a new token made an entry of the per-key table that was never dropped:
    # no key needed to grow the server's memory without bound.
    h = runtime.harness
    connection = RuntimeConnection(h.url, prefix=h.keys.prefix, timeout_s=30, contact_id="mcp")
    app = http_app(connection, "shop", host="127.0.0.1", port=0)
    try:
        async with serve_asgi(app) as base, httpx.AsyncClient(timeout=30) as http:
            url = base + MCP_PATH
            for n in range(20):
                made_up = {**MCP_HEADERS, "Authorization": f"Bearer cfk_{n:016x}_made-up"}
                assert (await http.post(url, json=INITIALIZE, headers=made_up)).status_code == 401
                session = {**made_up, "mcp-session-id": f"{n:032x}"}
                assert (await http.get(url, headers=session)).status_code == 401
                assert (await http.delete(url, headers=session)).status_code == 401
            assert app.held == {}
            # A key's entry stays while it holds a session, and only then.
            editor = {"Authorization": f"Bearer {runtime.tokens['shop-editor']}"}
            opened = await post_initialize(url, editor)
            assert opened.status_code == 200
            assert len(app.held) == 1
            ended = await http.delete(url, headers={
                **editor, "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-06-18"})
            assert ended.status_code == 200, ended.text
            assert app.held == {}
    finally:
        await connection.aclose()


async def test_a_session_with_an_open_stream_keeps_counting_however_long_it_is_idle(
    runtime: Runtime
) -> None:
    # The SDK keeps a session whose GET event stream is open, however old; the wrapper dropped it
    # from the key's count idle_s after the GET began, so a key holding streams open could open
    # per_key sessions more, again and again. The wrapper's clock is moved by hand.
    h = runtime.harness
    connection = RuntimeConnection(h.url, prefix=h.keys.prefix, timeout_s=30, contact_id="mcp")
    limits = SessionLimits(per_key=1, max=8, idle_s=600)
    app = http_app(connection, "shop", host="127.0.0.1", port=0, limits=limits)
    now = [0.0]
    app.clock = lambda: now[0]
    viewer = {"Authorization": f"Bearer {runtime.tokens['shop-viewer']}"}
    try:
        async with serve_asgi(app) as base, httpx.AsyncClient(timeout=30) as http:
            url = base + MCP_PATH
            opened = await post_initialize(url, viewer)
            assert opened.status_code == 200
            stream = {**viewer, "Accept": "text/event-stream",
                      "mcp-session-id": opened.headers["mcp-session-id"],
                      "mcp-protocol-version": "2025-06-18"}
            async with http.stream("GET", url, headers=stream) as events:
                assert events.status_code == 200  # the headers came: the stream is open
                now[0] += 10 * limits.idle_s
                assert (await post_initialize(url, viewer)).status_code == 429
    finally:
        await connection.aclose()
