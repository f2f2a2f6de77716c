"""Talk to a `chatflow mcp` process over stdio with the official MCP client."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import TextContent


async def _probe(command: str, env: dict[str, str], tool: str,
                 arguments: dict[str, Any]) -> tuple[list[str], str]:
    params = StdioServerParameters(command=command, args=["mcp", "--workspace", "default"],
                                   env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        done = await session.call_tool(tool, arguments)
    assert not done.is_error, done
    answer = "".join(c.text for c in done.content if isinstance(c, TextContent))
    return [t.name for t in listed.tools], answer


def list_and_call(command: str, env: dict[str, str], tool: str,
                  arguments: dict[str, Any]) -> tuple[list[str], str]:
    """The names `chatflow mcp --workspace default` lists, and the text of one call's answer."""
    return asyncio.run(asyncio.wait_for(_probe(command, env, tool, arguments), timeout=120))
