"""The spans of one finished execution, built from its tree's event log as OTLP protobuf.

Pure: an execution event (``stream:tool-executions``) and the outline of its tree's log
(``chatflow.runtime.state.outline_log``) in, OTLP ``Span`` messages out as protobuf bytes
(``handlers/projections/wire.py``, appended to the request being filled:
``handlers/projections/otlp.py``),
with the ids ``handlers.operations.tracing`` derives. Only what a commit wrote is read, so only
committed block visits become spans, and building them again (a redelivered event, a
projection rebuilt) gives the same spans, byte for byte.

* ``chatflow.execute <toolId>``: one per execution, from its ``started`` entry to its
  ``finished`` (or the tree's ``aborted``) entry; a child's parent is the callTool visit that
  spawned it, the root's the producer's span (a command's ``traceparent``).
* ``chatflow.block <blockType> <blockId>``: one per ``block`` entry, under its execution. A
  callTool visit that spawned a child runs from its ``spawned`` entry to the block entry the
  child's end wrote. httpCall, callEndpoint and fetchMedia spans are HTTP client spans
  (semantic conventions: method, masked URL, server, status); callAI's are GenAI model-call
  spans (``gen_ai.*``, chatflow_agent.otel's attributes).

Spans are written straight as protobuf bytes, not through the SDK's ``ReadableSpan`` and its
encoder (that path cost ~70 µs a span) nor opentelemetry-proto's generated classes (2.5 to
6 µs a span from Python): docs/scale.md "Tracing". What spans share is written once and
repeated as bytes: a block's name, kind and ids, a tool's, an execution's trace, parent and
id.

Secrets never reach a span: no header is recorded, URLs and messages are masked as the run
history masks them (``chatflow.runtime.masking``, with the workspace's stored secret values),
and a URL's user and password are dropped (``span_url``, beside the history's rules).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from chatflow.runtime.masking import mask_text, span_url
from chatflow.runtime.state import LogEntry, LogOutline, OutlineDetail, outline_of
from chatflow.schemas.wire import ToolExecutionStreamEvent
from chatflow_agent.otel import model_call_attributes

from ..operations.traceids import call_span_id, execution_span_id, visit_span_id
from . import wire

if TYPE_CHECKING:  # operations.tracing imports the SDK, which this module does not need
    from ..operations.tracing import Tracing, TreeTrace

HTTP_BLOCKS = frozenset({"httpCall", "callEndpoint", "fetchMedia"})
_MS = 1_000_000  # ns per ms
_STATUS_TEXT = 200  # characters of an error message kept as a span's status description
# As the SDK's encoder sets them (SpanFlags): every span says whether its parent is remote.
_LOCAL_PARENT = 0x100  # SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
_REMOTE_PARENT = _LOCAL_PARENT | 0x200  # SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
_SHAPES_REMEMBERED = 4096  # blocks and tools whose spans' shared part is kept (LRU)
_NO_DETAIL = OutlineDetail()
_EXECUTION_ID, _COMMAND_ID, _ROOT_ID, _CHILD_ID = (wire.key(f"chatflow.{name}") for name in (
    "execution_id", "command_id", "root_execution_id", "child_execution_id"))
Spans = list[bytes]  # a request's spans, each written by ``wire.span``


def _http_attributes(detail: OutlineDetail, secrets: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    method, url, status = detail.method, detail.url, detail.status
    if isinstance(method, str):
        out["http.request.method"] = method.upper()[:16]
    if isinstance(url, str) and url:
        out["url.full"] = span_url(url, secrets)
        try:
            parts = urlsplit(url)
            if parts.hostname:
                out["server.address"] = parts.hostname
                out["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
            if parts.scheme:
                out["url.scheme"] = parts.scheme
        except ValueError:
            pass
    if isinstance(status, int) and not isinstance(status, bool):
        out["http.response.status_code"] = status
    return out


def _ai_attributes(detail: OutlineDetail) -> dict[str, Any]:
    usage: dict[str, Any] = detail.usage if isinstance(detail.usage, dict) else {}
    model = detail.model
    tokens_in, tokens_out = usage.get("inputTokens"), usage.get("outputTokens")
    response_model = usage.get("model")
    return model_call_attributes(
        "chat", "openai", model if isinstance(model, str) else "",
        input_tokens=tokens_in if isinstance(tokens_in, int) else None,
        output_tokens=tokens_out if isinstance(tokens_out, int) else None,
        response_model=response_model if isinstance(response_model, str) else None)


class RetryEvent(NamedTuple):
    """One span event of a retried request (``chatflow.attempt``)."""

    name: str
    attributes: dict[str, Any]
    timestamp: int | None  # ns; None: the attempt's time was not recorded


def retry_events(detail: Mapping[str, Any] | OutlineDetail | None) -> list[RetryEvent]:
    """The hook for retried requests: a block whose detail lists its ``attempts`` (each a
    mapping with ``at`` ms and any of ``status``, ``error``, ``durationMs``) gets one span
    event per attempt, ``chatflow.attempt``, with the HTTP conventions' resend count."""
    attempts = (detail.get("attempts") if isinstance(detail, Mapping)
                else getattr(detail, "attempts", None))
    if not isinstance(attempts, list):
        return []
    events = []
    for n, attempt in enumerate(attempts):
        if not isinstance(attempt, dict):
            continue
        attributes: dict[str, Any] = {"http.request.resend_count": n}
        if isinstance(attempt.get("status"), int):
            attributes["http.response.status_code"] = attempt["status"]
        if isinstance(attempt.get("error"), str):
            attributes["error.type"] = attempt["error"][:64]
        if isinstance(attempt.get("durationMs"), int):
            attributes["chatflow.duration_ms"] = attempt["durationMs"]
        at = attempt.get("at")
        events.append(RetryEvent("chatflow.attempt", attributes,
                                 at * _MS if isinstance(at, int) else None))
    return events


def _fail(entry: LogOutline | None, secrets: Sequence[str], code: str | None = None) -> bytes:
    """An error status: the entry's error (code and masked message), else ``code``."""
    error = entry.error if entry is not None else None
    if error is None:
        return wire.status(wire.STATUS_ERROR, code or "")
    text = f"{error.code}: {mask_text(error.message, secrets)[:_STATUS_TEXT]}"
    return wire.status(wire.STATUS_ERROR, text)


def _ms(iso: str, fallback: int) -> int:
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return fallback


def _id(value: int, size: int) -> bytes:
    return value.to_bytes(size, "big")


class SpanBuilder:
    """Builds spans for one tracing projection (its tracing settings)."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing

    def tree_of(self, root_id: str, log: Sequence[LogOutline]) -> TreeTrace:
        started = next((e for e in log if e.type == "started" and e.execId == root_id), None)
        detail = started.detail if started is not None else None
        header = detail.traceparent if detail is not None else None
        state = detail.tracestate if detail is not None else None
        return self.tracing.tree(root_id, header if isinstance(header, str) else "",
                                 state if isinstance(state, str) else "")

    def spans(self, event: ToolExecutionStreamEvent, log: Sequence[LogEntry | LogOutline],
              secrets: Sequence[str] = ()) -> list[bytes]:
        """The execution span of ``event`` and its block spans, each a ``ScopeSpans``'
        ``spans`` field (``wire.span``); none when the tree is not sampled. ``log``: the
        entries of the event's whole tree, in order; ``secrets``: the workspace's stored
        secret values, masked wherever they appear."""
        outline = [outline_of(e) if isinstance(e, LogEntry) else e for e in log]
        root_id = event.rootExecutionId or event.executionId.split(".", 1)[0]
        tree = self.tree_of(root_id, outline)
        out: Spans = []
        if event.executionId and tree.sampled:
            self.add(out, event, outline, tree, secrets)
        return out

    def add(self, out: Spans, event: ToolExecutionStreamEvent, log: Sequence[LogOutline],
            tree: TreeTrace, secrets: Sequence[str] = ()) -> int:
        """Append the spans of ``event`` (its tree ``tree``, sampled) to ``out``; how many."""
        exec_id = event.executionId
        root_id = event.rootExecutionId or exec_id.split(".", 1)[0]
        mine = [e for e in log if e.execId == exec_id]
        started = next((e for e in mine if e.type == "started"), None)
        end = next((e for e in reversed(mine) if e.type in ("finished", "aborted")), None)
        # An ancestor of an aborted leaf has no end of its own: the tree's abort ends it.
        end = end or next((e for e in reversed(log) if e.type == "aborted"), None)
        end_ms = end.at if end is not None else _ms(event.occurredAt, 0)
        start_ms = started.at if started is not None else end_ms - max(0, event.durationMs)
        own = _id(execution_span_id(exec_id), 8)
        trace_id = _id(tree.trace_id, 16)
        is_root = "." not in exec_id
        if is_root and tree.parent_id:  # the producer's span, in its own process
            ids = wire.ids(trace_id, _id(tree.parent_id, 8), _REMOTE_PARENT)
        else:
            ids = wire.ids(trace_id, b"" if is_root else _id(call_span_id(exec_id), 8),
                           _LOCAL_PARENT)
        execution = wire.text(_EXECUTION_ID, exec_id)
        tool = event.toolId or event.publishedToolId
        parts = [ids, execution,
                 _execution_shape(tool, event.publishedToolId, event.depth, is_root),
                 wire.text(_COMMAND_ID, event.commandId), wire.text(_ROOT_ID, root_id)]
        if event.errorCode:
            parts += [wire.attribute("chatflow.error.code", event.errorCode),
                      wire.attribute("error.type", event.errorCode)]
        if self.tracing.contact:
            parts.append(wire.attribute("chatflow.contact_id", _contact(log, root_id)))
        if (end is not None and end.error is not None) or not event.success:
            parts.append(_fail(end, secrets, event.errorCode))
        out.append(wire.span(own, start_ms * _MS, max(start_ms, end_ms) * _MS, *parts))
        # What every block span of this execution holds (its trace, its parent: this
        # execution's span, and its execution id), written once.
        mark = wire.ids(trace_id, own, _LOCAL_PARENT) + execution
        return 1 + self._visits(out, mark, exec_id, mine, end, end_ms, secrets)

    def _visits(self, out: Spans, mark: bytes, exec_id: str, mine: list[LogOutline],
                end: LogOutline | None, end_ms: int, secrets: Sequence[str]) -> int:
        # A block span carries its execution's id; the tool and command ids are on the
        # execution's span, its parent (each attribute is encoded per span, for every span).
        count = ordinal = 0
        spawned: LogOutline | None = None  # a callTool visit waiting for its child
        for e in mine:
            if e.type == "spawned":
                spawned = e
                continue
            if e.type != "block":
                continue
            if (spawned is not None and spawned.child and e.blockType == "callTool"
                    and e.blockId == spawned.blockId):
                span_id, start, child = call_span_id(spawned.child), spawned.at, spawned.child
            else:
                span_id, start, child = (visit_span_id(exec_id, ordinal),
                                         e.at - (e.durationMs or 0), None)
            spawned = None
            ordinal += 1
            out.append(self._block(mark, e, span_id, start, e.at, child, secrets))
            count += 1
        if spawned is not None and spawned.child:  # the tree ended while the child ran
            out.append(self._block(mark, spawned, call_span_id(spawned.child), spawned.at,
                                   end_ms, spawned.child, secrets, end))
            count += 1
        return count

    def _block(self, mark: bytes, e: LogOutline, span_id: int, start_ms: int, end_ms: int,
               child: str | None, secrets: Sequence[str], ended_by: LogOutline | None = None
               ) -> bytes:
        block_type = e.blockType or ("callTool" if e.type == "spawned" else "")
        detail = e.detail or _NO_DETAIL
        parts = [mark, _block_shape(block_type, e.blockId or "")]
        if child:
            parts.append(wire.text(_CHILD_ID, child))
        status: Any = None
        if block_type in HTTP_BLOCKS or block_type == "callAI":
            extra = _http_attributes(detail, secrets)
            status = extra.get("http.response.status_code")
            if block_type == "callAI":
                extra.update(_ai_attributes(detail))
            parts.append(wire.attributes(extra))
        failed = ended_by if ended_by is not None else e
        if failed.error is not None:
            parts += [wire.attribute("chatflow.error.code", failed.error.code),
                      wire.attribute("error.type", failed.error.code)]
        elif isinstance(status, int) and status >= 400:
            parts.append(wire.attribute("error.type", str(status)))
        if failed.error is not None or ended_by is not None:
            parts.append(_fail(failed, secrets))
        if detail.attempts is not None:
            # An attempt without its time gets its block's start: a span built again is the
            # same span (the SDK stamped such an event with the time it was built).
            parts += [wire.event(event.name, event.timestamp or start_ms * _MS,
                                 event.attributes) for event in retry_events(detail)]
        return wire.span(_id(span_id, 8), start_ms * _MS, max(start_ms, end_ms) * _MS, *parts)


@functools.lru_cache(maxsize=_SHAPES_REMEMBERED)
def _block_shape(block_type: str, block_id: str) -> bytes:
    """What every span of one block shares (name, kind, block id and type), written once."""
    kind = (wire.KIND_CLIENT if block_type in HTTP_BLOCKS or block_type == "callAI"
            else wire.KIND_INTERNAL)
    return wire.shape(f"chatflow.block {block_type} {block_id}".rstrip(), kind,
                      {"chatflow.block_id": block_id, "chatflow.block_type": block_type})


@functools.lru_cache(maxsize=_SHAPES_REMEMBERED)
def _execution_shape(tool: str, published: str, depth: int, is_root: bool) -> bytes:
    """What every execution span of one tool at one depth shares, written once."""
    # The root processes a command taken from a stream; a child runs inside its parent.
    kind = wire.KIND_CONSUMER if is_root else wire.KIND_INTERNAL
    return wire.shape(f"chatflow.execute {tool}", kind,
                      {"chatflow.tool_id": tool, "chatflow.published_tool_id": published,
                       "chatflow.depth": depth})


def _contact(log: Sequence[LogOutline], root_id: str) -> str | None:
    started = next((e for e in log if e.type == "started" and e.execId == root_id), None)
    detail = started.detail if started is not None else None
    context = detail.context if detail is not None else None
    contact = context.get("contact") if isinstance(context, dict) else None
    value = contact.get("id") if isinstance(contact, dict) else None
    return str(value) if value not in (None, "") else None


__all__ = ["HTTP_BLOCKS", "RetryEvent", "SpanBuilder", "Spans", "retry_events"]
