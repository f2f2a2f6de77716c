"""httpCall: one HTTP request with httpx, bounded by the block and the tool deadline."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from schemas.definition import HttpCallBlock

from ..errors import ToolFailure
from ..limits import Limits
from ..outcome import BlockOutcome
from ..state import ExecState
from .common import remaining_ms, text_of

MAX_BODY_BYTES = 10 * 1024 * 1024


def decode_body(content: bytes, content_type: str) -> Any:
    """JSON bodies become values readable by path (``{{resp.items.0.id}}``); the rest is text."""
    text = content.decode("utf-8", errors="replace")
    if "json" in content_type or text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def response_writes(block: Any, status: int | None, body: Any) -> dict[str, Any]:
    writes: dict[str, Any] = {}
    if block.responseStatusVariable:
        writes[block.responseStatusVariable] = status if status is not None else ""
    if block.responseBodyVariable:
        writes[block.responseBodyVariable] = body if body is not None else ""
    return writes


async def send(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    headers: dict[str, str],
    content: str | bytes | None,
    timeout_s: float,
    max_bytes: int = MAX_BODY_BYTES,
) -> tuple[int, bytes, str]:
    """Send a request and read at most ``max_bytes`` of the body; raise ToolFailure on failure."""
    try:
        request = client.build_request(method, url, headers=headers, content=content,
                                       timeout=timeout_s)
        response = await client.send(request, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise ToolFailure("http_response_too_large",
                                      f"{method} {url}: resposta maior que {max_bytes} bytes")
                chunks.append(chunk)
        finally:
            await response.aclose()
    except httpx.TimeoutException as exc:
        raise ToolFailure("http_timeout",
                          f"{method} {url}: sem resposta em {timeout_s:.1f}s") from exc
    except httpx.InvalidURL as exc:
        raise ToolFailure("http_invalid_url", f"URL inválida: {url!r} ({exc})") from exc
    except httpx.HTTPError as exc:
        raise ToolFailure("http_error", f"{method} {url}: {type(exc).__name__}: {exc}") from exc
    return response.status_code, b"".join(chunks), response.headers.get("content-type", "")


async def run_http_call(
    client: httpx.AsyncClient, state: ExecState, block: HttpCallBlock, limits: Limits, now_ms: int
) -> BlockOutcome:
    started = time.perf_counter()
    cap = limits.max_rendered_chars
    url = text_of(block.url, state, cap)
    headers = {k: text_of(v, state, cap) for k, v in (block.headers or {}).items()}
    body = text_of(block.body, state, cap) if block.body else None
    timeout_ms = min(block.timeoutMs or limits.http_timeout_ms, remaining_ms(state, now_ms))
    debug: dict[str, Any] = {"url": url, "method": block.method}
    try:
        status, content, content_type = await send(
            client, block.method, url, headers=headers, content=body, timeout_s=timeout_ms / 1000)
    except ToolFailure as failure:
        return BlockOutcome(writes=response_writes(block, None, None), error=failure, debug=debug,
                            duration_ms=_ms(started))
    value = decode_body(content, content_type)
    debug["status"] = status
    error = None
    if status >= 400:
        error = ToolFailure("http_status", f"{block.method} {url}: HTTP {status}")
    return BlockOutcome(writes=response_writes(block, status, value), error=error, debug=debug,
                        duration_ms=_ms(started))


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
