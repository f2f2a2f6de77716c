"""The MCP HTTP server's sessions, capped per key.

A streamable-HTTP MCP session is state the server keeps (a transport, a task group, an
optional open event stream) until the client deletes it or it idles out. The SDK caps them per
process (``max_sessions``; one ``chatflow mcp --http`` serves one workspace, so that is the
workspace's cap) but not per caller: one key could take every slot. :class:`SessionCaps`, an
ASGI wrapper in front of the SDK's app, counts the sessions each key opened and answers a key
already holding ``per_key`` live ones with 429, naming the limit. A session stops counting when
it is deleted, when the server no longer knows it (404), or after ``idle_s`` with no request in
flight, the SDK's own idle timeout: the SDK keeps a session with an open request (an event stream
held open by GET) however old, so the wrapper counts it as long, and restarts its idle time when
the request ends. A key's entry goes as soon as it holds no session and has no request in flight,
so tokens made up per request cannot grow the table.

A key is told apart by a digest of its bearer token: the wrapper runs before the SDK checks it,
and a request the SDK refuses opens no session, so it never counts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..controlplane.apikeys import token_hash

Scope = dict[str, Any]
Asgi = Callable[..., Any]
SESSION_HEADER = b"mcp-session-id"


@dataclass
class _Held:
    sessions: dict[bytes, float] = field(default_factory=dict)  # session id -> last request
    busy: dict[bytes, int] = field(default_factory=dict)  # session id -> its requests in flight
    opening: int = 0  # requests that may open one, in flight
    requests: int = 0  # all the key's requests in flight: the entry is kept while any holds it


@dataclass(frozen=True)
class SessionLimits:
    """Live MCP sessions: per key, in all (the process serves one workspace), and how long an
    idle one is kept (CHATFLOW_MCP_SESSIONS_PER_KEY, _MAX, CHATFLOW_MCP_SESSION_IDLE_S)."""

    per_key: int = 8
    max: int = 64
    idle_s: float = 600.0


class SessionCaps:
    """At most ``per_key`` live MCP sessions per key (see the module's docstring)."""

    def __init__(self, app: Asgi, *, per_key: int, idle_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app, self.per_key, self.idle_s, self.clock = app, per_key, idle_s, clock
        self.held: dict[str, _Held] = {}

    async def __call__(self, scope: Scope, receive: Asgi, send: Asgi) -> None:
        if scope["type"] != "http":  # the lifespan: the SDK's session manager starts there
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        who = _caller(headers)
        session = headers.get(SESSION_HEADER)
        held = self._prune(who)
        held.requests += 1
        try:
            if session is None and scope["method"] == "POST":
                await self._opening(held, scope, receive, send)
            elif session is not None and session in held.sessions:
                await self._in_session(held, session, scope, receive, send)
            else:
                await _forward(self.app, scope, receive, send)
        finally:
            held.requests -= 1
            if not held.requests and not held.sessions:
                del self.held[who]

    async def _in_session(self, held: _Held, session: bytes, scope: Scope, receive: Asgi,
                          send: Asgi) -> None:
        held.sessions[session] = self.clock()
        held.busy[session] = held.busy.get(session, 0) + 1
        try:
            status = await _forward(self.app, scope, receive, send)
        finally:
            held.busy[session] -= 1
            if not held.busy[session]:
                del held.busy[session]
            if session in held.sessions:  # idle from now on, not from when the request began
                held.sessions[session] = self.clock()
        if scope["method"] == "DELETE" or status == 404:
            held.sessions.pop(session, None)

    async def _opening(self, held: _Held, scope: Scope, receive: Asgi, send: Asgi) -> None:
        if len(held.sessions) + held.opening >= self.per_key:
            return await _refuse(send, self.per_key)
        held.opening += 1
        opened: list[bytes] = []

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                opened.extend(v for k, v in message.get("headers", ()) if k.lower() == SESSION_HEADER)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            held.opening -= 1
            for session in opened:
                held.sessions[session] = self.clock()

    def _prune(self, who: str) -> _Held:
        held = self.held.setdefault(who, _Held())
        cutoff = self.clock() - self.idle_s
        for session, seen in list(held.sessions.items()):
            if seen < cutoff and session not in held.busy:
                del held.sessions[session]
        return held


def _caller(headers: dict[bytes, bytes]) -> str:
    """The key a request names: its bearer token, however the scheme is spelled or spaced
    (the SDK reads it so), as the digest the key store keeps. Headers are latin-1, as the SDK
    decodes them."""
    scheme, _, token = headers.get(b"authorization", b"").strip().partition(b" ")
    if scheme.lower() != b"bearer":
        token = scheme  # not a bearer token: the SDK refuses it, and it opens no session
    return token_hash(token.strip().decode("latin-1"))


async def _forward(app: Asgi, scope: Scope, receive: Asgi, send: Asgi) -> int:
    status = 0

    async def watch(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        await send(message)

    await app(scope, receive, watch)
    return status


async def _refuse(send: Asgi, per_key: int) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32000,
        "message": f"this key holds {per_key} MCP sessions, the most one key may "
                   "(CHATFLOW_MCP_SESSIONS_PER_KEY): end one (DELETE) or let one idle out"}}
                      ).encode()
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
