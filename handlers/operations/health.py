"""A small HTTP server in the worker process: ``/metrics``, ``/health/live``, ``/health/ready``,
and the check of Valkey's memory that readiness makes.

asyncio streams only (no web framework): three GET routes, one response each,
connection closed after it. ``/metrics`` refreshes the XINFO gauges first, so a
scrape sees the streams as they are now.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from chatflow.runtime.errors import ConfigurationError

from ..redis_client import Client
from . import metrics

log = structlog.get_logger("chatflow.health")
Check = Callable[[], Awaitable[tuple[bool, str]]]
Refresh = Callable[[], Awaitable[None]]
READY_TIMEOUT_S = 5


class HealthServer:
    def __init__(self, host: str, port: int, ready: Check, refresh: Refresh | None = None,
                 live: Check | None = None) -> None:
        self.host = host
        self.port = port
        self.ready = ready
        self.live = live
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
            status, ctype, body = await self._route(method, path.split("?", 1)[0],
                                                    _accept(request))
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

    async def _route(self, method: str, path: str, accept: str = "") -> tuple[str, str, bytes]:
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"GET only\n"
        if path == "/metrics":
            if self.refresh is not None:
                try:
                    await asyncio.wait_for(self.refresh(), timeout=5)
                except Exception as exc:  # a scrape still answers, with the last values
                    log.warning("stream gauges not refreshed", error=str(exc))
            # OpenMetrics when the scraper asks for it (Prometheus does): the only format that
            # carries the duration histograms' trace_id exemplars.
            body, ctype = metrics.negotiated(accept)
            return "200 OK", ctype, body
        if path == "/health/live":
            if self.live is None:
                return "200 OK", "text/plain", b"live\n"
            return await _answer(self.live, "liveness")
        if path == "/health/ready":
            return await _answer(self.ready, "readiness")
        return "404 Not Found", "text/plain", b"not found\n"


def _accept(request: bytes) -> str:
    for line in request.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"accept":
            return value.strip().decode("latin-1")
    return ""


async def _answer(check: Check, what: str) -> tuple[str, str, bytes]:
    try:
        ok, why = await asyncio.wait_for(check(), timeout=READY_TIMEOUT_S)
    except TimeoutError:
        ok, why = False, f"{what} check failed: did not answer within {READY_TIMEOUT_S} s"
    except Exception as exc:  # str() of many errors is empty: name the type too
        ok, why = False, f"{what} check failed: {type(exc).__name__}: {exc}".rstrip(": ")
    return ("200 OK" if ok else "503 Service Unavailable"), "text/plain", (why + "\n").encode()


def _nodes(info: dict[str, Any]) -> list[dict[str, Any]]:
    """INFO's reply per node: a cluster client answers ``{node: section}``."""
    if info and all(isinstance(v, dict) for v in info.values()) and "used_memory" not in info \
            and not any(k.startswith("errorstat_") for k in info):
        return list(info.values())
    return [info]


async def memory_trouble(client: Client, oom_seen: int | None) -> tuple[str, int]:
    """Why Valkey refuses writes for lack of memory ("" if it does not), and the server's
    count of OOM rejections to compare with next time.

    With ``maxmemory`` reached under ``noeviction`` every write fails with OOM while PING
    still answers; a worker that reports ready then takes traffic it cannot commit. Either
    sign is enough: used memory at the limit, or OOM rejections since the last check (the
    memory may have dipped below the limit between two writes that failed)."""
    memory, errors = await client.info("memory"), await client.info("errorstats")
    oom = sum(int(node.get("errorstat_OOM", {}).get("count", 0)) for node in _nodes(errors))
    for node in _nodes(memory):
        limit, used = int(node.get("maxmemory", 0)), int(node.get("used_memory", 0))
        if limit and used >= limit and node.get("maxmemory_policy") == "noeviction":
            return (f"Valkey is full: used_memory {used} >= maxmemory {limit} under noeviction, "
                    "so writes are refused (OOM). Raise maxmemory, trim the streams or add "
                    "memory (docs/operations.md)"), oom
    if oom_seen is not None and oom > oom_seen:
        return (f"Valkey refused {oom - oom_seen} writes for lack of memory (OOM) since the "
                "last check. Raise maxmemory, trim the streams or add memory "
                "(docs/operations.md)"), oom
    return "", oom
