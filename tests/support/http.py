"""The one loopback HTTP server helper of the tests: uvicorn on a socket bound to 127.0.0.1.

``serve_asgi`` serves an ASGI app inside the test's event loop; ``serve_asgi_in_thread``
serves it from a thread with its own loop, for callers that block (the SDK's sync
``Runner.run``, worker subprocesses talking to a server the test holds). Both bind and
listen before they return, so requests queue in the backlog until uvicorn accepts them
(no start-up wait, no polling). ``LoopbackServer`` is the scripted server built on them:
per-path handlers and a log of every request.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response
from starlette.routing import Route

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def _server(app: Any, lifespan: str) -> uvicorn.Server:
    return uvicorn.Server(uvicorn.Config(app, lifespan=lifespan, log_config=None,
                                         access_log=False, timeout_graceful_shutdown=2))


def _url(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


@asynccontextmanager
async def serve_asgi(app: Any, *, lifespan: str = "on") -> AsyncIterator[str]:
    """Serve ``app`` in the running loop; yields its base URL."""
    sock = _listening_socket()
    server = _server(app, lifespan)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield _url(sock)
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextmanager
def serve_asgi_in_thread(app: Any, *, lifespan: str = "off") -> Iterator[str]:
    """Serve ``app`` from a daemon thread with its own loop; yields its base URL."""
    sock = _listening_socket()
    server = _server(app, lifespan)
    # uvicorn installs no signal handlers outside the main thread.
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield _url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@dataclass
class Request:
    method: str
    path: str  # with its query string, as sent
    headers: Mapping[str, str]  # case-insensitive
    body: bytes


Reply = tuple[int, dict[str, str], bytes]
Handler = Callable[[Request], Reply]


def json_reply(value: Any, status: int = 200) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(value).encode()


@dataclass
class LoopbackServer:
    """Scripted routes (sync handlers, run in a thread pool so one may block) and a request log."""

    routes: dict[tuple[str, str], Handler] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    base: str = ""
    _serving: Any = None

    def route(self, method: str, path: str, handler: Handler | Any) -> None:
        self.routes[(method, path)] = handler if callable(handler) else (lambda _r: json_reply(handler))

    def app(self) -> Starlette:
        async def serve(request: StarletteRequest) -> Response:
            query = request.url.query
            # As sent: the raw path, percent-escapes kept (url.path is decoded).
            raw = request.scope.get("raw_path", b"").decode("latin-1") or request.url.path
            req = Request(request.method, raw + (f"?{query}" if query else ""),
                          request.headers, await request.body())
            self.requests.append(req)
            handler = self.routes.get((request.method, request.url.path))
            reply = await run_in_threadpool(handler, req) if handler else json_reply(
                {"error": "not found"}, 404)
            status, headers, body = reply
            return Response(body, status_code=status, headers=headers)

        return Starlette(routes=[Route("/{path:path}", serve, methods=METHODS)])

    def start(self) -> LoopbackServer:
        self._serving = serve_asgi_in_thread(self.app())
        self.base = self._serving.__enter__()
        return self

    def stop(self) -> None:
        if self._serving is not None:
            self._serving.__exit__(None, None, None)
            self._serving = None


@pytest.fixture
def http_server() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()
