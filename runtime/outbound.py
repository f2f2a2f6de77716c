"""Outbound HTTP: the one door httpCall, callEndpoint, fetchMedia and callAI send through.

An :class:`Outbound` owns an aiohttp session (its keep-alive connection pool), the egress
policy every hop is checked against (runtime/egress.py) and the gate that lets at most
``max_connections`` requests through at once. The worker and the API each build one from their
settings (``Settings.outbound()``) and hand it to every executor that sends HTTP. There is no
module-level registry keyed by client: two Outbound objects in one process apply their own
policy and their own gate, and a client cannot exist without a policy, because the policy is a
required argument.

Why aiohttp: chosen by measurement (``python -m bench.http_engines``, docs/http.md). On the
http-3 loop it used about a tenth of httpx's CPU per request and served 3-10× the requests/s.

Sending (``Outbound.send``): the host name is checked, and the pool's resolver
(:class:`CheckedResolver`) resolves it and checks every address before the connector connects
to exactly those addresses, so a DNS answer that changes between the check and the connection
cannot redirect the request (no DNS rebinding); the URL keeps the name, so the Host header and
TLS SNI carry it and the certificate is verified against it. A kept-alive connection was made to
a checked address. Redirects are followed by hand, each Location checked again.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextvars import ContextVar, Token
from types import TracebackType
from typing import NamedTuple

import aiohttp
import certifi
from aiohttp import hdrs
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from . import egress
from .errors import ErrorCode, ToolFailure
from .origins import parse_url

MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 5
DEFAULT_MAX_CONNECTIONS = 100
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Dropped on every redirect that leaves the origin, like the headers marked secret.
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_CHUNK = 64 * 1024
_HOSTS_REMEMBERED = 1024  # hosts whose policy verdict an Outbound keeps (a set, then cleared)

Check = Callable[[], Awaitable[bool]]


class StillWanted(NamedTuple):
    """Whether a request's tree is still unanswered: ``check()`` is awaited once the request
    holds a connection slot and before it is sent, after a wait for the slot, or always
    (``always``: the caller did not check just before calling). False sends nothing."""

    check: Check
    always: bool = False


# Whoever runs a block (handlers/dataplane/steps.py) sets this. A contextvar, because the executors'
# signature (state, block, now_ms) is shared by every block kind and must not grow for this.
_STILL_WANTED: ContextVar[StillWanted | None] = ContextVar("chatflow_still_wanted",
                                                           default=None)
# The W3C trace headers (``traceparent``, ``tracestate``) of the block being run, set by whoever
# runs it while tracing is on (handlers/dataplane/steps.py), so the server a block calls
# continues the trace under the block's own span. Unset (None) while tracing is off: then no
# request carries them. A contextvar, for the reason _STILL_WANTED is one.
_TRACE_HEADERS: ContextVar[Mapping[str, str] | None] = ContextVar("chatflow_trace_headers",
                                                                  default=None)
_TRACE_NAMES = frozenset({"traceparent", "tracestate"})


class Reply(NamedTuple):
    """A response as :meth:`Outbound.exchange` returns it."""

    status: int
    body: bytes
    content_type: str
    headers: Mapping[str, str]  # the final response's (aiohttp's read-only view, not copied)


def enter_sending_while(check: Check, *, always: bool = False) -> Token[StillWanted | None]:
    """Until :func:`leave_sending_while`, a request that waited for a slot is sent only if
    ``check()`` holds; ``always``: every request is checked, waited or not. A token pair, not
    a context manager: the step processor sets it once per block task (every httpCall)."""
    return _STILL_WANTED.set(StillWanted(check, always))


def leave_sending_while(token: Token[StillWanted | None]) -> None:
    _STILL_WANTED.reset(token)


def enter_traced(headers: Mapping[str, str]) -> Token[Mapping[str, str] | None]:
    """Until :func:`leave_traced`, every request sent with ``traced`` (the default) carries
    ``headers`` (a block's ``traceparent`` and ``tracestate``), in place of any the block set."""
    return _TRACE_HEADERS.set(headers)


def leave_traced(token: Token[Mapping[str, str] | None]) -> None:
    _TRACE_HEADERS.reset(token)


def _with_trace(headers: dict[str, str], trace: Mapping[str, str]) -> dict[str, str]:
    return {**{k: v for k, v in headers.items() if k.lower() not in _TRACE_NAMES}, **trace}


def default_tls(ca_file: str | None = None) -> ssl.SSLContext:
    """Verifying TLS context: Mozilla's roots (certifi, as before), plus ``ca_file`` if given."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


class CutShort(ToolFailure):
    """Raised when a request times out (``http_timeout``) after waiting for a connection of
    the worker's own pool (CHATFLOW_HTTP_MAX_CONNECTIONS), for all of its timeout or part of
    it, so the upstream never had the whole timeout to answer. The block fails as with any
    timeout; a circuit breaker does not count it against the upstream (runtime/edge.py)."""

    @classmethod
    def of(cls, failure: ToolFailure) -> CutShort:
        return cls(failure.code, failure.message, fatal=failure.fatal)


class CheckedResolver(AbstractResolver):
    """The pool's resolver: resolve a name, check every address, hand back only those.

    The connector connects to what this returns, so the address checked is the address used.
    Address literals never reach a resolver: :meth:`Outbound._send_checked` checks them."""

    def __init__(self, policy: egress.EgressPolicy) -> None:
        self.policy = policy

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        addresses = await resolve(host, port, None)
        self.policy.check(host, addresses)
        return [ResolveResult(hostname=host, host=str(a), port=port,
                              family=socket.AF_INET if a.version == 4 else socket.AF_INET6,
                              proto=0, flags=socket.AI_NUMERICHOST) for a in addresses]

    async def close(self) -> None:
        return None


class Outbound:
    """An aiohttp session, its egress policy and its connection gate, as one object."""

    def __init__(self, policy: egress.EgressPolicy, *,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS,
                 tls: ssl.SSLContext | None = None,
                 max_body_bytes: int = MAX_BODY_BYTES) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.max_body_bytes = max_body_bytes  # the cap of a send() that names none
        self.policy = policy
        self.max_connections = max_connections
        self.tls = tls or default_tls()
        # Requests wait here, in front of the pool, so CHATFLOW_HTTP_MAX_CONNECTIONS bounds the
        # requests in flight; the pool's own limit is the same, so it never queues them again.
        self._gate = asyncio.Semaphore(max_connections)
        self.queued = 0  # requests waiting at the gate now
        self._session: aiohttp.ClientSession | None = None
        # Hosts that passed the policy as written (the deny list; a literal's address too).
        # The policy is frozen, so a host's verdict never changes; a name's addresses are
        # still checked by the resolver on every new connection. Bounded: cleared when full.
        self._hosts_passed: set[str] = set()

    def _session_now(self) -> aiohttp.ClientSession:
        # Made on first use: a connector needs the running loop, and settings build the
        # Outbound before the loop runs.
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self.max_connections, limit_per_host=0, ssl=self.tls,
                resolver=CheckedResolver(self.policy), use_dns_cache=False)
            # No cookie jar: one session serves every tool and tenant of the process.
            # No automatic Content-Type: a body is sent with the type its block set, or none
            # (set here once rather than built for every request).
            self._session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
                auto_decompress=True, skip_auto_headers=("Content-Type",))
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

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
        max_bytes: int | None = None,
        max_redirects: int = MAX_REDIRECTS,
        secret_headers: Collection[str] = (),
        traced: bool = True,
    ) -> tuple[int, bytes, str]:
        """:meth:`exchange` without the response headers: status, body and content type."""
        reply = await self.exchange(method, url, headers=headers, content=content,
                                    timeout_s=timeout_s, max_bytes=max_bytes,
                                    max_redirects=max_redirects, secret_headers=secret_headers,
                                    traced=traced)
        return reply.status, reply.body, reply.content_type

    async def exchange(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str],
        content: str | bytes | None,
        timeout_s: float,
        max_bytes: int | None = None,
        max_redirects: int = MAX_REDIRECTS,
        secret_headers: Collection[str] = (),
        traced: bool = True,
    ) -> Reply:
        """Send a request and read at most ``max_bytes`` of the body; raise ToolFailure on failure.

        ``max_bytes`` defaults to the Outbound's ``max_body_bytes``.
        A request waiting for a free connection waits inside its own ``timeout_s``; each
        network phase (connect, each read) is bounded by ``timeout_s`` too. A body longer than
        ``max_bytes`` fails with ``http_response_too_large`` and stops the read there.
        ``Authorization``, ``Proxy-Authorization``, ``Cookie`` and every header named in
        ``secret_headers`` are dropped when a redirect leaves the origin, and 301/302/303 turn
        a request into a GET without a body. ``traced``: the request carries the trace headers
        of the block being run (:func:`enter_traced`), when tracing set them; False for a
        request to a third party that has no use for them (fetchMedia's Graph API calls).
        """
        if traced:
            trace = _TRACE_HEADERS.get()
            if trace is not None:
                headers = _with_trace(headers, trace)
        wanted = _STILL_WANTED.get()
        started = time.monotonic()
        waited = self._gate.locked()
        if waited:
            await self._wait_at_gate(method, url, timeout_s)
        else:  # a free slot is taken without suspending: no timer to arm
            await self._gate.acquire()
        try:
            # After a wait, or always if the caller asks: a caller that checked the tree just
            # before calling needs no second read for a request sent at once.
            if (wanted is not None and (waited or wanted.always)
                    and not await wanted.check()):
                raise ErrorCode.EXECUTION_CANCELLED.failure(
                    f"{method} {url} não enviado: a execução já foi respondida")
            left = max(0.001, timeout_s - (time.monotonic() - started)) if waited else timeout_s
            cap = self.max_body_bytes if max_bytes is None else max_bytes
            return await self._send(method, url, headers, content, left, cap,
                                    max_redirects, secret_headers)
        except ToolFailure as failure:
            if waited and failure.code == ErrorCode.HTTP_TIMEOUT:
                raise CutShort.of(failure) from failure  # the wait at the gate took its time
            raise
        finally:
            self._gate.release()

    async def _wait_at_gate(self, method: str, url: str, timeout_s: float) -> None:
        self.queued += 1
        try:
            async with asyncio.timeout(timeout_s):
                await self._gate.acquire()
        except TimeoutError as exc:
            raise CutShort.of(ErrorCode.HTTP_TIMEOUT.failure(
                "todas as conexões ocupadas", what=f"{method} {url}", seconds=timeout_s)) from exc
        finally:
            self.queued -= 1

    async def _send(self, method: str, url: str, headers: dict[str, str],
                    content: str | bytes | None, timeout_s: float, max_bytes: int,
                    max_redirects: int, secret_headers: Collection[str]) -> Reply:
        what = f"{method} {url}"
        try:
            target = parse_url(url)
            for _hop in range(max_redirects + 1):
                response = await self._send_checked(method, target, headers, content, timeout_s)
                if response.status not in _REDIRECTS:
                    break
                location = response.headers.get("location")
                if not location:
                    break
                response.release()
                following = target.join(parse_url(location))
                if following.origin() != target.origin():
                    dropped = _CREDENTIAL_HEADERS | {name.lower() for name in secret_headers}
                    headers = {k: v for k, v in headers.items() if k.lower() not in dropped}
                if response.status in (301, 302, 303) and method.upper() != "HEAD":
                    method, content = "GET", None
                    headers = {k: v for k, v in headers.items()
                               if k.lower() not in ("content-type", "content-length")}
                target = following
            else:
                raise ErrorCode.HTTP_TOO_MANY_REDIRECTS.failure(what=what,
                                                                max_redirects=max_redirects)
            body = await _read_capped(response, max_bytes, what)
        except egress.EgressDenied as exc:
            raise ErrorCode.EGRESS_DENIED.failure(what=what, cause=exc) from exc
        except TimeoutError as exc:  # aiohttp's timeouts are TimeoutErrors too
            raise ErrorCode.HTTP_TIMEOUT.failure(what=what, seconds=timeout_s) from exc
        except aiohttp.ClientConnectorCertificateError as exc:
            raise ErrorCode.HTTP_TLS_ERROR.failure(what=what, cause=exc.certificate_error) from exc
        except (aiohttp.InvalidURL, ValueError) as exc:
            raise ErrorCode.HTTP_INVALID_URL.failure(str(exc), url=url) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise ErrorCode.HTTP_ERROR.failure(what=what, kind=type(exc).__name__, cause=exc) from exc
        return Reply(response.status, body, response.headers.get("content-type", ""),
                     response.headers)

    async def _send_checked(self, method: str, url: URL, headers: dict[str, str],
                            content: str | bytes | None, timeout_s: float
                            ) -> aiohttp.ClientResponse:
        """One hop: the host checked here, a name's addresses by the pool's resolver."""
        host = url.host
        if url.scheme not in ("http", "https") or not host:
            raise aiohttp.InvalidURL(f"only http(s) URLs with a host: {url}")
        if host not in self._hosts_passed:
            self.policy.check_host(host)
            literal = egress.as_address(host)
            if literal is not None:  # aiohttp connects to a literal without asking the resolver
                self.policy.check(host, [literal])
            if len(self._hosts_passed) >= _HOSTS_REMEMBERED:
                self._hosts_passed.clear()
            self._hosts_passed.add(host)
        data = content.encode() if isinstance(content, str) else content
        timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_connect=timeout_s,
                                        sock_read=timeout_s)
        return await self._session_now().request(
            method, url, headers=headers, data=data, allow_redirects=False, timeout=timeout)


async def _read_capped(response: aiohttp.ClientResponse, max_bytes: int, what: str) -> bytes:
    try:
        length = response.content_length
        if length is not None:
            if length > max_bytes:
                raise _too_large(what, max_bytes)
            if hdrs.CONTENT_ENCODING not in response.headers:
                # Read whole: aiohttp's parser stops a declared-length body at its length, so
                # the cap already holds (a compressed body is capped as it is inflated, below).
                body = await response.read()
                response.release()
                return body
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise _too_large(what, max_bytes)
            chunks.append(chunk)
    except BaseException:
        response.close()  # the rest is never read: the connection is closed, not reused
        raise
    response.release()
    return b"".join(chunks)


def _too_large(what: str, max_bytes: int) -> ToolFailure:
    return ErrorCode.HTTP_RESPONSE_TOO_LARGE.failure(what=what, max_bytes=max_bytes)


async def resolve(host: str, port: int, timeout_s: float | None) -> list[egress.IPAddress]:
    """Every address ``host`` resolves to, in the resolver's order, without duplicates."""
    literal = egress.as_address(host)
    if literal is not None:
        return [literal]
    async with asyncio.timeout(timeout_s):
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[egress.IPAddress] = []
    for info in infos:
        address = egress.as_address(str(info[4][0]))
        if address is not None and address not in found:
            found.append(address)
    return found


__all__ = ["CheckedResolver", "CutShort", "Outbound", "Reply", "StillWanted", "default_tls",
           "enter_sending_while", "enter_traced", "leave_sending_while", "leave_traced",
           "resolve"]
