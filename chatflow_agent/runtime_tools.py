"""Agents calling the runtime's tools: custom tools on the stream, native tools on the workers.

::

    runtime = await RuntimeTools.load(redis_url, published_tool_ids=["pt-order-status"],
                                      native_names=["updateSentiment"])
    agent = Agent("Support", tools=[*runtime, my_python_tool], model="gemini-2.5-flash")

* :class:`RuntimeTool`: a published custom tool with ``enabledForAI``. Each call is
  an ``executeTool`` command on ``stream:tool-commands``; its ``ok`` result is the
  value the model reads, its error becomes the model's error result.
* :class:`NativeToolProxy`: a ``@tool`` function a worker serves
  (``chatflow worker --tools module``). Each call goes to
  ``stream:native-tool-calls:{nativeName}`` and its answer comes back on
  ``stream:native-tool-results`` (docs/agents.md).

Both satisfy ``AgentTool``. A call that fails, times out or cannot reach Redis
raises ``ToolExecutionError``, which the Runner hands the model as an error result.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import msgspec
from redis.exceptions import RedisError

from chatflow.schemas.keys import PublicKeys
from chatflow.schemas.native import NativeCall, NativeResult
from chatflow.schemas.wire import ExecuteToolCommand

from .core.contracts import AgentTool
from .errors import ChatflowAgentError, ResultTimeout, ToolExecutionError, ToolSchemaError
from .runtime_client import ProducerClient, execute, last_id, make_client, wait_for
from .runtime_specs import RuntimeToolSpec, agent_cache_spec, custom_tool_spec, native_spec
from .schema.declarations import ProviderDeclarations
from .tools import Tool
from .tools.execution import run_sync

_native_result = msgspec.json.Decoder(NativeResult)
_encode = msgspec.json.Encoder()


class RuntimeToolsError(ChatflowAgentError):
    """Raised when a runtime tool cannot be loaded: missing, unpublished or not served."""


class RuntimeConnection:
    """Where the runtime is: a Redis URL, the key prefix, and how long a call may take.

    Each call or load opens its own client and closes it when done: a sync ``Runner.run``
    runs in an event loop of its own that ends with the run, and a client cached for that
    loop would keep its connection open for the life of the process, one more per run.
    """

    def __init__(self, url: str, *, prefix: str = "", cluster: bool = False,
                 timeout_s: float = 60.0, contact_id: str = "agent",
                 variables: Mapping[str, Any] | None = None) -> None:
        self.url = url
        self.keys = PublicKeys(prefix)
        self.cluster = cluster
        self.timeout_s = timeout_s
        self.contact_id = contact_id
        self.variables = dict(variables or {})

    @contextlib.asynccontextmanager
    async def connected(self) -> AsyncIterator[ProducerClient]:
        """A client for one operation, closed (with its connections) at the end."""
        client = make_client(self.url, cluster=self.cluster)
        try:
            yield client
        finally:
            await client.aclose()

    async def aclose(self) -> None:
        """Nothing stays open between calls; kept so callers may close what they opened."""

    async def _get_json(self, key: str) -> Any:
        async with self.connected() as client:
            raw = await client.get(key)
        return None if raw is None else json.loads(raw)


class RuntimeTool:
    """A published custom tool, called through ``stream:tool-commands``."""

    def __init__(self, spec: RuntimeToolSpec, connection: RuntimeConnection, *,
                 published_tool_id: str, tool_id: str) -> None:
        self.spec = spec
        self.name = spec.name
        self.description = spec.description
        self.connection = connection
        self.published_tool_id = published_tool_id
        self.tool_id = tool_id

    def to_gemini_declaration(self) -> dict[str, Any]:
        return self.spec.to_gemini_declaration()

    def to_openai_parameters(self, *, strict: bool = False) -> dict[str, Any]:
        return self.spec.to_openai_parameters(strict=strict)

    def to_openai_tool(self, *, strict: bool = False) -> dict[str, Any]:
        return self.spec.to_openai_tool(strict=strict)

    def to_anthropic_tool(self) -> dict[str, Any]:
        return self.spec.to_anthropic_tool()

    def __repr__(self) -> str:
        return f"RuntimeTool(name={self.name!r}, published_tool_id={self.published_tool_id!r})"

    def bind_model_arguments(self, arguments: Mapping[str, Any], *, gemini: bool) -> dict[str, Any]:
        """Check the arguments against the inputs; a null for an optional input is left out."""
        self.spec.bind(arguments)
        return {k: v for k, v in arguments.items() if v is not None}

    def command(self, arguments: Mapping[str, Any], *, command_id: str | None = None
                ) -> ExecuteToolCommand:
        """The executeTool command of one call.

        Arguments travel as context variables, not as ``inputVariables``: a model's
        text is data, never a template to render against the contact's variables.
        """
        conn = self.connection
        data = {
            "commandId": command_id or f"agent-{uuid.uuid4().hex}",
            "action": {"id": f"agent-call-{self.name}", "type": "executeTool",
                       "toolId": self.tool_id, "publishedToolId": self.published_tool_id},
            "context": {"contactId": conn.contact_id,
                        "variables": {**conn.variables, **self.spec.bind(arguments)}},
            **trace_context(),  # the runtime's spans join the caller's trace
        }
        return msgspec.convert(data, ExecuteToolCommand)

    async def execute_async(self, **kwargs: Any) -> Any:
        conn = self.connection
        command = self.command(kwargs)
        try:
            async with conn.connected() as client:
                result = await execute(client, conn.keys, command, timeout_s=conn.timeout_s)
        # ``from None``: the Runner shows the model a failure's cause, and ours says more.
        except ResultTimeout:
            raise ToolExecutionError(
                f"tool {self.name!r}: no result from the runtime within {conn.timeout_s}s",
                tool_name=self.name,
            ) from None
        except RedisError as exc:
            raise ToolExecutionError(f"tool {self.name!r}: runtime unreachable: {exc}",
                                     tool_name=self.name) from None
        if result.ok:
            return result.result
        message = (result.error.message if result.error else None) or result.errorMessage
        raise ToolExecutionError(message or f"tool {self.name!r} failed", tool_name=self.name)

    def execute(self, **kwargs: Any) -> Any:
        return run_sync(self.execute_async(**kwargs))


def trace_context() -> dict[str, str]:
    """The W3C ``traceparent`` (and ``tracestate``) of the caller's current OpenTelemetry span
    (``OpenTelemetryHooks`` makes each tool call's span current), so a custom tool's command
    and a native tool's call join the agent's trace; empty without OpenTelemetry or a span."""
    try:
        from opentelemetry import propagate
    except ImportError:  # the otel extra is not installed: nothing to carry
        return {}
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return {k: v for k, v in carrier.items() if k in ("traceparent", "tracestate")}


class NativeToolProxy(ProviderDeclarations):
    """A native tool that runs on the workers; its spec comes from ``native-tool:{name}``."""

    def __init__(self, spec: Mapping[str, Any], connection: RuntimeConnection) -> None:
        self.spec = dict(spec)
        self.name = str(spec["name"])
        self.description = str(spec.get("description") or "")
        self.connection = connection

    def __repr__(self) -> str:
        return f"NativeToolProxy(name={self.name!r})"

    @classmethod
    def from_tool(cls, item: Tool[Any, Any], connection: RuntimeConnection) -> NativeToolProxy:
        """A proxy for a tool this process has too (the spec comes from the code)."""
        return cls(native_spec(item), connection)

    def to_gemini_declaration(self) -> dict[str, Any]:
        declaration: dict[str, Any] = json.loads(json.dumps(self.spec["gemini"]))
        return declaration  # a copy: callers may edit what they get

    def to_openai_parameters(self, *, strict: bool = False) -> dict[str, Any]:
        schema = self.spec["strictParameters"] if strict else self.spec["parameters"]
        if schema is None:
            raise ToolSchemaError(f"native tool {self.name!r} cannot use OpenAI strict mode",
                                  function=self.name)
        copied: dict[str, Any] = json.loads(json.dumps(schema))
        return copied

    def bind_model_arguments(self, arguments: Mapping[str, Any], *, gemini: bool) -> dict[str, Any]:
        # The worker binds them against the function's signature (handlers/dataplane/native.py).
        return dict(arguments)

    async def execute_async(self, **kwargs: Any) -> Any:
        conn = self.connection
        keys = conn.keys
        call = NativeCall(callId=f"native-{uuid.uuid4().hex}", tool=self.name, arguments=kwargs,
                          replyTo=keys.native_results,
                          deadlineMs=int((time.time() + conn.timeout_s) * 1000),
                          **trace_context())
        try:
            async with conn.connected() as client:
                after = await last_id(client, keys.native_results)
                await client.xadd(keys.native_calls(self.name), {"data": _encode.encode(call)})
                answer: NativeResult | None = await wait_for(
                    client, keys.native_results, after, conn.timeout_s, _native_result,
                    lambda r: r.callId == call.callId)
        except RedisError as exc:
            raise ToolExecutionError(f"tool {self.name!r}: runtime unreachable: {exc}",
                                     tool_name=self.name) from None
        if answer is None:
            raise ToolExecutionError(
                f"tool {self.name!r}: no worker answered within {conn.timeout_s}s "
                f"(is one running with --tools?)", tool_name=self.name)
        if answer.ok:
            return answer.result
        raise ToolExecutionError(answer.error or f"tool {self.name!r} failed", tool_name=self.name)

    def execute(self, **kwargs: Any) -> Any:
        return run_sync(self.execute_async(**kwargs))


class RuntimeTools(Sequence[AgentTool]):
    """The runtime tools an agent may call, loaded from Redis; a sequence of AgentTools."""

    def __init__(self, tools: Iterable[AgentTool], connection: RuntimeConnection) -> None:
        self.tools: tuple[AgentTool, ...] = tuple(tools)
        self.connection = connection

    @overload
    def __getitem__(self, index: int) -> AgentTool: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[AgentTool]: ...

    def __getitem__(self, index: int | slice) -> AgentTool | Sequence[AgentTool]:
        return self.tools[index]

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[AgentTool]:
        return iter(self.tools)

    def __repr__(self) -> str:
        return f"RuntimeTools({[t.name for t in self.tools]!r})"

    @classmethod
    async def load(cls, connection: RuntimeConnection | str, *,
                   published_tool_ids: Iterable[str] = (), native_names: Iterable[str] = (),
                   agent_id: str | None = None, prefix: str = "",
                   timeout_s: float = 60.0) -> RuntimeTools:
        """Load tools by ``publishedToolId``, by ``nativeName``, and/or an agent's cache.

        ``agent_id`` reads ``ai-agent:{agentId}`` (the registry's projection): its
        custom tools with ``enabledForAI`` and its native tools. Anything named that
        does not exist, is not exposed to AI or has no worker serving it raises
        RuntimeToolsError; a slug no provider accepts raises ToolSchemaError.
        """
        conn = (RuntimeConnection(connection, prefix=prefix, timeout_s=timeout_s)
                if isinstance(connection, str) else connection)
        tools: list[AgentTool] = []
        for pt in published_tool_ids:
            tools.append(await _load_published(conn, pt))
        natives = list(native_names)
        if agent_id is not None:
            cache = await conn._get_json(conn.keys.ai_agent(agent_id))
            if cache is None:
                raise RuntimeToolsError(f"no AI agent {agent_id!r} in the runtime "
                                        f"(key {conn.keys.ai_agent(agent_id)!r})")
            for entry in cache.get("tools") or []:
                if entry.get("kind") == "native":
                    natives.append(str(entry.get("nativeName")))
                elif entry.get("enabledForAI") and entry.get("publishedToolId"):
                    tools.append(RuntimeTool(agent_cache_spec(entry), conn,
                                             published_tool_id=entry["publishedToolId"],
                                             tool_id=str(entry.get("toolId") or "")))
        for name in natives:
            spec = await conn._get_json(conn.keys.native_tool(name))
            if spec is None:
                raise RuntimeToolsError(
                    f"no worker serves native tool {name!r}: start one with "
                    f"`chatflow worker --tools <module>`")
            tools.append(NativeToolProxy(spec, conn))
        return cls(tools, conn)

    @classmethod
    def load_sync(cls, connection: RuntimeConnection | str, **kwargs: Any) -> RuntimeTools:
        """``load``, blocking; for code that has no event loop."""
        return run_sync(cls.load(connection, **kwargs))

    async def aclose(self) -> None:
        await self.connection.aclose()


async def _load_published(conn: RuntimeConnection, published_tool_id: str) -> RuntimeTool:
    record = await conn._get_json(conn.keys.tool(published_tool_id))
    if record is None:
        raise RuntimeToolsError(f"tool {published_tool_id!r} is not published "
                                f"(key {conn.keys.tool(published_tool_id)!r} is missing)")
    tool_id = str(record.get("toolId") or "")
    # The tool's own description lives in the registry's view, not in the published record.
    view_raw = None
    if tool_id:
        async with conn.connected() as client:
            view_raw = await client.hget(conn.keys.registry_view("tools"), tool_id)
    view = json.loads(view_raw) if view_raw else {}
    spec = custom_tool_spec(record, view.get("description"))
    return RuntimeTool(spec, conn, published_tool_id=published_tool_id, tool_id=tool_id)


__all__ = ["NativeToolProxy", "RuntimeConnection", "RuntimeTool", "RuntimeTools",
           "RuntimeToolsError"]
