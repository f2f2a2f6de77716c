"""Ops fixtures: an HTTP server on loopback that answers only when the test releases it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.harness import Harness
from tests.support.http import serve_asgi


@dataclass
class GatedServer:
    """Every request waits for ``release``; ``arrived`` is set when the first one comes in,
    ``answered`` once an answer went out."""

    body: dict[str, object] = field(default_factory=lambda: {"ok": True})
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    base: str = ""

    @property
    def url(self) -> str:
        return f"{self.base}/slow"

    def app(self) -> Starlette:
        async def slow(_request: Request) -> JSONResponse:
            self.arrived.set()
            await self.release.wait()
            return JSONResponse(self.body, background=BackgroundTask(self.answered.set))

        return Starlette(routes=[Route("/slow", slow, methods=["GET", "POST"])])


@pytest.fixture
async def gated() -> AsyncIterator[GatedServer]:
    server = GatedServer()
    async with serve_asgi(server.app(), lifespan="off") as base:
        server.base = base
        try:
            yield server
        finally:
            server.release.set()


@pytest.fixture
def bare(client_only: Harness) -> Harness:
    """A client on a fresh prefix and no worker: the test drives the projection itself."""
    return client_only
