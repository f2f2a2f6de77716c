"""Tracing: the trace context of a tree, its derived ids, and the OpenTelemetry SDK's parts.

Configured by OpenTelemetry's standard variables (``Settings.traces_endpoint``): off unless
an OTLP endpoint is set, and off means none of this is built (``Tracing.from_settings``
answers None and every caller skips its one ``if``). docs/operations.md "Tracing".

**Ids are derived, not drawn.** A tree's trace is the command's (its ``traceparent``) or one
derived from the root's execution id; an execution's span id is derived from its id, a
block visit's from its execution id and its ordinal (the state's ``hops`` when it runs, the
count of the execution's earlier block entries in the event log), and a callTool visit that
spawned a child from the child's id. So the worker that sends a block's request, the
projection that exports the block's span later, a redelivered step and a rebuilt projection
all name the same span, and a span exported twice is the same span at any collector.

**Sampling is parent-based** (``OTEL_TRACES_SAMPLER``, default ``parentbased_always_on``):
the decision is the SDK sampler's for the tree's root span, with the producer's context as
its parent, so every span of a tree and every request it sends carry the same decision. The
built-in samplers decide from the trace id and the parent alone, so every process agrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    TraceFlags,
    TraceState,
    get_current_span,
    set_span_in_context,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..settings import Settings
from .traceids import (
    call_span_id,
    execution_span_id,
    parsed_traceparent,
    root_trace_id,
    traceparent,
    visit_span_id,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

log = structlog.get_logger("chatflow.tracing")

_PROPAGATOR = TraceContextTextMapPropagator()
SCOPE = InstrumentationScope("chatflow")  # the instrumentation scope of the SDK spans made here
_TREES_REMEMBERED = 4096  # trees whose context a process keeps (a dict, then cleared)
_HEADER_MAX = 512  # a traceparent is 55 characters; W3C caps a tracestate at 512
_NO_PARENT = Context()  # a tree without a producer's span (read only: Contexts are immutable)


@dataclass(frozen=True, slots=True)
class TreeTrace:
    """One tree's trace: its id, the producer's span (0: none) and the sampling decision."""

    trace_id: int
    parent_id: int
    sampled: bool
    tracestate: str = ""
    parent_sampled: bool = False

    def parent_context(self) -> SpanContext | None:
        """The producer's span, as the root execution span's remote parent."""
        if not self.parent_id:
            return None
        flags = TraceFlags(TraceFlags.SAMPLED if self.parent_sampled else TraceFlags.DEFAULT)
        return SpanContext(self.trace_id, self.parent_id, is_remote=True, trace_flags=flags,
                           trace_state=_trace_state(self.tracestate))

    def headers(self, span_id: int) -> dict[str, str]:
        """The W3C headers a request sent under ``span_id`` carries."""
        out = {"traceparent": traceparent(self.trace_id, span_id, self.sampled)}
        if self.tracestate:
            out["tracestate"] = self.tracestate
        return out


def _trace_state(header: str) -> TraceState:
    return TraceState.from_header([header]) if header else TraceState()


SAMPLERS = ("always_on", "always_off", "traceidratio", "parentbased_always_on",
            "parentbased_always_off", "parentbased_traceidratio")


def sampler_of(name: str, arg: str) -> Sampler:
    """OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, as the specification defines them."""
    name = name.strip().lower() or "parentbased_always_on"
    try:
        ratio = float(arg) if arg.strip() else 1.0
    except ValueError:
        ratio = -1.0
    if "traceidratio" in name and not 0.0 <= ratio <= 1.0:
        raise ValueError(f"OTEL_TRACES_SAMPLER_ARG: {arg!r} is not a ratio between 0 and 1")
    statics: dict[str, Sampler] = {"always_on": ALWAYS_ON, "always_off": ALWAYS_OFF}
    root = statics.get(name.removeprefix("parentbased_"))
    if root is None and name.removeprefix("parentbased_") == "traceidratio":
        root = TraceIdRatioBased(ratio)
    if root is None:
        raise ValueError(f"OTEL_TRACES_SAMPLER: {name!r} is none of {', '.join(SAMPLERS)}")
    return ParentBased(root) if name.startswith("parentbased_") else root


class Tracing:
    """What a process needs while tracing is on: the sampler, the resource, the exporter's
    endpoint, and each tree's context (remembered, since every block of a tree asks)."""

    def __init__(self, endpoint: str, *, sampler: Sampler | None = None,
                 service_name: str = "", contact: bool = False) -> None:
        self.endpoint = endpoint
        self.sampler = sampler or ParentBased(ALWAYS_ON)
        # OTEL_RESOURCE_ATTRIBUTES are the SDK's to read (Resource.create); the service name
        # defaults to "chatflow" rather than the SDK's "unknown_service".
        self.resource = Resource.create({"service.name": service_name or "chatflow"})
        self.contact = contact
        self._trees: dict[tuple[str, str, str], TreeTrace] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> Tracing | None:
        endpoint = settings.traces_endpoint()
        if not endpoint:
            return None
        return cls(endpoint, sampler=sampler_of(settings.otel_traces_sampler,
                                                settings.otel_traces_sampler_arg),
                   service_name=settings.otel_service_name, contact=settings.trace_contact)

    # -- context in -------------------------------------------------------------------

    def accept(self, command_id: str, header: Any, state_header: Any) -> tuple[str, str]:
        """A command's ``traceparent``/``tracestate`` as kept with its tree: the valid
        traceparent (lowercase) and, with it, its tracestate; ("", "") for none. A malformed
        traceparent is ignored with a debug note (the trace then starts at the command)."""
        if header is None:
            return "", ""
        ok = isinstance(header, str) and len(header) <= _HEADER_MAX
        context = _PROPAGATOR.extract({"traceparent": header.strip().lower()}) if ok else None
        span = get_current_span(context).get_span_context() if context is not None else None
        if span is None or not span.is_valid:
            # A logger looked up here, not the module's: this rare line must follow whatever
            # logging is configured now (a module logger is bound once, on first use).
            structlog.get_logger("chatflow.tracing").debug(
                "traceparent ignored: not a W3C traceparent", command_id=command_id,
                traceparent=str(header)[:80])
            return "", ""
        kept = traceparent(span.trace_id, span.span_id, span.trace_flags.sampled)
        state = ""
        if isinstance(state_header, str) and state_header.strip():
            parsed = TraceState.from_header([state_header])  # drops what is malformed
            state = parsed.to_header() if len(state_header) <= _HEADER_MAX else ""
        return kept, state

    # -- a tree's context ----------------------------------------------------------------

    def tree(self, root_id: str, header: str = "", state: str = "") -> TreeTrace:
        key = (root_id, header, state)
        found = self._trees.get(key)
        if found is None:
            if len(self._trees) >= _TREES_REMEMBERED:
                self._trees.clear()
            found = self._trees[key] = self._decide(root_id, header, state)
        return found

    def _decide(self, root_id: str, header: str, state: str) -> TreeTrace:
        parsed = parsed_traceparent(header) if header else None
        if parsed is None:  # no producer's span: the sampler's root decision, on the root id
            trace_id = root_trace_id(root_id)
            sampled = self.sampler.should_sample(_NO_PARENT, trace_id, "chatflow.execute")
            return TreeTrace(trace_id, 0, sampled.decision is Decision.RECORD_AND_SAMPLE)
        trace_id, parent_id, parent_sampled = parsed
        tree = TreeTrace(trace_id, parent_id, False, state, parent_sampled)
        remote = tree.parent_context()
        parent = set_span_in_context(NonRecordingSpan(remote)) if remote else _NO_PARENT
        decision = self.sampler.should_sample(parent, trace_id, "chatflow.execute").decision
        return TreeTrace(trace_id, parent_id, decision is Decision.RECORD_AND_SAMPLE, tree.tracestate,
                         parent_sampled)

    def of_state(self, state: Any) -> TreeTrace:
        """The tree of an ExecState (its root's command context, as the intake kept it)."""
        root = state.root
        return self.tree(state.rootId, root.traceparent, root.tracestate)

    def visit_headers(self, state: Any) -> dict[str, str]:
        """The trace headers of the block ``state`` is about to run: its visit's own span."""
        return self.of_state(state).headers(visit_span_id(state.execId, state.hops))

    def log_ids(self, state: Any) -> tuple[str, str] | None:
        """``(trace_id, span_id)`` of the block visit ``state`` is at, for a log line; None
        when the tree is not sampled (no such trace exists anywhere)."""
        tree = self.of_state(state)
        if not tree.sampled:
            return None
        return f"{tree.trace_id:032x}", f"{visit_span_id(state.execId, state.hops):016x}"

    def trace_id_of(self, state: Any) -> str | None:
        """The hex trace id of a sampled tree (an exemplar's ``trace_id``), else None."""
        tree = self.of_state(state)
        return f"{tree.trace_id:032x}" if tree.sampled else None


def otlp_exporter(endpoint: str) -> SpanExporter:
    """The SDK's OTLP/HTTP protobuf exporter; it reads OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
    _COMPRESSION and the certificate variables itself."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=endpoint)


class LiveSpans:
    """Spans of work done at most once (a native tool call), ended as it happens: handed to
    the SDK's BatchSpanProcessor, which exports them from its own thread."""

    def __init__(self, endpoint: str) -> None:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.processor = BatchSpanProcessor(otlp_exporter(endpoint))

    def end(self, span: ReadableSpan) -> None:
        self.processor.on_end(span)

    def shutdown(self) -> None:
        self.processor.shutdown()  # type: ignore[no-untyped-call]


__all__ = [
    "SAMPLERS",
    "SCOPE",
    "Tracing",
    "TreeTrace",
    "call_span_id",
    "execution_span_id",
    "root_trace_id",
    "sampler_of",
    "traceparent",
    "visit_span_id",
]
