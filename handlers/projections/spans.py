"""The spans of one finished execution, built from its tree's event log as OTLP protobuf.

Pure: an execution event (``stream:tool-executions``) and the outline of its tree's log
(``chatflow.runtime.state.outline_log``) in, OTLP ``Span`` messages out (opentelemetry-proto's
generated classes, appended to the request being filled: ``handlers/projections/otlp.py``),
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

Spans are built straight into protobuf, not through the SDK's ``ReadableSpan`` and its
encoder: that path cost ~70 µs a span (docs/scale.md "Tracing"). What spans share is
serialized once by the library and merged into each (``Span.MergeFromString``; two
serialized messages one after the other parse as their merge): an execution's trace, span id
and ``chatflow.execution_id`` into each of its spans, a block's name, kind, id and type into
each of its visits, a tool's name, kind and ids into each of its executions. Setting a field
of a protobuf message from Python costs several times a merge of the same field.

Secrets never reach a span: no header is recorded, URLs and messages are masked as the run
history masks them (``chatflow.runtime.masking``, with the workspace's stored secret values),
and a URL's user and password are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableSequence, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span, SpanFlags, Status

from chatflow.runtime.masking import mask_text
from chatflow.runtime.state import LogEntry, LogOutline, OutlineDetail, outline_of
from chatflow.schemas.wire import ToolExecutionStreamEvent
from chatflow_agent.otel import model_call_attributes

from ..operations.traceids import call_span_id, execution_span_id, visit_span_id

if TYPE_CHECKING:  # operations.tracing imports the SDK, which this module does not need
    from ..operations.tracing import Tracing, TreeTrace

HTTP_BLOCKS = frozenset({"httpCall", "callEndpoint", "fetchMedia"})
_MS = 1_000_000  # ns per ms
_STATUS_TEXT = 200  # characters of an error message kept as a span's status description
_INTERNAL, _CLIENT, _CONSUMER = (Span.SpanKind.SPAN_KIND_INTERNAL, Span.SpanKind.SPAN_KIND_CLIENT,
                                 Span.SpanKind.SPAN_KIND_CONSUMER)
_ERROR = Status.StatusCode.STATUS_CODE_ERROR
# As the SDK's encoder sets them: every span says whether its parent is remote.
_LOCAL_PARENT = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
_REMOTE_PARENT = _LOCAL_PARENT | SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
_SHAPES_REMEMBERED = 4096  # blocks and tools whose spans' shared part is kept
_NO_DETAIL = OutlineDetail()
Spans = MutableSequence[Span]  # a ScopeSpans' ``spans``: what the builder appends to


def put(attributes: MutableSequence[KeyValue], key: str, value: Any) -> None:
    """One attribute, typed as the SDK's encoder types it (None is left out, as the SDK drops
    it; a list of strings, numbers or booleans is an array)."""
    if value is None:
        return
    kind = type(value)
    if kind is str:
        attributes.add(key=key).value.string_value = value  # type: ignore[attr-defined]
    elif kind is bool:
        attributes.add(key=key).value.bool_value = value  # type: ignore[attr-defined]
    elif kind is int:
        attributes.add(key=key).value.int_value = value  # type: ignore[attr-defined]
    elif kind is float:
        attributes.add(key=key).value.double_value = value  # type: ignore[attr-defined]
    elif isinstance(value, list | tuple):
        values = attributes.add(key=key).value.array_value.values  # type: ignore[attr-defined]
        for item in value:
            values.append(_scalar(item))
    else:
        attributes.add(key=key).value.string_value = str(value)  # type: ignore[attr-defined]


def _scalar(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def put_all(attributes: MutableSequence[KeyValue], values: Mapping[str, Any]) -> None:
    for key, value in values.items():
        put(attributes, key, value)


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


def _http_attributes(detail: OutlineDetail, secrets: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    method, url, status = detail.method, detail.url, detail.status
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


def _fail(span: Span, entry: LogOutline | None, secrets: Sequence[str], code: str | None = None
          ) -> None:
    """An error status: the entry's error (code and masked message), else ``code``."""
    error = entry.error if entry is not None else None
    span.status.code = _ERROR
    if error is None:
        span.status.message = code or ""
    else:
        span.status.message = f"{error.code}: {mask_text(error.message, secrets)[:_STATUS_TEXT]}"


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
        self._shapes: dict[tuple[Any, ...], bytes] = {}  # serialized shared parts

    def tree_of(self, root_id: str, log: Sequence[LogOutline]) -> TreeTrace:
        started = next((e for e in log if e.type == "started" and e.execId == root_id), None)
        detail = started.detail if started is not None else None
        header = detail.traceparent if detail is not None else None
        state = detail.tracestate if detail is not None else None
        return self.tracing.tree(root_id, header if isinstance(header, str) else "",
                                 state if isinstance(state, str) else "")

    def spans(self, event: ToolExecutionStreamEvent, log: Sequence[LogEntry | LogOutline],
              secrets: Sequence[str] = ()) -> list[Span]:
        """The execution span of ``event`` and its block spans; none when the tree is not
        sampled. ``log``: the entries of the event's whole tree, in order; ``secrets``: the
        workspace's stored secret values, masked wherever they appear."""
        outline = [outline_of(e) if isinstance(e, LogEntry) else e for e in log]
        root_id = event.rootExecutionId or event.executionId.split(".", 1)[0]
        tree = self.tree_of(root_id, outline)
        out = ScopeSpans()
        if event.executionId and tree.sampled:
            self.add(out.spans, event, outline, tree, secrets)
        return list(out.spans)

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
        # What every span of this execution holds (its trace, its id), serialized once and
        # merged into each; a block's span is this execution's span's child.
        common = Span(trace_id=_id(tree.trace_id, 16), parent_span_id=own, flags=_LOCAL_PARENT)
        put(common.attributes, "chatflow.execution_id", exec_id)
        mark = common.SerializeToString()
        is_root = "." not in exec_id
        tool = event.toolId or event.publishedToolId
        span = out.add(span_id=own, start_time_unix_nano=start_ms * _MS,  # type: ignore[attr-defined]
                       end_time_unix_nano=max(start_ms, end_ms) * _MS)
        span.MergeFromString(mark + self._execution_shape(tool, event.publishedToolId,
                                                          event.depth, is_root))
        if is_root and tree.parent_id:  # the producer's span, in its own process
            span.parent_span_id, span.flags = _id(tree.parent_id, 8), _REMOTE_PARENT
        else:
            span.parent_span_id = _id(call_span_id(exec_id), 8) if not is_root else b""
        attributes = span.attributes
        put(attributes, "chatflow.command_id", event.commandId)
        put(attributes, "chatflow.root_execution_id", root_id)
        if event.errorCode:
            put(attributes, "chatflow.error.code", event.errorCode)
            put(attributes, "error.type", event.errorCode)
        if self.tracing.contact:
            put(attributes, "chatflow.contact_id", _contact(log, root_id))
        if (end is not None and end.error is not None) or not event.success:
            _fail(span, end, secrets, event.errorCode)
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
            self._block(out, mark, e, span_id, start, e.at, child, secrets)
            count += 1
        if spawned is not None and spawned.child:  # the tree ended while the child ran
            self._block(out, mark, spawned, call_span_id(spawned.child), spawned.at, end_ms,
                        spawned.child, secrets, end)
            count += 1
        return count

    def _block(self, out: Spans, mark: bytes, e: LogOutline, span_id: int, start_ms: int,
               end_ms: int, child: str | None, secrets: Sequence[str],
               ended_by: LogOutline | None = None) -> None:
        block_type = e.blockType or ("callTool" if e.type == "spawned" else "")
        detail = e.detail or _NO_DETAIL
        span = out.add(span_id=_id(span_id, 8), start_time_unix_nano=start_ms * _MS,  # type: ignore[attr-defined]
                       end_time_unix_nano=max(start_ms, end_ms) * _MS)
        # Two serialized spans one after the other read as one span holding both (protobuf's
        # merge): the execution's part and the block's.
        span.MergeFromString(mark + self._block_shape(block_type, e.blockId or ""))
        attributes = span.attributes
        if child:
            put(attributes, "chatflow.child_execution_id", child)
        status: Any = None
        if block_type in HTTP_BLOCKS or block_type == "callAI":
            extra = _http_attributes(detail, secrets)
            status = extra.get("http.response.status_code")
            if block_type == "callAI":
                extra.update(_ai_attributes(detail))
            put_all(attributes, extra)
        failed = ended_by if ended_by is not None else e
        if failed.error is not None:
            put(attributes, "chatflow.error.code", failed.error.code)
            put(attributes, "error.type", failed.error.code)
        elif isinstance(status, int) and status >= 400:
            put(attributes, "error.type", str(status))
        if failed.error is not None or ended_by is not None:
            _fail(span, failed, secrets)
        if detail.attempts is not None:
            _events(span, retry_events(detail), start_ms * _MS)

    def _block_shape(self, block_type: str, block_id: str) -> bytes:
        """What every span of one block shares (name, kind, block id and type), serialized
        once."""
        key = ("block", block_type, block_id)
        found = self._shapes.get(key)
        if found is None:
            shape = Span(name=f"chatflow.block {block_type} {block_id}".rstrip(),
                         kind=_CLIENT if block_type in HTTP_BLOCKS or block_type == "callAI"
                         else _INTERNAL)
            put(shape.attributes, "chatflow.block_id", block_id)
            put(shape.attributes, "chatflow.block_type", block_type)
            found = self._remember(key, shape)
        return found

    def _execution_shape(self, tool: str, published: str, depth: int, is_root: bool) -> bytes:
        """What every execution span of one tool at one depth shares, serialized once."""
        key = ("execute", tool, published, depth, is_root)
        found = self._shapes.get(key)
        if found is None:
            # The root processes a command taken from a stream; a child runs inside its parent.
            shape = Span(name=f"chatflow.execute {tool}", kind=_CONSUMER if is_root else _INTERNAL)
            put(shape.attributes, "chatflow.tool_id", tool)
            put(shape.attributes, "chatflow.published_tool_id", published)
            put(shape.attributes, "chatflow.depth", depth)
            found = self._remember(key, shape)
        return found

    def _remember(self, key: tuple[Any, ...], shape: Span) -> bytes:
        if len(self._shapes) >= _SHAPES_REMEMBERED:
            self._shapes.clear()
        found: bytes = shape.SerializeToString(deterministic=True)
        self._shapes[key] = found
        return found


def _events(span: Span, events: Iterable[RetryEvent], fallback_ns: int) -> None:
    for event in events:
        # An attempt without its time gets its block's start: a span built again is the
        # same span (the SDK stamped such an event with the time it was built).
        added = span.events.add(name=event.name, time_unix_nano=event.timestamp or fallback_ns)
        put_all(added.attributes, event.attributes)


def _contact(log: Sequence[LogOutline], root_id: str) -> str | None:
    started = next((e for e in log if e.type == "started" and e.execId == root_id), None)
    detail = started.detail if started is not None else None
    context = detail.context if detail is not None else None
    contact = context.get("contact") if isinstance(context, dict) else None
    value = contact.get("id") if isinstance(contact, dict) else None
    return str(value) if value not in (None, "") else None


__all__ = ["HTTP_BLOCKS", "RetryEvent", "SpanBuilder", "masked_url", "put", "put_all",
           "retry_events"]
