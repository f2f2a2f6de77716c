"""``chatflow mcp``: serve a workspace's tools to MCP clients, over stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import asyncio

from chatflow.runtime.errors import ConfigurationError

from ..controlplane.apikeys import ApiKeyError, check_workspace
from ..operations.logging import configure_logging
from .common import add_redis_flag, require_url, settings_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="serve a workspace's AI tools to MCP clients (stdio or HTTP)")
    add_redis_flag(p)
    p.add_argument("--workspace", required=True, help="whose tools to serve")
    p.add_argument("--http", metavar="HOST:PORT", default=None,
                   help="serve streamable HTTP at http://HOST:PORT/mcp (API key required) "
                        "instead of stdio")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds one tool call may take")
    p.set_defaults(handler=cmd_mcp)


def host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdecimal() or int(port) > 65535:
        raise ConfigurationError(f"--http {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


def cmd_mcp(args: argparse.Namespace) -> int:
    configure_logging()  # to stderr: on stdio, stdout is the protocol's
    settings = settings_from(args)
    url = require_url(settings)
    try:
        workspace = check_workspace(args.workspace)
    except ApiKeyError as exc:
        raise ConfigurationError(f"--workspace: {exc}") from exc
    listen_on = host_port(args.http) if args.http else None
    try:  # the SDK is heavy: only this command imports it (a broken install still gets a hint)
        from chatflow_agent.runtime_tools import RuntimeConnection

        from ..interfaces import mcp_server
    except ImportError as exc:
        raise ConfigurationError(f"chatflow mcp needs the MCP SDK ({exc}): "
                                 "pip install --force-reinstall chatflow-agent (mcp is one of its "
                                 "dependencies)") from exc
    connection = RuntimeConnection(url, prefix=settings.prefix, cluster=settings.redis_cluster,
                                   timeout_s=args.timeout, contact_id="mcp")
    limits = mcp_server.SessionLimits(settings.mcp_sessions_per_key, settings.mcp_sessions_max,
                                      settings.mcp_session_idle_s)
    asyncio.run(mcp_server.serve(connection, workspace, listen_on, limits))
    return 0
