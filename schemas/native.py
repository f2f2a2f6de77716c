"""Native tool calls on the wire: what an agent's process (the SDK's ``NativeToolProxy``) sends
to ``stream:native-tool-calls:{name}`` and what a worker answers (field ``data``, JSON)."""

from __future__ import annotations

from typing import Any

import msgspec


class NativeCall(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of ``stream:native-tool-calls:{name}`` (field ``data``). ``traceparent`` and
    ``tracestate``: the caller's W3C Trace Context (its tool-call span), so the worker's span
    of the call joins its trace; left out when absent."""

    callId: str
    tool: str
    arguments: dict[str, Any] = {}
    replyTo: str | None = None
    deadlineMs: int | None = None  # epoch ms after which the caller has given up
    traceparent: str = ""
    tracestate: str = ""


class NativeResult(msgspec.Struct, frozen=True):
    """One entry of the reply stream (field ``data``)."""

    callId: str
    tool: str
    ok: bool
    result: Any = None
    error: str | None = None
    durationMs: int = 0
