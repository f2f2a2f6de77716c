"""``chatflow mcp``: a workspace's AI tools over MCP, tried with the official MCP client.

Real Valkey, real workers, the published tools of tests/bridge; stdio spawns the CLI,
streamable HTTP is the same server app behind its API-key check.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from chatflow.handlers.apikeys import create_api_key
from chatflow.handlers.native import load_native_tools
from chatflow.handlers.registry.crypto import SecretBox
from chatflow.handlers.registry.models import ToolCreate
from chatflow.handlers.registry.registry import Registry
from chatflow.handlers.registry.tools import ToolOps
from chatflow.handlers.worker import Worker
from tests.bridge.test_agent_runtime_tools import ORDER_STATUS, TRACK_PARCEL
from tests.harness import Harness
from tests.httpserver import serve_asgi


@pytest.fixture
async def published(harness: Harness) -> AsyncIterator[Harness]:
    """Two published AI tools, one no provider accepts, a draft, a served native tool."""
    worker = Worker(harness.settings, harness.url,
                    native_tools=load_native_tools(["tests.bridge.native_tools"]))
    await worker.start()
    harness.workers.append(worker)
    registry = Registry(harness.client, harness.keys, SecretBox(None))
    await registry.start()
    ops = ToolOps(registry)
    bad_slug = {**ORDER_STATUS, "slug": "9lives"}  # the registry takes it, Gemini does not
    for tool_id, definition, description in (("t-order", ORDER_STATUS, "Finds orders."),
                                             ("t-track", TRACK_PARCEL, "Tracking text."),
                                             ("t-bad", bad_slug, "Bad name.")):
        await ops.create(ToolCreate(id=tool_id, name=tool_id, description=description,
                                    definition=definition))
        await ops.publish(tool_id)
    draft = {**ORDER_STATUS, "slug": "never_published"}
    await ops.create(ToolCreate(id="t-draft", name="draft", definition=draft))
    await ops.create(ToolCreate(id="t-native", name="sentiment", kind="native",
                                nativeName="updateSentiment"))
    yield harness


async def _exercise(session: ClientSession) -> dict[str, Any]:
    await session.initialize()
    listed = {t.name: t for t in (await session.list_tools()).tools}
    ok = await session.call_tool("order_status", {"orderId": "A-17", "express": True})
    failed = await session.call_tool("track_parcel", {"code": "Z9"})
    native = await session.call_tool("updateSentiment", {"sentiment": "positive", "score": 90})
    return {"listed": listed, "ok": ok, "failed": failed, "native": native}


def _check(seen: dict[str, Any]) -> None:
    listed = seen["listed"]
    assert sorted(listed) == ["order_status", "track_parcel", "updateSentiment"]
    order = listed["order_status"]
    assert order.description == "Finds orders. Returns the order's status."
    schema = order.input_schema
    assert schema["required"] == ["orderId"]
    assert schema["properties"]["orderId"]["description"] == "The order number."
    assert listed["track_parcel"].description == "Track a parcel with the carrier."
    assert seen["ok"].is_error is False
    assert seen["ok"].content[0].text == "order A-17: shipped (express=true, weight=)"
    assert seen["failed"].is_error is True
    assert "carrier down for Z9" in seen["failed"].content[0].text
    assert seen["native"].is_error is False and "positive" in seen["native"].content[0].text


async def test_chatflow_mcp_over_stdio_serves_the_workspace_tools(published: Harness) -> None:
    env = {**os.environ, "CHATFLOW_PREFIX": published.keys.prefix, "REDIS_URL": published.url}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "import sys; from chatflow.handlers.cli import main; sys.exit(main())",
              "mcp", "--workspace", "default"],
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        seen = await _exercise(session)
    _check(seen)


async def _http_app(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The app `chatflow mcp --http` serves, built by the command's own code."""
    from chatflow.handlers.cli.main import build_parser
    from chatflow.handlers.cli.mcp_cmd import http_app

    monkeypatch.setenv("CHATFLOW_PREFIX", harness.keys.prefix)
    args = build_parser().parse_args(["mcp", "--workspace", "default", "--redis-url", harness.url,
                                      "--http", "127.0.0.1:0"])
    return await http_app(args)


async def test_chatflow_mcp_over_http_needs_an_editor_key_of_the_workspace(
    published: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, editor = await create_api_key(published.client, published.keys, workspace="default",
                                     role="editor")
    _, viewer = await create_api_key(published.client, published.keys, workspace="default",
                                     role="viewer")
    async with serve_asgi(await _http_app(published, monkeypatch)) as base:
        async with httpx.AsyncClient() as plain:
            missing = await plain.post(f"{base}/mcp", json={})
            assert missing.status_code == 401 and missing.json()["error"] == "unauthorized"
            wrong = await plain.post(f"{base}/mcp", json={},
                                     headers={"authorization": "Bearer cf_nope"})
            assert wrong.status_code == 401
            read_only = await plain.post(f"{base}/mcp", json={},
                                         headers={"authorization": f"Bearer {viewer}"})
            assert read_only.status_code == 403
        headers = {"authorization": f"Bearer {editor}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            seen = await _exercise(session)
    _check(seen)


def test_a_malformed_http_address_is_a_clear_error() -> None:
    from chatflow.handlers.cli.mcp_cmd import http_address
    from chatflow.runtime.errors import ConfigurationError

    assert http_address("127.0.0.1:9000") == ("127.0.0.1", 9000)
    with pytest.raises(ConfigurationError, match="expected HOST:PORT"):
        http_address("9000")
