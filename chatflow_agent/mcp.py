"""MCP servers' tools as agent toolsets, over the official ``mcp`` SDK (extra ``mcp``).

``Agent(tools=[MCPServerStdio("python", ["server.py"])])`` declares the server's
tools next to ``@tool`` functions. Their input schemas pass the same checks as
``@tool``'s (tool names for every provider, Gemini's Developer-API subset, strict
mode when asked). The tool list is read when the Agent is built. Inside
``async with server:`` calls share one session; otherwise each call opens its
own (a new process for stdio), which works from any event loop, ``Runner.run``'s too.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from .core.durations import check_seconds
from .errors import ChatflowAgentError, ToolExecutionError, ToolSchemaError
from .schema.declarations import ProviderDeclarations
from .schema.dialects import JsonSchemaRenderer, render_gemini
from .schema.json_import import JsonSchemaReader
from .schema.limits import check_tool_name
from .schema.nodes import ObjectNode, resolve
from .schema.walk import TypeWalker
from .tools.arguments import normalize
from .tools.execution import run_sync

try:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ChatflowAgentError(
        "chatflow_agent.mcp needs the MCP SDK: pip install 'chatflow-agent[mcp]'"
    ) from exc


# Sessions a Runner opened for the length of one run, by server; tool calls read them.
_run_sessions: contextvars.ContextVar[dict[int, ClientSession] | None] = contextvars.ContextVar(
    "chatflow_agent_mcp_sessions", default=None
)


class MCPError(ChatflowAgentError):
    """Raised when an MCP server cannot be started, reached or listed."""


class MCPServer(ABC):
    """A toolset: the tools of one MCP server. Subclasses say how to reach it."""

    def __init__(self, *, name: str, timeout: float = 30.0) -> None:
        self.name = name
        self.timeout = check_seconds(timeout, "timeout")
        self._session: ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._tools: tuple[MCPTool, ...] | None = None

    @abstractmethod
    def _transport(self) -> AbstractAsyncContextManager[Any]: ...

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[ClientSession]:
        try:
            async with self._transport() as streams, ClientSession(streams[0], streams[1]) as session:
                await asyncio.wait_for(session.initialize(), self.timeout)
                yield session
        except (OSError, TimeoutError) as exc:
            raise MCPError(f"MCP server {self.name!r} cannot be reached: {exc!r}") from exc

    async def __aenter__(self) -> MCPServer:
        stack = contextlib.AsyncExitStack()
        self._session = await stack.enter_async_context(self._open())
        self._stack, self._loop = stack, asyncio.get_running_loop()
        await self.load_tools()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        stack, self._stack, self._session, self._loop = self._stack, None, None, None
        if stack is not None:
            await stack.aclose()

    async def load_tools(self) -> tuple[MCPTool, ...]:
        """Ask the server for its tools and check each one's schema."""
        async with self._use() as session:
            listed = await asyncio.wait_for(session.list_tools(), self.timeout)
        self._tools = tuple(MCPTool(self, tool) for tool in listed.tools)
        return self._tools

    def agent_tools(self) -> Sequence[MCPTool]:
        """The tools, listed now (blocking) if no ``async with`` or ``load_tools`` did so."""
        if self._tools is None:
            run_sync(self.load_tools())
        assert self._tools is not None
        return self._tools

    @contextlib.asynccontextmanager
    async def run_scope(self) -> AsyncIterator[None]:
        """One session for a whole run (the Runner enters this), unless one is open here."""
        if self._session is not None and self._loop is asyncio.get_running_loop():
            yield
            return
        async with self._open() as session:
            token = _run_sessions.set({**(_run_sessions.get() or {}), id(self): session})
            try:
                yield
            finally:
                _run_sessions.reset(token)

    @contextlib.asynccontextmanager
    async def _use(self) -> AsyncIterator[ClientSession]:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            yield self._session
            return
        shared = (_run_sessions.get() or {}).get(id(self))
        if shared is not None:
            yield shared
            return
        async with self._open() as session:
            yield session

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        async with self._use() as session:
            return await session.call_tool(name, dict(arguments))


class MCPServerStdio(MCPServer):
    """An MCP server started as a subprocess, spoken to over its stdin and stdout."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        name: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(name=name or command, timeout=timeout)
        self.params = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env else None, cwd=cwd
        )

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        transport: AbstractAsyncContextManager[Any] = stdio_client(self.params)
        return transport


class MCPServerStreamableHTTP(MCPServer):
    """An MCP server at a streamable-HTTP URL; ``headers`` go with every request."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(name=name or url, timeout=timeout)
        self.url = url
        self.headers = dict(headers or {})

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        # The SDK's own HTTP client (its timeouts), carrying our headers (an API key).
        async with (
            create_mcp_http_client(headers=self.headers) as client,
            streamable_http_client(self.url, http_client=client) as streams,
        ):
            yield streams


def _field(obj: Any, snake: str, camel: str, default: Any = None) -> Any:
    # mcp 2.x names fields in snake_case, 1.x in camelCase.
    return getattr(obj, snake, getattr(obj, camel, default))


class MCPTool(ProviderDeclarations):
    """One tool of an MCP server, declared and called like any other agent tool."""

    def __init__(self, server: MCPServer, tool: Any) -> None:
        self.server = server
        self.name: str = tool.name
        self.description: str = tool.description or ""
        owner = f"MCP server {server.name!r} tool {tool.name!r}"
        check_tool_name(self.name, owner=owner)
        schema = _field(tool, "input_schema", "inputSchema") or {"type": "object"}
        self._walker = TypeWalker(owner)
        node = resolve(JsonSchemaReader(schema, self._walker).read(schema))
        if not isinstance(node, ObjectNode):
            node = ObjectNode(properties=())
        self._node = node
        # A recursive schema is refused only when Gemini's declaration is asked for.
        self._gemini: dict[str, Any] | None = None
        self._gemini_refusal: ToolSchemaError | None = None
        try:
            self._gemini = render_gemini(node, self._walker.error)
        except ToolSchemaError as exc:
            self._gemini_refusal = exc
        self._json = JsonSchemaRenderer(strict=False, error=self._walker.error).render(node)

    def __repr__(self) -> str:
        return f"MCPTool(name={self.name!r}, server={self.server.name!r})"

    def to_gemini_declaration(self) -> dict[str, Any]:
        declaration: dict[str, Any] = {"name": self.name}
        if self.description:
            declaration["description"] = self.description
        if self._gemini_refusal is not None:
            raise ToolSchemaError(str(self._gemini_refusal), function=self._gemini_refusal.function)
        if self._node.properties and self._gemini is not None:
            declaration["parameters"] = self._gemini
        return declaration

    def to_openai_parameters(self, *, strict: bool = False) -> dict[str, Any]:
        if strict:
            return JsonSchemaRenderer(strict=True, error=self._walker.error).render(self._node)
        return dict(self._json)

    def bind_model_arguments(self, arguments: Mapping[str, Any], *, gemini: bool) -> dict[str, Any]:
        value = normalize(self._node, dict(arguments), from_model=True, gemini=gemini)
        return dict(value)

    async def execute_async(self, **kwargs: Any) -> Any:
        try:
            result = await asyncio.wait_for(self.server.call(self.name, kwargs), self.server.timeout)
        except ToolExecutionError:
            raise
        except Exception as exc:  # the SDK and its transports raise many kinds
            text = str(exc) or type(exc).__name__
            raise ToolExecutionError(f"MCP tool {self.name!r} failed: {text}", tool_name=self.name) from exc
        value = _result_value(result)
        if _field(result, "is_error", "isError", False):
            raise ToolExecutionError(str(value), tool_name=self.name)
        return value


def _result_value(result: Any) -> Any:
    structured = _field(result, "structured_content", "structuredContent")
    if isinstance(structured, dict) and list(structured) == ["result"]:
        return structured["result"]  # the SDK's wrapper of a non-object return value
    if structured is not None:
        return structured
    items: list[Any] = []
    for block in result.content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            items.append(block.text)
        elif kind in ("image", "audio"):
            items.append({"mime_type": _field(block, "mime_type", "mimeType"), "base64": block.data})
        else:
            items.append(block.model_dump(mode="json", exclude_none=True))
    if all(isinstance(item, str) for item in items):
        return "\n".join(items)
    return items[0] if len(items) == 1 else items


__all__ = ["MCPError", "MCPServer", "MCPServerStdio", "MCPServerStreamableHTTP", "MCPTool"]
