"""Builders of the public messages: results, tool-execution events, debug events."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from chatflow.schemas.wire import (
    DebugEvent,
    ErrorInfo,
    ScopedExecutionEvent,
    ToolBlockDebugEvent,
    ToolExecutionStreamEvent,
    ToolResult,
)

from .interpolation import render
from .limits import loggable
from .masking import mask
from .state import Emit, ExecState, RootInfo

_enc = msgspec.json.Encoder()
# Each value of a debug event's payload (a block's result: a whole HTTP body, a script's
# output) is cut to this many JSON bytes, with its size noted, as the event log cuts its values
# (limits.loggable; Settings.log_value_max_bytes has the same default). A debug event is read
# on a screen, and stream:debug:{contact} would otherwise keep a copy of every large body.
DEBUG_VALUE_MAX_BYTES = 16 * 1024
_SECRET = re.compile(r"authorization|api[-_]?key|token|secret|password|cookie", re.IGNORECASE)


# Types a decoded context's values have that are never a mapping.
_PLAIN = frozenset({str, int, float, bool, list, type(None)})


@functools.lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    # Context keys repeat from command to command; the regex runs once per distinct key.
    return bool(_SECRET.search(key))


def recordable_context(context: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """The command context as the event stream records it: secret-looking keys masked (a
    router's access token must not land in traces; conditions rarely read one).

    A dict with nothing to mask is returned itself, not copied (the usual case, once per
    command): a context is never changed once built, and the log only encodes it."""
    out: dict[str, Any] | None = None
    for key, value in context.items():
        if _secret_key(key):
            masked: Any = "***"
        # A decoded context holds plain dicts: ``type`` first, as the ABC check costs more
        # than the rest of the loop; an empty one has nothing to mask.
        elif type(value) is dict:
            if not value or depth >= 4:
                continue
            masked = recordable_context(value, depth + 1)
            if masked is value:
                continue
        elif type(value) in _PLAIN or depth >= 4 or not isinstance(value, Mapping):
            continue  # a plain value's type tells it is no mapping: no ABC check for it
        else:
            masked = recordable_context(value, depth + 1)  # a dict of its own
        if out is None:
            out = dict(context)  # the keys keep their order; only masked values change
        out[key] = masked
    if out is not None:
        return out
    return context if type(context) is dict else dict(context)


def recordable_command_context(context: dict[str, Any]) -> dict[str, Any]:
    """``recordable_context`` of a context as ``Machine.start`` builds it (``router``,
    ``flow``, ``contact``: no key of them is a secret's), looking into their values only."""
    router, flow, contact = context["router"], context["flow"], context["contact"]
    if type(router) is not dict or type(flow) is not dict or type(contact) is not dict:
        return recordable_context(context)
    r = recordable_context(router, 1) if router else router
    f = recordable_context(flow, 1) if flow else flow
    c = recordable_context(contact, 1) if contact else contact
    if r is router and f is flow and c is contact:
        return context
    return {"router": r, "flow": f, "contact": c}


@functools.lru_cache(maxsize=64)
def _iso_second(second: int) -> str:
    return datetime.fromtimestamp(second, tz=UTC).isoformat(timespec="seconds")[:-6]


# The last instant formatted: one hop stamps its events with one ``now`` (a one-hop tree's
# execution events, its debug events), so the text is most often the one just made.
_last_iso: tuple[int, str] = (-1, "")


def iso(ms: int) -> str:
    global _last_iso
    last_ms, text = _last_iso
    if ms == last_ms:
        return text
    # The events of one second differ only in their milliseconds: a second is formatted once.
    text = f"{_iso_second(ms // 1000)}.{ms % 1000:03d}+00:00"
    _last_iso = (ms, text)
    return text


def tool_result(
    root: RootInfo, *, execution_id: str, result: str, error: ErrorInfo | None, now: int
) -> ToolResult:
    """Apply the executeTool action's outputVariable/onError semantics (SPEC: ToolResult)."""
    action = root.action
    duration = max(0, now - root.startedMs)
    variables: dict[str, Any]
    if error is None:
        variables = {action.outputVariable: result} if action.outputVariable else {}
        return ToolResult(root.commandId, action.id, True, result, variables, "continue", None,
                          duration, executionId=execution_id)
    if action.onError == "continue":
        variables = {}
        if action.outputVariable:
            variables[action.outputVariable] = ""
        if action.errorVariable:
            variables[action.errorVariable] = error.message
        return ToolResult(root.commandId, action.id, False, "", variables, "continue", error,
                          duration, executionId=execution_id)
    handoff = action.errorHandoff is None or action.errorHandoff
    message = None
    if action.errorMessage:
        message = render(action.errorMessage, root.sessionVariables, root.context)
    return ToolResult(root.commandId, action.id, False, "", {},
                      "handoff" if handoff else "defaultException", error, duration,
                      errorMessage=message, executionId=execution_id)


def result_emit(root: RootInfo, result: ToolResult) -> Emit:
    return Emit("result", root.replyTo or "", _enc.encode(result), result.ok)


def execution_emit(state: ExecState, ok: bool, error: ErrorInfo | None, now: int) -> Emit:
    # Positional, in the struct's field order: two of these per one-hop execution.
    code = error.code if error else None
    duration = now - state.startedMs
    if duration < 0:
        duration = 0
    workspace = state.root.workspace
    if workspace == "default":
        event = ToolExecutionStreamEvent(
            state.toolId, state.publishedToolId, duration, ok, iso(now),
            state.execId, state.rootId, state.root.commandId, state.depth, code,
        )
    else:
        event = ScopedExecutionEvent(
            state.toolId, state.publishedToolId, duration, ok, iso(now),
            state.execId, state.rootId, state.root.commandId, state.depth, code, workspace,
        )
    return Emit("execution", "", _enc.encode(event), (state.publishedToolId, ok, code, duration))


def debug_emit(
    state: ExecState, kind: str, action_type: str, payload: dict[str, Any], now: int,
    cap: int = DEBUG_VALUE_MAX_BYTES,
) -> Emit:
    # The one masking policy's names, text and depth rules (runtime/masking.py); the worker
    # masks the workspace's stored secret values too (handlers/dataplane/store.py).
    payload = {k: loggable(mask(v), cap) for k, v in payload.items()}
    event = DebugEvent(
        type=kind,  # type: ignore[arg-type]
        actionType=action_type,
        actionId=state.root.action.id,
        commandId=state.root.commandId,
        executionId=state.execId,
        occurredAt=iso(now),
        payload=payload,
        workspace=state.root.workspace,
    )
    return Emit("debug", state.root.contactId, _enc.encode(event))


def block_debug(
    state: ExecState,
    block_id: str,
    block_type: str,
    detail: dict[str, Any],
    error: str | None,
    matched: str | None,
    duration_ms: int,
    now: int,
    condition_reason: str | None = None,
) -> Emit:
    event = ToolBlockDebugEvent(
        blockId=block_id,
        blockType=block_type,
        toolId=state.toolId,
        publishedToolId=state.publishedToolId,
        depth=state.depth,
        durationMs=duration_ms,
        url=detail.get("url"),
        method=detail.get("method"),
        status=detail.get("status"),
        result=detail.get("result"),
        error=error,
        matchedConditionId=matched,
        conditionReason=condition_reason,
        attempts=detail.get("attempts"),
    )
    payload = msgspec.to_builtins(event)
    return debug_emit(state, "action_result", f"executeTool:{block_type}", payload, now)
