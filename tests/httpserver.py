"""A real HTTP server on loopback for tests, with per-path handlers and a request log."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Reply = tuple[int, dict[str, str], bytes]
Handler = Callable[[Request], Reply]


def json_reply(value: Any, status: int = 200) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(value).encode()


@dataclass
class LoopbackServer:
    routes: dict[tuple[str, str], Handler] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def base(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def route(self, method: str, path: str, handler: Handler | Any) -> None:
        self.routes[(method, path)] = handler if callable(handler) else (lambda _r: json_reply(handler))

    def start(self) -> LoopbackServer:
        outer = self

        class _H(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                req = Request(self.command, self.path, dict(self.headers.items()),
                              self.rfile.read(length) if length else b"")
                outer.requests.append(req)
                handler = outer.routes.get((self.command, self.path.split("?")[0]))
                status, headers, body = handler(req) if handler else json_reply(
                    {"error": "not found"}, 404)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def http_server() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def serve_asgi(app: Any, *, lifespan: str = "on") -> AsyncIterator[str]:
    """Serve an ASGI ``app`` with uvicorn on a loopback port, in the test's event loop. The
    socket listens before this yields, so requests queue in its backlog until uvicorn
    accepts them (no start-up wait, no polling)."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan=lifespan, log_config=None,
                                           access_log=False, timeout_graceful_shutdown=2))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()
