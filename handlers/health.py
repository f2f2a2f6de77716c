"""A small HTTP server in the worker process: ``/metrics``, ``/health/live``, ``/health/ready``.

asyncio streams only (no web framework): three GET routes, one response each,
connection closed after it. ``/metrics`` refreshes the XINFO gauges first, so a
scrape sees the streams as they are now.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import structlog
from prometheus_client import CONTENT_TYPE_LATEST

from chatflow.runtime.errors import ConfigurationError

from . import metrics

log = structlog.get_logger("chatflow.health")
Check = Callable[[], Awaitable[tuple[bool, str]]]
Refresh = Callable[[], Awaitable[None]]
READY_TIMEOUT_S = 5


class HealthServer:
    def __init__(self, host: str, port: int, ready: Check, refresh: Refresh | None = None) -> None:
        self.host = host
        self.port = port
        self.ready = ready
        self.refresh = refresh
        self._server: asyncio.Server | None = None

    @property
    def bound_port(self) -> int:
        assert self._server is not None and self._server.sockets
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> HealthServer:
        try:
            self._server = await asyncio.start_server(self._handle, self.host, self.port)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot serve /metrics on {self.host}:{self.port}: {exc.strerror}; another "
                "process holds the port. Choose another --metrics-port (CHATFLOW_METRICS_PORT; "
                "--processes N uses N ports from it) or 0 to turn the endpoints off") from exc
        log.info("metrics and health endpoints listening", host=self.host, port=self.bound_port)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
            line = request.split(b"\r\n", 1)[0].decode("latin-1")
            method, path = [*line.split(" "), "", ""][:2]
            status, ctype, body = await self._route(method, path.split("?", 1)[0])
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                ConnectionError):
            writer.close()
            return
        head = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        with contextlib.suppress(ConnectionError):
            writer.write(head.encode() + (body if method != "HEAD" else b""))
            await writer.drain()
        writer.close()

    async def _route(self, method: str, path: str) -> tuple[str, str, bytes]:
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"GET only\n"
        if path == "/metrics":
            if self.refresh is not None:
                try:
                    await asyncio.wait_for(self.refresh(), timeout=5)
                except Exception as exc:  # a scrape still answers, with the last values
                    log.warning("stream gauges not refreshed", error=str(exc))
            return "200 OK", CONTENT_TYPE_LATEST, metrics.exposition()
        if path == "/health/live":
            return "200 OK", "text/plain", b"live\n"
        if path == "/health/ready":
            try:
                ok, why = await asyncio.wait_for(self.ready(), timeout=READY_TIMEOUT_S)
            except TimeoutError:
                ok, why = False, f"readiness check failed: did not answer within {READY_TIMEOUT_S} s"
            except Exception as exc:  # str() of many errors is empty: name the type too
                ok, why = False, f"readiness check failed: {type(exc).__name__}: {exc}".rstrip(": ")
            return ("200 OK" if ok else "503 Service Unavailable"), "text/plain", \
                (why + "\n").encode()
        return "404 Not Found", "text/plain", b"not found\n"
