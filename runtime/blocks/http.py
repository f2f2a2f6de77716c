"""httpCall: one HTTP request through the Outbound (runtime/outbound.py), bounded by the block
and the tool deadline."""

from __future__ import annotations

import json
import time
from typing import Any

from chatflow.schemas.definition import HttpCallBlock
from chatflow.schemas.edge import DEFAULT_IDEMPOTENCY_HEADER

from ..edge import Edge, Gated, origin_scope, with_key
from ..errors import ErrorCode, ToolFailure
from ..interpolation import UnsafeUrlTemplate, render_url
from ..limits import Limits
from ..origins import origin_of
from ..outbound import Outbound
from ..outcome import BlockOutcome
from ..state import ExecState
from .common import remaining_ms, text_of


def decode_body(content: bytes, content_type: str) -> Any:
    """JSON bodies become values readable by path (``{{resp.items.0.id}}``); the rest is text."""
    text = content.decode("utf-8", errors="replace")
    if "json" in content_type or text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def body_failure(failure: ToolFailure) -> ToolFailure:
    """The Outbound's size cap, as httpCall and callEndpoint name it: the body they would keep
    in a variable is over ``CHATFLOW_HTTP_MAX_BODY_BYTES`` (the read stopped there)."""
    if failure.code != ErrorCode.HTTP_RESPONSE_TOO_LARGE:
        return failure
    return ErrorCode.HTTP_BODY_TOO_LARGE.failure(cause=failure.message)


def response_writes(block: Any, status: int | None, body: Any) -> dict[str, Any]:
    writes: dict[str, Any] = {}
    if block.responseStatusVariable:
        writes[block.responseStatusVariable] = status if status is not None else ""
    if block.responseBodyVariable:
        writes[block.responseBodyVariable] = body if body is not None else ""
    return writes


async def run_http_call(
    outbound: Outbound, state: ExecState, block: HttpCallBlock, limits: Limits, now_ms: int,
    edge: Edge | None = None,
) -> BlockOutcome:
    """``edge``: the gate and the origins an operator limited (CHATFLOW_ORIGIN_LIMITS)."""
    started = time.perf_counter()
    cap = limits.max_rendered_chars
    try:
        url = render_url(block.url, state.variables, state.context, max_chars=cap)
    except UnsafeUrlTemplate as exc:
        return BlockOutcome(writes=response_writes(block, None, None),
                            error=ErrorCode.HTTP_INVALID_URL.failure(str(exc), url=block.url),
                            debug={"url": block.url, "method": block.method},
                            duration_ms=_ms(started))
    headers = {k: text_of(v, state, cap) for k, v in (block.headers or {}).items()}
    # The same key on every attempt and redelivery of this visit (runtime/edge.py).
    headers = with_key(headers, block.method, DEFAULT_IDEMPOTENCY_HEADER, state)
    body = text_of(block.body, state, cap) if block.body else None
    timeout_ms = min(block.timeoutMs or limits.http_timeout_ms, remaining_ms(state, now_ms))
    debug: dict[str, Any] = {"url": url, "method": block.method}
    sender: Outbound | Gated = outbound
    if edge is not None and edge.origins:
        scope = origin_scope(edge.origins, origin_of(url), state.root.workspace)
        if scope is not None:
            sender = Gated(outbound, edge.gate, scope, remaining_ms(state, now_ms))
    try:
        reply = await sender.exchange(
            block.method, url, headers=headers, content=body, timeout_s=timeout_ms / 1000)
    except ToolFailure as failure:
        return BlockOutcome(writes=response_writes(block, None, None), error=body_failure(failure),
                            debug=debug, duration_ms=_ms(started))
    status = reply.status
    value = decode_body(reply.body, reply.content_type)
    debug["status"] = status
    error = None
    retry_after = None
    if status >= 400:
        error = ErrorCode.HTTP_STATUS.failure(method=block.method, url=url, status=status)
        retry_after = reply.headers.get("retry-after")
    return BlockOutcome(writes=response_writes(block, status, value), error=error, debug=debug,
                        duration_ms=_ms(started), retry_after=retry_after)


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
