"""``chatflow mcp``: a workspace's AI tools served over MCP (stdio or streamable HTTP).

The tools are the workspace's published custom tools with ``enabledForAI`` (seed 002's
function spec: slug, description fallback, returnDescription, input descriptions,
built by ``chatflow_agent.runtime_specs``) and its native tools that a worker serves.
A call publishes an executeTool command (or a native call) through the runtime and
answers its result, or an ``isError`` result with the runtime's error message.
The HTTP transport takes an API key of the workspace (editor or admin).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

from chatflow.handlers.apikeys import verify_token
from chatflow.handlers.keys import Keys
from chatflow.handlers.redis_client import Client
from chatflow.runtime.registry.state import workspace_of
from chatflow_agent.core.agent import AgentTool
from chatflow_agent.errors import ToolExecutionError, ToolSchemaError
from chatflow_agent.runtime_tools import RuntimeConnection, RuntimeTools, RuntimeToolsError

logger = logging.getLogger("chatflow.mcp")
_CALLER_ROLES = frozenset({"admin", "editor"})
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
                   Awaitable[None]]


async def workspace_tools(connection: RuntimeConnection, workspace: str) -> RuntimeTools:
    """The workspace's AI tools: published ``enabledForAI`` custom tools, served native tools."""
    client = connection.client()
    raw = await client.hgetall(connection.keys.registry_view("tools"))
    published: list[str] = []
    natives: list[str] = []
    for value in raw.values():
        view = json.loads(value)
        if workspace_of(view) != workspace or view.get("deletedAt"):
            continue
        if view.get("kind") == "native" and view.get("nativeName"):
            if await client.exists(connection.keys.native_tool(str(view["nativeName"]))):
                natives.append(str(view["nativeName"]))
            else:
                logger.warning("native tool %s has no worker serving it; left out",
                               view["nativeName"])
        elif view.get("publishedToolId") and _enabled_for_ai(view):
            published.append(str(view["publishedToolId"]))
    tools: list[AgentTool] = []
    for published_id in sorted(published):
        try:
            loaded = await RuntimeTools.load(connection, published_tool_ids=[published_id])
        except (RuntimeToolsError, ToolSchemaError) as exc:
            # One tool no provider could call must not take the workspace's others down.
            logger.warning("published tool %s left out: %s", published_id, exc)
            continue
        tools.extend(loaded)
    natives_loaded = await RuntimeTools.load(connection, native_names=sorted(natives))
    return RuntimeTools([*tools, *natives_loaded], connection)


def _enabled_for_ai(view: dict[str, Any]) -> bool:
    definition = (view.get("publishedTool") or {}).get("definition") or {}
    return bool(definition.get("enabledForAI"))


def mcp_server(tools: Sequence[AgentTool], workspace: str) -> Server[Any]:
    """A low-level MCP server whose tools are ``tools``, declared as JSON Schema."""
    by_name = {tool.name: tool for tool in tools}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description,
                       input_schema=t.to_openai_tool()["function"]["parameters"])
            for t in tools
        ])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            return _error(f"Unknown tool {params.name!r}. Available tools: "
                          f"{', '.join(by_name) or 'none'}.")
        try:
            arguments = tool.bind_model_arguments(params.arguments or {}, gemini=False)
            value = await tool.execute_async(**arguments)
        except ToolExecutionError as exc:
            cause = exc.__cause__
            return _error(str(exc) if cause is None else str(cause) or str(exc))
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(f"chatflow-{workspace}", on_list_tools=list_tools, on_call_tool=call_tool)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                is_error=True)


def require_workspace_key(app: ASGIApp, client: Client, keys: Keys, workspace: str) -> ASGIApp:
    """ASGI middleware: a live API key of ``workspace`` with an editor or admin role."""

    async def guarded(scope: Scope, receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode()
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            await _deny(send, 401, "unauthorized", "send Authorization: Bearer <API key>")
            return
        key, why = await verify_token(client, keys, token.strip())
        if key is None:
            await _deny(send, 401, "unauthorized", why)
        elif key.workspace != workspace or key.role not in _CALLER_ROLES:
            await _deny(send, 403, "forbidden",
                        f"this MCP endpoint serves workspace {workspace!r} to its editors and admins")
        else:
            await app(scope, receive, send)

    return guarded


async def _deny(send: Callable[[Any], Awaitable[None]], status: int, error: str,
                message: str) -> None:
    body = json.dumps({"error": error, "message": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
