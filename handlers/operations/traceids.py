"""The ids of a tree's trace and spans, derived (no OpenTelemetry import): the tracing
(handlers/operations/tracing.py), its projection and the API's run page all name the same
trace and span from the same execution ids. docs/operations.md "Tracing"."""

from __future__ import annotations

import hashlib


def _derived(size: int, *parts: str) -> int:
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=size).digest()
    return int.from_bytes(digest, "big") or 1  # an all-zero id is invalid


def root_trace_id(root_id: str) -> int:
    """The trace of a tree whose command carried no traceparent."""
    return _derived(16, "trace", root_id)


def execution_span_id(exec_id: str) -> int:
    return _derived(8, "exec", exec_id)


def call_span_id(child_id: str) -> int:
    """The span of the callTool visit that spawned ``child_id``: the child execution's parent."""
    return _derived(8, "call", child_id)


def visit_span_id(exec_id: str, ordinal: int) -> int:
    """The span of ``exec_id``'s block visit number ``ordinal`` (0 first)."""
    return _derived(8, "visit", exec_id, str(ordinal))


def native_span_id(call_id: str) -> int:
    """The span of the worker's run of one native tool call."""
    return _derived(8, "native", call_id)


def traceparent(trace_id: int, span_id: int, sampled: bool) -> str:
    return f"00-{trace_id:032x}-{span_id:016x}-{'01' if sampled else '00'}"


def parsed_traceparent(header: str) -> tuple[int, int, bool] | None:
    """``(trace id, parent span id, sampled)`` of a traceparent the intake kept (valid)."""
    parts = header.split("-")
    try:
        trace_id, parent_id = int(parts[1], 16), int(parts[2], 16)
        sampled = bool(int(parts[3][:2], 16) & 1)
    except (IndexError, ValueError):
        return None
    return (trace_id, parent_id, sampled) if trace_id and parent_id else None


def trace_id_hex(root_id: str, header: str = "") -> str:
    """The trace id of the tree of ``root_id`` (its command's ``traceparent``: ``header``)."""
    parsed = parsed_traceparent(header) if header else None
    return f"{parsed[0] if parsed else root_trace_id(root_id):032x}"
