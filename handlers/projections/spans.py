"""The spans of one finished execution, built from its tree's event log.

Pure: an execution event (``stream:tool-executions``) and the entries of its tree's log in,
OpenTelemetry SDK spans (``ReadableSpan``) out, with the ids ``handlers.operations.tracing``
derives. Only what a commit wrote is read, so only committed block visits become spans, and
building them again (a redelivered event, a projection rebuilt) gives the same spans.

* ``chatflow.execute <toolId>``: one per execution, from its ``started`` entry to its
  ``finished`` (or the tree's ``aborted``) entry; a child's parent is the callTool visit that
  spawned it, the root's the producer's span (a command's ``traceparent``).
* ``chatflow.block <blockType> <blockId>``: one per ``block`` entry, under its execution. A
  callTool visit that spawned a child runs from its ``spawned`` entry to the block entry the
  child's end wrote. httpCall, callEndpoint and fetchMedia spans are HTTP client spans
  (semantic conventions: method, masked URL, server, status); callAI's are GenAI model-call
  spans (``gen_ai.*``, chatflow_agent.otel's attributes).

Secrets never reach a span: no header is recorded, URLs and messages are masked as the run
history masks them (``chatflow.runtime.masking``, with the workspace's stored secret values),
and a URL's user and password are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from chatflow.runtime.masking import mask_text
from chatflow.runtime.state import LogEntry
from chatflow.schemas.wire import ToolExecutionStreamEvent
from chatflow_agent.otel import model_call_attributes

from ..operations.tracing import (
    Tracing,
    TreeTrace,
    call_span_id,
    execution_span_id,
    visit_span_id,
)

SCOPE = InstrumentationScope("chatflow")
HTTP_BLOCKS = frozenset({"httpCall", "callEndpoint", "fetchMedia"})
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_MS = 1_000_000  # ns per ms
_STATUS_TEXT = 200  # characters of an error message kept as a span's status description


def masked_url(url: str, secrets: Sequence[str] = ()) -> str:
    """``url`` as a span may hold it (``url.full``): masked as the history masks it
    (secret-named query parameters such as ``sig``, stored secret values), and without its
    user or password at all."""
    text = mask_text(url, secrets)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if "@" not in parts.netloc:
        return text
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))


def _http_attributes(detail: dict[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    method, url, status = detail.get("method"), detail.get("url"), detail.get("status")
    if isinstance(method, str):
        out["http.request.method"] = method.upper()[:16]
    if isinstance(url, str) and url:
        out["url.full"] = masked_url(url, secrets)
        try:
            parts = urlsplit(url)
            if parts.hostname:
                out["server.address"] = parts.hostname
                out["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
            if parts.scheme:
                out["url.scheme"] = parts.scheme
        except ValueError:
            pass
    if isinstance(status, int):
        out["http.response.status_code"] = status
    return out


def _ai_attributes(detail: dict[str, Any]) -> dict[str, Any]:
    found = detail.get("usage")
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    model = detail.get("model")
    tokens_in, tokens_out = usage.get("inputTokens"), usage.get("outputTokens")
    response_model = usage.get("model")
    return model_call_attributes(
        "chat", "openai", model if isinstance(model, str) else "",
        input_tokens=tokens_in if isinstance(tokens_in, int) else None,
        output_tokens=tokens_out if isinstance(tokens_out, int) else None,
        response_model=response_model if isinstance(response_model, str) else None)


def retry_events(detail: dict[str, Any]) -> list[Event]:
    """The hook for retried requests: a block whose detail lists its ``attempts`` (each a
    mapping with ``at`` ms and any of ``status``, ``error``, ``durationMs``) gets one span
    event per attempt, ``chatflow.attempt``, with the HTTP conventions' resend count."""
    attempts = detail.get("attempts")
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
        events.append(Event("chatflow.attempt", attributes,
                            timestamp=at * _MS if isinstance(at, int) else None))
    return events


def _status(entry: LogEntry | None, secrets: Sequence[str], ok: bool = True,
            code: str | None = None) -> Status:
    error = entry.error if entry is not None else None
    if error is None and ok:
        return Status(StatusCode.UNSET)
    if error is None:
        return Status(StatusCode.ERROR, code or "")
    message = mask_text(error.message, secrets)[:_STATUS_TEXT]
    return Status(StatusCode.ERROR, f"{error.code}: {message}")


def _ms(iso: str, fallback: int) -> int:
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return fallback


class SpanBuilder:
    """Builds spans for one tracing projection (its resource, its tracing settings)."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing

    def tree_of(self, root_id: str, log: Sequence[LogEntry]) -> TreeTrace:
        started = next((e for e in log if e.type == "started" and e.execId == root_id), None)
        detail = (started.detail or {}) if started is not None else {}
        header, state = detail.get("traceparent"), detail.get("tracestate")
        return self.tracing.tree(root_id, header if isinstance(header, str) else "",
                                 state if isinstance(state, str) else "")

    def spans(self, event: ToolExecutionStreamEvent, log: Sequence[LogEntry],
              secrets: Sequence[str] = ()) -> list[ReadableSpan]:
        """The execution span of ``event`` and its block spans; none when the tree is not
        sampled. ``log``: the entries of the event's whole tree, in order; ``secrets``: the
        workspace's stored secret values, masked wherever they appear."""
        exec_id = event.executionId
        if not exec_id:
            return []
        root_id = event.rootExecutionId or exec_id.split(".", 1)[0]
        tree = self.tree_of(root_id, log)
        if not tree.sampled:
            return []
        mine = [e for e in log if e.execId == exec_id]
        started = next((e for e in mine if e.type == "started"), None)
        end = next((e for e in reversed(mine) if e.type in ("finished", "aborted")), None)
        # An ancestor of an aborted leaf has no end of its own: the tree's abort ends it.
        end = end or next((e for e in reversed(log) if e.type == "aborted"), None)
        end_ms = end.at if end is not None else _ms(event.occurredAt, 0)
        start_ms = started.at if started is not None else end_ms - max(0, event.durationMs)
        base = {"chatflow.execution_id": exec_id, "chatflow.command_id": event.commandId,
                "chatflow.tool_id": event.toolId or event.publishedToolId,
                "chatflow.published_tool_id": event.publishedToolId}
        own = SpanContext(tree.trace_id, execution_span_id(exec_id), False, _SAMPLED)
        parent = (tree.parent_context() if "." not in exec_id
                  else SpanContext(tree.trace_id, call_span_id(exec_id), False, _SAMPLED))
        attributes: dict[str, Any] = {**base, "chatflow.root_execution_id": root_id,
                                      "chatflow.depth": event.depth}
        if event.errorCode:
            attributes["chatflow.error.code"] = attributes["error.type"] = event.errorCode
        if self.tracing.contact:
            contact = _contact(log, root_id)
            if contact:
                attributes["chatflow.contact_id"] = contact
        out = [ReadableSpan(
            f"chatflow.execute {event.toolId or event.publishedToolId}", own, parent,
            self.tracing.resource, attributes,
            # The root processes a command taken from a stream; a child runs inside its parent.
            kind=SpanKind.CONSUMER if "." not in exec_id else SpanKind.INTERNAL,
            status=_status(end, secrets, event.success, event.errorCode),
            start_time=start_ms * _MS, end_time=max(start_ms, end_ms) * _MS,
            instrumentation_scope=SCOPE)]
        out += self._visits(tree, own, mine, base, end, end_ms, secrets)
        return out

    def _visits(self, tree: TreeTrace, parent: SpanContext, mine: list[LogEntry],
                base: dict[str, Any], end: LogEntry | None, end_ms: int,
                secrets: Sequence[str]) -> list[ReadableSpan]:
        exec_id = base["chatflow.execution_id"]
        # A block span carries its execution's id; the tool and command ids are on the
        # execution's span, its parent (each attribute is encoded per span, for every span).
        base = {"chatflow.execution_id": exec_id}
        out: list[ReadableSpan] = []
        ordinal = 0
        spawned: LogEntry | None = None  # a callTool visit waiting for its child
        for e in mine:
            if e.type == "spawned":
                spawned = e
                continue
            if e.type != "block":
                continue
            if (spawned is not None and spawned.child and e.blockType == "callTool"
                    and e.blockId == spawned.blockId):
                span_id, start = call_span_id(spawned.child), spawned.at
                child = spawned.child
            else:
                span_id, start, child = visit_span_id(exec_id, ordinal), e.at - (e.durationMs or 0), None
            spawned = None
            ordinal += 1
            out.append(self._block(tree, parent, base, e, span_id, start, e.at, child, secrets))
        if spawned is not None and spawned.child:  # the tree ended while the child ran
            out.append(self._block(tree, parent, base, spawned, call_span_id(spawned.child),
                                   spawned.at, end_ms, spawned.child, secrets, end))
        return out

    def _block(self, tree: TreeTrace, parent: SpanContext, base: dict[str, Any], e: LogEntry,
               span_id: int, start_ms: int, end_ms: int, child: str | None,
               secrets: Sequence[str], ended_by: LogEntry | None = None) -> ReadableSpan:
        block_type = e.blockType or ("callTool" if e.type == "spawned" else "")
        detail = e.detail or {}
        attributes: dict[str, Any] = {**base, "chatflow.block_id": e.blockId or "",
                                      "chatflow.block_type": block_type}
        if child:
            attributes["chatflow.child_execution_id"] = child
        kind = SpanKind.INTERNAL
        if block_type in HTTP_BLOCKS:
            kind = SpanKind.CLIENT
            attributes.update(_http_attributes(detail, secrets))
        elif block_type == "callAI":
            kind = SpanKind.CLIENT
            attributes.update(_http_attributes(detail, secrets))
            attributes.update(_ai_attributes(detail))
        failed = ended_by if ended_by is not None else e
        if failed.error is not None:
            attributes["chatflow.error.code"] = attributes["error.type"] = failed.error.code
        elif isinstance(attributes.get("http.response.status_code"), int) \
                and attributes["http.response.status_code"] >= 400:
            attributes["error.type"] = str(attributes["http.response.status_code"])
        return ReadableSpan(
            f"chatflow.block {block_type} {e.blockId or ''}".rstrip(),
            SpanContext(tree.trace_id, span_id, False, _SAMPLED), parent, self.tracing.resource,
            attributes, events=retry_events(detail), kind=kind,
            status=_status(failed, secrets, failed.error is None and ended_by is None),
            start_time=start_ms * _MS, end_time=max(start_ms, end_ms) * _MS,
            instrumentation_scope=SCOPE)


def _contact(log: Sequence[LogEntry], root_id: str) -> str | None:
    started = next((e for e in log if e.type == "started" and e.execId == root_id), None)
    context = ((started.detail or {}).get("context") or {}) if started is not None else {}
    contact = context.get("contact") if isinstance(context, dict) else None
    value = contact.get("id") if isinstance(contact, dict) else None
    return str(value) if value not in (None, "") else None


__all__ = ["HTTP_BLOCKS", "SCOPE", "SpanBuilder", "masked_url", "retry_events"]
