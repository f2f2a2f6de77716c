"""Request limits in front of every route: body size (413) and JSON nesting depth (400).

The body is read here, up to the cap, before any route or JSON parser sees it: a
declared ``Content-Length`` over the cap is refused before a byte is read, a chunked
body as soon as it passes the cap. A JSON body nested deeper than the limit is refused
before ``json.loads`` could recurse on it.
"""

from __future__ import annotations

import json
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..registry.errors import ApiCode

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings skipped)."""
    if raw.count(b"[") + raw.count(b"{") < 2:
        return raw.count(b"[") + raw.count(b"{")
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b'""', raw)):
        if bracket in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


async def _refuse(send: Send, status: int, code: ApiCode, message: str) -> None:
    body = json.dumps({"error": code, "message": message,
                       "problems": [{"path": "body", "message": message}]}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class RequestLimits:
    """ASGI middleware: ``max_body`` bytes per request body, ``max_depth`` JSON levels."""

    def __init__(self, app: ASGIApp, *, max_body: int, max_depth: int) -> None:
        self.app = app
        self.max_body = max_body
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"").decode("latin-1")
        too_big = f"the request body is larger than {self.max_body} bytes"
        if declared.isdecimal() and int(declared) > self.max_body:
            await _refuse(send, 413, ApiCode.BODY_TOO_LARGE, too_big)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _refuse(send, 413, ApiCode.BODY_TOO_LARGE, too_big)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        kind = headers.get(b"content-type", b"")
        # FastAPI may parse a body without a content type as JSON too.
        if (not kind or b"json" in kind) and json_depth(body) > self.max_depth:
            await _refuse(send, 400, ApiCode.INVALID_REQUEST,
                          f"the JSON body nests deeper than {self.max_depth} levels")
            return
        await self.app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect, as a server would

    return replay
