"""The runtime's guardrails: by default a 30 s deadline for the whole tree, 50 hops and depth
5 (the contract's error texts name them, docs/spec.md); each is configurable via Limits.

Also the bounds on what one execution stores (docs/security.md, "What an execution
stores"): its variables, a script's result, and each value the event log records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from .errors import ErrorCode, ToolFailure
from .state import LogEntry

TOOL_TIMEOUT_MS = 30_000
MAX_TOOL_HOPS = 50
MAX_TOOL_DEPTH = 5
MAX_TOOL_INVOCATIONS = 50
HTTP_TIMEOUT_MS = 10_000
REGEX_MAX_TEXT_BYTES = 64 * 1024
SCRIPT_RESULT_MAX_BYTES = 1024 * 1024
VARIABLES_MAX_BYTES = 4 * 1024 * 1024
LOG_VALUE_MAX_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    tool_timeout_ms: int = TOOL_TIMEOUT_MS
    max_hops: int = MAX_TOOL_HOPS
    max_depth: int = MAX_TOOL_DEPTH
    max_invocations: int = MAX_TOOL_INVOCATIONS
    http_timeout_ms: int = HTTP_TIMEOUT_MS
    max_rendered_chars: int = 1_000_000
    regex_max_text_bytes: int = REGEX_MAX_TEXT_BYTES
    script_result_max_bytes: int = SCRIPT_RESULT_MAX_BYTES
    variables_max_bytes: int = VARIABLES_MAX_BYTES
    log_value_max_bytes: int = LOG_VALUE_MAX_BYTES


_encode = msgspec.json.Encoder().encode


def json_size(value: Any) -> int:
    """Bytes of ``value`` as JSON: what it costs in a state, a step or a log entry."""
    return len(_encode(value))


def script_result_too_large(size: int, cap: int) -> ToolFailure:
    return ErrorCode.SCRIPT_RESULT_TOO_LARGE.failure(size=size, cap=cap)


def variables_over(variables: Mapping[str, Any], writes: Mapping[str, Any],
                   cap: int) -> ToolFailure | None:
    """``variables_too_large`` when the variables after ``writes`` would exceed ``cap``."""
    if not writes:
        return None
    return variables_too_large(json_size({**variables, **writes}), cap)


def variables_too_large(size: int, cap: int) -> ToolFailure | None:
    """``variables_too_large`` when variables of ``size`` JSON bytes exceed ``cap``."""
    if size <= cap:
        return None
    return ErrorCode.VARIABLES_TOO_LARGE.failure(size=size, cap=cap)


def loggable(value: Any, cap: int) -> Any:
    """``value`` as the event log keeps it: unchanged when its JSON is at most ``cap``
    bytes, else a note of its size with the start of its text. The log is for reading a
    run back; a value that size would make every step of a loop store it again."""
    size = json_size(value)
    if size <= cap:
        return value
    head = _encode(value)[: min(cap, 1024)].decode(errors="ignore")
    return {"truncated": True, "bytes": size, "head": head}


def _bounded(values: Mapping[str, Any] | None, cap: int) -> dict[str, Any] | None:
    return None if values is None else {k: loggable(v, cap) for k, v in values.items()}


def bounded_entry(entry: LogEntry, cap: int) -> LogEntry:
    """``entry`` with every value it records (result, writes, detail, detail's inputs and
    variables) kept to ``cap`` bytes each; the entry itself when nothing is over."""
    if json_size(entry) <= cap:
        return entry
    detail = entry.detail
    if detail is not None:
        detail = {k: (_bounded(v, cap) if k in ("inputs", "variables", "context")
                      and isinstance(v, Mapping) else loggable(v, cap))
                  for k, v in detail.items()}
    result = entry.result
    if result is not None and json_size(result) > cap:
        result = f"[truncated: {json_size(result)} bytes] {result[: min(cap, 1024)]}"
    return msgspec.structs.replace(entry, result=result, detail=detail,
                                   writes=_bounded(entry.writes, cap))
