"""chatflow_agent.mcp: an MCP server's tools in an Agent, against a real stdio MCP server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from chatflow_agent import Agent, Runner
from chatflow_agent.mcp import MCPServerStdio
from tests.sdk.fakes import ProviderFake
from tests.sdk.wire import check_anthropic_tool, check_gemini_declaration, check_openai_tool

SERVER = str(Path(__file__).with_name("mcp_inventory_server.py"))


@pytest.fixture(scope="module")
def inventory() -> MCPServerStdio:
    server = MCPServerStdio(sys.executable, [SERVER], name="inventory", timeout=20)
    server.agent_tools()  # lists the tools once for the module
    return server


def test_the_server_tools_pass_every_dialect_check(inventory: MCPServerStdio) -> None:
    tools = {t.name: t for t in inventory.agent_tools()}
    assert sorted(tools) == ["always_fails", "check_stock", "tally"]
    for mcp_tool in tools.values():
        check_gemini_declaration(mcp_tool.to_gemini_declaration())
        check_openai_tool(mcp_tool.to_openai_tool())
        check_anthropic_tool(mcp_tool.to_anthropic_tool())
    stock = tools["check_stock"].to_gemini_declaration()
    assert stock["description"].startswith("Check how many units")
    assert stock["parameters"]["properties"]["warehouse"]["enum"] == ["east", "west"]
    assert stock["parameters"]["required"] == ["sku"]
    # dict[str, int]: entries for Gemini, additionalProperties for the JSON Schema dialects.
    tally = tools["tally"]
    assert tally.to_gemini_declaration()["parameters"]["properties"]["counts"]["type"] == "ARRAY"
    counts = tally.to_openai_parameters()["properties"]["counts"]
    assert counts["additionalProperties"] == {"type": "integer"}


def test_an_agent_calls_mcp_tools_and_gets_their_errors(
    fake_provider: ProviderFake, inventory: MCPServerStdio
) -> None:
    counts = (
        [{"key": "a", "value": 2}, {"key": "b", "value": 3}]
        if fake_provider.family == "gemini"
        else {"a": 2, "b": 3}
    )
    fake_provider.server.script(
        fake_provider.calls(
            ("check_stock", {"sku": "SKU-1", "warehouse": "west"}),
            ("tally", {"counts": counts}),
            ("always_fails", {"reason": "warehouse offline"}),
        ),
        fake_provider.text("done"),
    )
    agent = Agent("stock", "Answer stock questions.", tools=[inventory], model=fake_provider.model)
    result = Runner(agent).run(session_id="s", user_message="stock?")
    stock, total, failed = result.tool_results
    assert stock.content == "SKU-1: 7 units in west" and not stock.is_error
    assert total.data == 5 and not total.is_error
    assert failed.is_error and "warehouse offline" in failed.content
    assert fake_provider.declared_tools(fake_provider.server.requests[0]) == [
        "check_stock", "tally", "always_fails",
    ]  # fmt: skip


def test_inside_async_with_the_calls_share_one_session(openai_fake: ProviderFake) -> None:
    async def scenario() -> list[str]:
        async with MCPServerStdio(sys.executable, [SERVER], timeout=20) as server:
            openai_fake.server.script(
                openai_fake.calls(("check_stock", {"sku": "A"})),
                openai_fake.calls(("check_stock", {"sku": "B"})),
                openai_fake.text("ok"),
            )
            agent = Agent("stock", tools=[server], model=openai_fake.model)
            result = await Runner(agent).run_async(session_id="s", user_message="A and B")
            return [r.content for r in result.tool_results]

    assert asyncio.run(scenario()) == ["A: 7 units in east", "B: 7 units in east"]


async def test_a_streamable_http_server_is_a_toolset_and_gets_the_headers(
    openai_fake: ProviderFake,
) -> None:
    from chatflow_agent.mcp import MCPServerStreamableHTTP
    from tests.sdk.mcp_inventory_server import server as inventory_app
    from tests.support.http import serve_asgi

    seen: list[str] = []
    app = inventory_app.streamable_http_app()

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]).get(b"authorization", b"").decode())
        await app(scope, receive, send)

    async with serve_asgi(recording) as base:
        remote = MCPServerStreamableHTTP(
            f"{base}/mcp", headers={"authorization": "Bearer k-1"}, timeout=20
        )
        await remote.load_tools()  # in async code, list the tools before building the Agent
        openai_fake.server.script(
            openai_fake.calls(("check_stock", {"sku": "H"})), openai_fake.text("ok")
        )
        agent = Agent("stock", tools=[remote], model=openai_fake.model)
        result = await Runner(agent).run_async(session_id="s", user_message="H?")
    assert result.tool_results[0].content == "H: 7 units in east"
    assert seen and set(seen) == {"Bearer k-1"}
