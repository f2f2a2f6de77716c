"""A small MCP server over stdio, built with the official SDK, for chatflow_agent.mcp's tests."""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("inventory")


@server.tool()
def check_stock(sku: str, warehouse: Literal["east", "west"] = "east") -> str:
    """Check how many units of a SKU a warehouse holds."""
    return f"{sku}: 7 units in {warehouse}"


@server.tool()
def tally(counts: dict[str, int]) -> int:
    """Add up counts per item."""
    return sum(counts.values())


@server.tool()
def always_fails(reason: str) -> str:
    """Fail with the given reason."""
    raise ToolError(reason)


if __name__ == "__main__":
    server.run()
