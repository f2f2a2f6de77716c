"""Native tools on the workers: ``@tool`` functions that agents call through Redis.

``chatflow worker --tools my.module`` imports the module and serves every
``chatflow_agent.Tool`` defined at its top level (or listed in its ``TOOLS``).
The tool's name is its ``nativeName``. For each one the worker

* writes the function spec to ``native-tool:{name}`` (the client's
  ``NativeToolProxy`` reads it, so the agent's process needs no copy of the code);
* reads ``stream:native-tool-calls:{name}`` in the group ``chatflow-native-tools``:
  only workers that loaded the tool take its calls;
* answers each call on its ``replyTo`` stream (default ``stream:native-tool-results``).

Calls are at most once: an entry is acked and deleted before the tool runs, so a
worker that dies mid-call leaves the caller to its timeout rather than running a
side effect twice. A raising tool, bad arguments or an expired call become an
error answer; nothing a tool does can stop the worker.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec
import structlog
from pydantic_core import to_jsonable_python

from chatflow.runtime.errors import ConfigurationError
from chatflow.schemas.native import NativeCall, NativeResult
from chatflow_agent.errors import ToolArgumentsError
from chatflow_agent.runtime_specs import native_spec
from chatflow_agent.tools import Tool

from ..keys import NATIVE_GROUP, Keys
from ..redis_client import Client, Entry, ensure_group
from ..settings import reply_matcher

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ..operations.tracing import LiveSpans, Tracing

log = structlog.get_logger("chatflow.native")
# Where a call's replyTo may point (under the key prefix); anything else gets the default.
NATIVE_REPLY_STREAMS = "stream:native-tool-results,stream:native-tool-results:*"


_decode_call = msgspec.json.Decoder(NativeCall)
_encode = msgspec.json.Encoder()


def load_native_tools(modules: Iterable[str]) -> dict[str, Tool[Any, Any]]:
    """Import ``modules`` and collect their tools by name (``TOOLS`` if a module defines it)."""
    tools: dict[str, Tool[Any, Any]] = {}
    for path in modules:
        try:
            module = importlib.import_module(path)
        except ImportError as exc:
            raise ConfigurationError(f"--tools {path}: cannot import it: {exc}") from exc
        listed = getattr(module, "TOOLS", None)
        found = list(listed) if listed is not None else [
            value for value in vars(module).values() if isinstance(value, Tool)
        ]
        if not found:
            raise ConfigurationError(f"--tools {path}: the module defines no chatflow_agent tools")
        for item in found:
            if not isinstance(item, Tool):
                raise ConfigurationError(f"--tools {path}: TOOLS holds {item!r}, which is not a Tool")
            other = tools.get(item.name)
            if other is not None and other is not item:
                raise ConfigurationError(f"--tools: two native tools are named {item.name!r}")
            tools[item.name] = item
    return tools


def _failure_text(exc: Exception) -> str:
    # What the model reads, as the Runner words a local tool's failure.
    cause = exc.__cause__
    if isinstance(exc, ToolArgumentsError) or not isinstance(cause, BaseException):
        return str(exc) or type(exc).__name__
    return str(cause) or type(cause).__name__


class NativeToolServer:
    """The worker's side of native tool calls."""

    def __init__(self, client: Client, keys: Keys, tools: Mapping[str, Tool[Any, Any]],
                 results_maxlen: int = 0, tracing: Tracing | None = None) -> None:
        self.client = client
        self.keys = keys
        self.tools = dict(tools)
        self.results_maxlen = results_maxlen
        self._reply_allowed = reply_matcher(keys.prefix, NATIVE_REPLY_STREAMS)
        # Tracing on: each call is a span, under the caller's traceparent when it sent one.
        self.tracing = tracing
        self.spans: LiveSpans | None = None
        if tracing is not None and self.tools:
            from ..operations.tracing import LiveSpans

            self.spans = LiveSpans(tracing.endpoint)

    async def start(self) -> None:
        """Create each tool's group (at id 0) and publish its spec."""
        for name, item in self.tools.items():
            await ensure_group(self.client, self.keys.native_calls(name), NATIVE_GROUP)
            await self.client.set(self.keys.native_tool(name), _encode.encode(native_spec(item)))
        if self.tools:
            log.info("native tools served", tools=sorted(self.tools))

    async def process(self, name: str, entries: list[Entry]) -> None:
        stream = self.keys.native_calls(name)
        ids = [entry_id for entry_id, _fields in entries]
        await self.client.xack(stream, NATIVE_GROUP, *ids)  # at most once: see the module doc
        await self.client.xdel(stream, *ids)
        await asyncio.gather(*(self._answer(name, fields) for _id, fields in entries))

    async def _answer(self, name: str, fields: dict[bytes, bytes]) -> None:
        try:
            call = _decode_call.decode(fields[b"data"])
        except (KeyError, msgspec.ValidationError, msgspec.DecodeError) as exc:
            log.warning("undecodable native tool call dropped", tool=name, error=str(exc))
            return
        started = time.time_ns()
        result = await self.run(call)
        if self.spans is not None:
            span = self._span(call, result, started, time.time_ns())
            if span is not None:
                self.spans.end(span)
        stream = call.replyTo or self.keys.native_results
        if not self._reply_allowed(stream):  # never an internal key (stream:registry...)
            log.warning("native tool call replyTo refused; answered on the default stream",
                        tool=name, replyTo=stream)
            stream = self.keys.native_results
        maxlen = self.results_maxlen or None
        await self.client.xadd(stream, {"data": _encode.encode(result)}, maxlen=maxlen,
                               approximate=True)

    def _span(self, call: NativeCall, result: NativeResult, started: int,
              ended: int) -> ReadableSpan | None:
        """``execute_tool <name>`` (the GenAI conventions' tool-call span, chatflow_agent.otel's
        attributes) under the caller's span; None when its trace is not sampled."""
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        from chatflow_agent.otel import tool_call_attributes

        from ..operations.traceids import native_span_id
        from ..operations.tracing import SCOPE

        assert self.tracing is not None
        tree = self.tracing.tree(f"native:{call.callId}", call.traceparent, call.tracestate)
        if not tree.sampled:
            return None
        own = SpanContext(tree.trace_id, native_span_id(call.callId), False,
                          TraceFlags(TraceFlags.SAMPLED))
        attributes = {**tool_call_attributes(call.tool, call.callId),
                      "chatflow.native_call_id": call.callId}
        status = Status(StatusCode.UNSET)
        if not result.ok:
            attributes["error.type"] = "tool_error"
            status = Status(StatusCode.ERROR, "native tool failed")
        return ReadableSpan(f"execute_tool {call.tool}", own, tree.parent_context(),
                            self.tracing.resource, attributes, kind=SpanKind.CONSUMER,
                            status=status, start_time=started, end_time=ended,
                            instrumentation_scope=SCOPE)

    def shutdown(self) -> None:
        if self.spans is not None:
            self.spans.shutdown()

    async def run(self, call: NativeCall) -> NativeResult:
        started = time.monotonic()

        def answer(ok: bool, result: Any = None, error: str | None = None) -> NativeResult:
            ms = int((time.monotonic() - started) * 1000)
            return NativeResult(call.callId, call.tool, ok, result, error, ms)

        item = self.tools.get(call.tool)
        if item is None:
            return answer(False, error=f"this worker does not serve native tool {call.tool!r}")
        if call.deadlineMs is not None and time.time() * 1000 > call.deadlineMs:
            return answer(False, error=f"native tool call {call.callId} expired before it ran")
        try:
            # The spec the model saw came from native_spec: undo Gemini's enum strings.
            kwargs = item.bind_model_arguments(call.arguments, gemini=True)
            value = await item.execute_async(**kwargs)
            return answer(True, to_jsonable_python(value, fallback=repr))
        except Exception as exc:  # a tool's failure is an answer, never the worker's
            log.info("native tool failed", tool=call.tool, error=str(exc))
            return answer(False, error=_failure_text(exc))
