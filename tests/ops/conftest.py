"""Ops fixtures: an HTTP server on loopback that answers only when the test releases it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from tests.harness import Harness


@dataclass
class GatedServer:
    """Every request waits for ``release``; ``arrived`` is set when the first one comes in."""

    body: dict[str, object] = field(default_factory=lambda: {"ok": True})
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/slow"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            self.arrived.set()
            await self.release.wait()
            payload = json.dumps(self.body).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(payload)).encode() +
                         b"\r\nConnection: close\r\n\r\n" + payload)
            await writer.drain()
        writer.close()
        self.answered.set()


@pytest.fixture
async def gated() -> AsyncIterator[GatedServer]:
    server = GatedServer()
    server.server = await asyncio.start_server(server._handle, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.release.set()
        server.server.close()


@pytest.fixture
async def bare(redis_url: str, prefix: str) -> AsyncIterator[Harness]:
    """A client on a fresh prefix and no worker: the test drives the projection itself."""
    h = Harness(redis_url, prefix)
    try:
        yield h
    finally:
        await h.close()
