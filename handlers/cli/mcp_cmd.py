"""``chatflow mcp --workspace W [--http HOST:PORT]``: a workspace's AI tools over MCP."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from chatflow.runtime.errors import ConfigurationError

from .common import add_redis_flag, client_for, require_url, settings_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="serve a workspace's AI tools over MCP (stdio, or --http)")
    add_redis_flag(p)
    p.add_argument("--workspace", default="default", help="whose tools (default: default)")
    p.add_argument("--http", metavar="HOST:PORT",
                   help="streamable HTTP at http://HOST:PORT/mcp (needs an API key); else stdio")
    p.set_defaults(handler=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    asyncio.run(serve(args))
    return 0


async def serve(args: argparse.Namespace) -> None:
    if args.http is None:
        from mcp.server.stdio import stdio_server

        server = await _server(args)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    import uvicorn

    host, port = http_address(args.http)
    app = await http_app(args)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None)).serve()


def http_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigurationError(f"--http {text}: expected HOST:PORT, such as 127.0.0.1:8765")
    return host, int(port)


async def http_app(args: argparse.Namespace) -> Any:
    """The streamable-HTTP app at ``/mcp``, behind the workspace's API-key check."""
    from chatflow.handlers.mcp_server import require_workspace_key

    host, _ = http_address(args.http)
    client, keys = client_for(settings_from(args))
    server = await _server(args)
    return require_workspace_key(server.streamable_http_app(host=host), client, keys,
                                 args.workspace)


async def _server(args: argparse.Namespace) -> Any:
    # Imported here: the MCP SDK is an optional extra, and other commands must not need it.
    from chatflow.handlers.mcp_server import mcp_server, workspace_tools
    from chatflow_agent.runtime_tools import RuntimeConnection

    settings = settings_from(args)
    connection = RuntimeConnection(require_url(settings), prefix=settings.prefix)
    return mcp_server(await workspace_tools(connection, args.workspace), args.workspace)
