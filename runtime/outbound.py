"""Outbound HTTP: the one door httpCall, callEndpoint, fetchMedia and callAI send through.

An :class:`Outbound` owns an httpx client, the egress policy every hop is checked against
(runtime/egress.py) and the gate that lets at most ``max_connections`` requests through at once.
The worker and the API each build one from their settings (``Settings.outbound()``) and hand it
to every executor that sends HTTP. There is no module-level registry keyed by client: two
Outbound objects in one process apply their own policy and their own gate, and a client cannot
exist without a policy, because the policy is a required argument.

Sending (``Outbound.send``): the host is resolved here, every address checked, and the
connection made to a checked address, so a DNS answer that changes between the check and the
connection cannot redirect the request (no DNS rebinding). Redirects are followed by hand, each
Location checked again.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Collection
from types import TracebackType

import httpx

from . import egress
from .errors import ToolFailure

MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 5
DEFAULT_MAX_CONNECTIONS = 100
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Dropped on every redirect that leaves the origin, like the headers marked secret.
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


class Outbound:
    """An httpx client, its egress policy and its connection gate, as one object."""

    def __init__(self, policy: egress.EgressPolicy, *,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.policy = policy
        self.max_connections = max_connections
        self.client = httpx.AsyncClient(follow_redirects=False, limits=httpx.Limits(
            max_connections=max_connections,
            max_keepalive_connections=min(20, max_connections)))
        # Requests wait here, not in httpcore's pool: the pool re-scans every queued request
        # on each assignment pass (encode/httpx#3215), so with hundreds queued inside it a
        # worker spent 80% of its CPU there and fell to 1/30 of its rate.
        self._gate = asyncio.Semaphore(max_connections)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> Outbound:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def send(
        self,
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

        A request waiting for a free connection waits inside its own ``timeout_s``.
        ``Authorization``, ``Proxy-Authorization``, ``Cookie`` and every header named in
        ``secret_headers`` are dropped when a redirect leaves the origin, and 301/302/303 turn
        a request into a GET without a body.
        """
        dropped = _CREDENTIAL_HEADERS | {name.lower() for name in secret_headers}
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout_s):
                await self._gate.acquire()
        except TimeoutError as exc:
            raise ToolFailure("http_timeout", f"{method} {url}: sem resposta em {timeout_s:.1f}s "
                                              "(todas as conexões ocupadas)") from exc
        try:
            left = max(0.001, timeout_s - (time.monotonic() - started))
            return await self._send(method, url, headers, content, left, max_bytes,
                                    max_redirects, dropped)
        finally:
            self._gate.release()

    async def _send(self, method: str, url: str, headers: dict[str, str],
                    content: str | bytes | None, timeout_s: float, max_bytes: int,
                    max_redirects: int, dropped: frozenset[str]) -> tuple[int, bytes, str]:
        try:
            target = httpx.URL(url)
            for _hop in range(max_redirects + 1):
                response = await self._send_checked(method, target, headers, content, timeout_s)
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
            body = await _read_capped(response, max_bytes, f"{method} {url}")
        except egress.EgressDenied as exc:
            raise ToolFailure("egress_denied", f"{method} {url}: egress bloqueado: {exc}") from exc
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise ToolFailure("http_timeout",
                              f"{method} {url}: sem resposta em {timeout_s:.1f}s") from exc
        except httpx.InvalidURL as exc:
            raise ToolFailure("http_invalid_url", f"URL inválida: {url!r} ({exc})") from exc
        except httpx.HTTPError as exc:
            raise ToolFailure("http_error", f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        return response.status_code, body, response.headers.get("content-type", "")

    async def _send_checked(self, method: str, url: httpx.URL, headers: dict[str, str],
                            content: str | bytes | None, timeout_s: float) -> httpx.Response:
        """One hop: check the host, resolve, check every address, connect to a checked address
        (the URL's host is replaced by the address; Host header and TLS SNI keep the name)."""
        if url.scheme not in ("http", "https") or not url.host:
            raise httpx.UnsupportedProtocol(f"only http(s) URLs with a host: {url}")
        self.policy.check_host(url.host)
        port = url.port or (443 if url.scheme == "https" else 80)
        addresses = await resolve(url.host, port, timeout_s)
        self.policy.check(url.host, addresses)
        pinned = egress.as_address(url.host) is None
        failure: httpx.ConnectError | None = None
        for address in addresses:
            request = self.client.build_request(method, url, headers=headers, content=content,
                                                timeout=timeout_s)
            if pinned:
                request.url = url.copy_with(host=str(address))
                if url.scheme == "https":
                    request.extensions = {**request.extensions, "sni_hostname": url.host}
            try:
                return await self.client.send(request, stream=True)
            except httpx.ConnectError as exc:  # next address, as a resolver-aware client would
                failure = exc
        assert failure is not None
        raise failure


async def _read_capped(response: httpx.Response, max_bytes: int, what: str) -> bytes:
    try:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise ToolFailure("http_response_too_large",
                                  f"{what}: resposta maior que {max_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        await response.aclose()


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
