"""The MCP HTTP server's sessions, capped per key.

A streamable-HTTP MCP session is state the server keeps (a transport, a task group, an
optional open event stream) until the client deletes it or it idles out. The SDK caps them per
process (``max_sessions``; one ``chatflow mcp --http`` serves one workspace, so that is the
workspace's cap) but not per caller: one key could take every slot. :class:`SessionCaps`, an
ASGI wrapper in front of the SDK's app, counts the sessions each key opened and answers a key
already holding ``per_key`` live ones with 429, naming the limit. A session stops counting when
it is deleted, when the server no longer knows it (404), or after ``idle_s`` without a request,
the SDK's own idle timeout.

A key is told apart by a digest of its bearer token: the wrapper runs before the SDK checks it,
and a request the SDK refuses opens no session, so it never counts.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Scope = dict[str, Any]
Asgi = Callable[..., Any]
SESSION_HEADER = b"mcp-session-id"


@dataclass
class _Held:
    sessions: dict[bytes, float] = field(default_factory=dict)  # session id -> last request
    opening: int = 0  # requests that may open one, in flight


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
        if session is None and scope["method"] == "POST":
            return await self._opening(who, held, scope, receive, send)
        if session is not None and session in held.sessions:
            held.sessions[session] = self.clock()
        status = await _forward(self.app, scope, receive, send)
        if session is not None and (scope["method"] == "DELETE" or status == 404):
            held.sessions.pop(session, None)

    async def _opening(self, who: str, held: _Held, scope: Scope, receive: Asgi,
                       send: Asgi) -> None:
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
            if seen < cutoff:
                del held.sessions[session]
        return held


def _caller(headers: dict[bytes, bytes]) -> str:
    """The key a request names: its bearer token, however the scheme is spelled or spaced
    (the SDK reads it so), as a digest."""
    scheme, _, token = headers.get(b"authorization", b"").strip().partition(b" ")
    if scheme.lower() != b"bearer":
        token = scheme  # not a bearer token: the SDK refuses it, and it opens no session
    return hashlib.sha256(token.strip()).hexdigest()


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
