"""``chatflow mcp``: a workspace's tools served over MCP with the official ``mcp`` SDK.

The SDK's low-level :class:`mcp.server.lowlevel.Server` answers ``tools/list`` and
``tools/call`` from :class:`~chatflow.handlers.controlplane.workspace_tools.WorkspaceTools`; a tool's failure
is a result with ``isError`` carrying the runtime's message, never a protocol error.

* **stdio** runs as the local user, who reaches Valkey anyway: no key.
* **Streamable HTTP** takes ``Authorization: Bearer <API key>``, checked by the SDK's bearer
  middleware against the API's key store (:func:`chatflow.handlers.controlplane.apikeys.verify_token`, read
  on every request, so a revoked key stops at once). Only keys of the served workspace pass;
  anything else answers 401. A viewer key lists the tools but may not run them, as in the API.

This module imports the SDK, which is an optional extra: the CLI imports it lazily.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import mcp_types as types
import structlog
import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from redis.exceptions import RedisError

from chatflow.runtime.errors import ConfigurationError
from chatflow_agent import __version__
from chatflow_agent.runtime_tools import RuntimeConnection

from ..controlplane.apikeys import list_workspaces, verify_token
from ..controlplane.workspace_tools import Outcome, WorkspaceTools, store_of
from .mcp_sessions import SessionCaps, SessionLimits

log = structlog.get_logger("chatflow.mcp")
WRITERS = ("admin", "editor")
MCP_PATH = "/mcp"
DEFAULT_LIMITS = SessionLimits()


class WorkspaceKeyVerifier:
    """The SDK's ``TokenVerifier``: an API key of this workspace, live (not revoked or expired)."""

    def __init__(self, connection: RuntimeConnection, workspace: str) -> None:
        self.connection = connection
        self.workspace = workspace

    async def verify_token(self, token: str) -> AccessToken | None:
        key, reason = await verify_token(*store_of(self.connection), token)
        if key is not None and key.workspace != self.workspace:
            reason = f"a key of workspace {key.workspace!r}"
            key = None
        if key is None:
            log.info("MCP request refused", reason=reason, workspace=self.workspace)
            return None
        return AccessToken(token=token, client_id=key.key_id, scopes=[key.role])


def _result(outcome: Outcome) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.text)],
                                is_error=outcome.is_error)


def _role(ctx: ServerRequestContext[Any]) -> str | None:
    request = ctx.request
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    if isinstance(user, AuthenticatedUser) and user.access_token.scopes:
        return user.access_token.scopes[0]
    return None


def build_server(tools: WorkspaceTools, *, keyed: bool) -> Server[Any]:
    """The MCP server of ``tools``; ``keyed`` (HTTP): a call needs an editor or admin key."""

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in await tools.list()
        ])

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        if keyed:
            role = _role(ctx)
            if role not in WRITERS:  # fails closed: no key seen is no right to run
                return _result(Outcome(f"a {role or 'keyless'} caller cannot run tools; it needs "
                                       "an admin or editor key", is_error=True))
        return _result(await tools.call(params.name, dict(params.arguments or {})))

    return Server("chatflow", version=__version__,
                  instructions=f"The tools of the chatflow workspace {tools.workspace!r}.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def check_workspace_exists(connection: RuntimeConnection, workspace: str) -> None:
    known = await list_workspaces(*store_of(connection))
    if workspace not in known:
        raise ConfigurationError(f"--workspace {workspace!r}: no such workspace (known: "
                                 f"{', '.join(known)}); `chatflow keys create --workspace "
                                 f"{workspace} ...` creates it")


async def serve(connection: RuntimeConnection, workspace: str,
                listen_on: tuple[str, int] | None = None,
                limits: SessionLimits = DEFAULT_LIMITS) -> None:
    """Serve over stdio, or over streamable HTTP at ``listen_on`` (host, port), until stopped."""
    try:
        try:
            await check_workspace_exists(connection, workspace)
        except RedisError as exc:  # the URL may hold a password: name the error, not the URL
            raise ConfigurationError(f"cannot reach Valkey/Redis (REDIS_URL): {exc}") from exc
        if listen_on is None:
            await serve_stdio(connection, workspace)
        else:
            await serve_http(connection, workspace, *listen_on, limits=limits)
    finally:
        await connection.aclose()


async def serve_stdio(connection: RuntimeConnection, workspace: str) -> None:
    server = build_server(WorkspaceTools(connection, workspace), keyed=False)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def http_app(connection: RuntimeConnection, workspace: str, *, host: str, port: int,
             limits: SessionLimits = DEFAULT_LIMITS) -> SessionCaps:
    """The streamable HTTP app at ``/mcp``, every request checked by the workspace's keys."""
    server = build_server(WorkspaceTools(connection, workspace), keyed=True)
    own = f"http://{_url_host(host)}:{port}"
    # The keys are issued by this deployment (`chatflow keys create`); no OAuth server exists,
    # so the issuer named is the server itself and no metadata routes are mounted.
    auth = AuthSettings(issuer_url=own, resource_server_url=None)  # type: ignore[arg-type]
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host, auth=auth,
                                     token_verifier=WorkspaceKeyVerifier(connection, workspace),
                                     max_sessions=limits.max, session_idle_timeout=limits.idle_s)
    return SessionCaps(app, per_key=limits.per_key, idle_s=limits.idle_s)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket; bound before serving, so the announced port (even for 0) is real."""
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
    except OSError as exc:
        raise ConfigurationError(f"--http {host}:{port}: cannot listen there: {exc}") from exc
    sock.listen(128)
    return sock


async def serve_http(connection: RuntimeConnection, workspace: str, host: str, port: int,
                     limits: SessionLimits = DEFAULT_LIMITS) -> None:
    sock = listen(host, port)
    port = sock.getsockname()[1]
    app = http_app(connection, workspace, host=host, port=port, limits=limits)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
    print(f"MCP (streamable HTTP) for workspace {workspace!r} on "
          f"http://{_url_host(host)}:{port}{MCP_PATH}", file=sys.stderr, flush=True)
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()


__all__ = ["MCP_PATH", "SessionLimits", "WorkspaceKeyVerifier", "build_server", "http_app",
           "serve", "serve_http", "serve_stdio"]
