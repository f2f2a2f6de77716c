"""httpCall: one HTTP request with httpx, bounded by the block and the tool deadline."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import weakref
from collections.abc import Collection
from typing import Any

import httpx

from chatflow.schemas.definition import HttpCallBlock

from .. import egress
from ..errors import ToolFailure
from ..interpolation import UnsafeUrlTemplate, render_url
from ..limits import Limits
from ..outcome import BlockOutcome
from ..state import ExecState
from .common import remaining_ms, text_of

MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Dropped on every redirect that leaves the origin, like the headers marked secret.
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


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
    max_redirects: int = MAX_REDIRECTS,
    secret_headers: Collection[str] = (),
) -> tuple[int, bytes, str]:
    """Send a request and read at most ``max_bytes`` of the body; raise ToolFailure on failure.

    Every hop is checked against the client's egress policy (runtime/egress.py): the host is
    resolved here, every address checked, and the connection made to a checked address.
    Redirects are followed by hand, at most ``max_redirects``, each Location checked again;
    ``Authorization``, ``Proxy-Authorization``, ``Cookie`` and every header named in
    ``secret_headers`` are dropped when a redirect leaves the origin, and 301/302/303 turn
    a request into a GET without a body.
    """
    dropped = _CREDENTIAL_HEADERS | {name.lower() for name in secret_headers}
    policy = egress.policy_for(client)
    gate = _gates.get(client)
    if gate is None:
        return await _send(client, policy, method, url, headers, content, timeout_s, max_bytes,
                           max_redirects, dropped)
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout_s):
            await gate.acquire()
    except TimeoutError as exc:
        raise ToolFailure("http_timeout", f"{method} {url}: sem resposta em {timeout_s:.1f}s "
                                          "(todas as conexões ocupadas)") from exc
    try:
        left = max(0.001, timeout_s - (time.monotonic() - started))
        return await _send(client, policy, method, url, headers, content, left, max_bytes,
                           max_redirects, dropped)
    finally:
        gate.release()


_gates: weakref.WeakKeyDictionary[httpx.AsyncClient, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())


def limit(client: httpx.AsyncClient, max_connections: int) -> None:
    """Let at most ``max_connections`` requests through ``client`` at once; the rest wait
    here, inside their own timeout. Use the client's pool size: httpcore's pool re-scans
    every queued request on each assignment pass (encode/httpx#3215), so with hundreds
    queued inside it a worker spent 80% of its CPU there and fell to 1/30 of its rate."""
    _gates[client] = asyncio.Semaphore(max_connections)


async def _send(client: httpx.AsyncClient, policy: egress.EgressPolicy, method: str, url: str,
                headers: dict[str, str], content: str | bytes | None, timeout_s: float,
                max_bytes: int, max_redirects: int,
                dropped: frozenset[str]) -> tuple[int, bytes, str]:
    try:
        target = httpx.URL(url)
        for _hop in range(max_redirects + 1):
            response = await _send_checked(client, policy, method, target, headers, content,
                                           timeout_s)
            location = response.headers.get("location")
            if response.status_code not in _REDIRECTS or not location:
                break
            await response.aclose()
            following = target.join(location)
            if (following.scheme, following.host, following.port) != (
                    target.scheme, target.host, target.port):
                headers = {k: v for k, v in headers.items() if k.lower() not in dropped}
            if response.status_code in (301, 302, 303) and method.upper() != "HEAD":
                method, content = "GET", None
                headers = {k: v for k, v in headers.items()
                           if k.lower() not in ("content-type", "content-length")}
            target = following
        else:
            raise ToolFailure("http_too_many_redirects",
                              f"{method} {url}: mais de {max_redirects} redirecionamentos")
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
    except egress.EgressDenied as exc:
        raise ToolFailure("egress_denied", f"{method} {url}: egress bloqueado: {exc}") from exc
    except (httpx.TimeoutException, TimeoutError) as exc:
        raise ToolFailure("http_timeout",
                          f"{method} {url}: sem resposta em {timeout_s:.1f}s") from exc
    except httpx.InvalidURL as exc:
        raise ToolFailure("http_invalid_url", f"URL inválida: {url!r} ({exc})") from exc
    except httpx.HTTPError as exc:
        raise ToolFailure("http_error", f"{method} {url}: {type(exc).__name__}: {exc}") from exc
    return response.status_code, b"".join(chunks), response.headers.get("content-type", "")


async def resolve(host: str, port: int, timeout_s: float) -> list[egress.IPAddress]:
    """Every address ``host`` resolves to, in the resolver's order, without duplicates."""
    literal = egress.as_address(host)
    if literal is not None:
        return [literal]
    try:
        async with asyncio.timeout(timeout_s):
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpx.ConnectError(f"cannot resolve {host}: {exc}") from exc
    found: list[egress.IPAddress] = []
    for info in infos:
        address = egress.as_address(str(info[4][0]))
        if address is not None and address not in found:
            found.append(address)
    return found


async def _send_checked(client: httpx.AsyncClient, policy: egress.EgressPolicy, method: str,
                        url: httpx.URL, headers: dict[str, str], content: str | bytes | None,
                        timeout_s: float) -> httpx.Response:
    """One hop: check the host, resolve, check every address, connect to a checked address
    (the URL's host is replaced by the address; Host header and TLS SNI keep the name)."""
    if url.scheme not in ("http", "https") or not url.host:
        raise httpx.UnsupportedProtocol(f"only http(s) URLs with a host: {url}")
    policy.check_host(url.host)
    port = url.port or (443 if url.scheme == "https" else 80)
    addresses = await resolve(url.host, port, timeout_s)
    policy.check(url.host, addresses)
    pinned = egress.as_address(url.host) is None
    failure: httpx.ConnectError | None = None
    for address in addresses:
        request = client.build_request(method, url, headers=headers, content=content,
                                       timeout=timeout_s)
        if pinned:
            request.url = url.copy_with(host=str(address))
            if url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": url.host}
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError as exc:  # next address, as a resolver-aware client would
            failure = exc
    assert failure is not None
    raise failure


async def run_http_call(
    client: httpx.AsyncClient, state: ExecState, block: HttpCallBlock, limits: Limits, now_ms: int
) -> BlockOutcome:
    started = time.perf_counter()
    cap = limits.max_rendered_chars
    try:
        url = render_url(block.url, state.variables, state.context, max_chars=cap)
    except UnsafeUrlTemplate as exc:
        return BlockOutcome(writes=response_writes(block, None, None),
                            error=ToolFailure("http_invalid_url", str(exc)),
                            debug={"url": block.url, "method": block.method},
                            duration_ms=_ms(started))
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
