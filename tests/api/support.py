"""Real servers on loopback for the API tests: the API itself (uvicorn) and an upstream
API that integration endpoints call, which records every request it gets.

uvicorn serves a socket bound before it starts, so a client can connect at once:
the kernel queues the connection until uvicorn accepts it (no sleeps, no polling).

``api.http`` carries an admin key of workspace ``default`` (every ``/api`` route needs
one); ``api.as_key(token)`` is a client with another key, ``api.anonymous()`` one with none.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chatflow.handlers.api import create_app
from chatflow.handlers.controlplane.apikeys import create_api_key
from chatflow.handlers.keys import Keys
from chatflow.handlers.redis_client import Client, make_client
from chatflow.handlers.settings import Settings
from tests.harness import FAST
from tests.support.http import serve_asgi

ENCRYPTION_KEY = "5f" * 32
INTERNAL_SECRET = "internal-secret-for-tests"


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class Upstream:
    """The outside API: echoes what it got; ``/status/{code}`` answers that status.

    ``hold()`` returns a gate: while it is clear, requests wait inside the upstream
    (``waiting`` counts them; ``until`` waits for a condition on it)."""

    url: str = ""
    requests: list[Seen] = field(default_factory=list)
    gate: asyncio.Event | None = None
    waiting: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def hold(self) -> asyncio.Event:
        self.gate = asyncio.Event()
        return self.gate

    async def until(self, predicate: Callable[[], bool], timeout_s: float = 30.0) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(predicate), timeout_s)

    async def _wait_at_gate(self) -> None:
        if self.gate is None or self.gate.is_set():
            return
        async with self.changed:
            self.waiting += 1
            self.changed.notify_all()
        try:
            await self.gate.wait()
        finally:
            async with self.changed:
                self.waiting -= 1
                self.changed.notify_all()

    def app(self) -> Starlette:
        async def echo(request: Request) -> Response:
            await self._wait_at_gate()
            raw = await request.body()
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode()
            raw_path = request.scope.get("raw_path") or request.url.path.encode()
            seen = Seen(request.method, raw_path.decode(), dict(request.query_params),
                        {k.lower(): v for k, v in request.headers.items()}, body)
            self.requests.append(seen)
            if request.url.path.startswith("/status/"):
                code = int(request.url.path.rsplit("/", 1)[1])
                return JSONResponse({"error": "as asked"}, status_code=code)
            return JSONResponse({"method": seen.method, "path": seen.path, "query": seen.query,
                                 "body": body, "auth": seen.headers.get("authorization")})

        return Starlette(routes=[Route("/{path:path}", echo, methods=[
            "GET", "POST", "PUT", "PATCH", "DELETE"])])


@dataclass
class Api:
    http: httpx.AsyncClient
    root: httpx.AsyncClient
    settings: Settings
    client: Client
    keys: Keys
    key_id: str = ""
    token: str = ""

    def as_key(self, token: str | None) -> httpx.AsyncClient:
        """A client of the same API with ``token`` (None: no Authorization header)."""
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx.AsyncClient(base_url=self.http.base_url, timeout=30, headers=headers)

    def anonymous(self) -> httpx.AsyncClient:
        return self.as_key(None)

    async def new_key(self, workspace: str = "default", role: str = "admin",
                      **kw: Any) -> str:
        """A fresh key's token (``chatflow.handlers.controlplane.apikeys``, as the CLI makes them)."""
        _key_id, token = await create_api_key(self.client, self.keys, workspace=workspace,
                                              role=role, **kw)
        return token

    async def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = await self.http.request(method, path, **kw)
        assert response.status_code == status, (response.status_code, response.text)
        return response.json()

    async def fails(self, method: str, path: str, status: int, **kw: Any) -> dict[str, Any]:
        response = await self.http.request(method, path, **kw)
        assert response.status_code == status, (response.status_code, response.text)
        body: dict[str, Any] = response.json()
        assert body["message"]
        return body

    async def get_key(self, key: str) -> Any:
        raw = await self.client.get(key)
        return json.loads(raw) if raw is not None else None


def api_settings(redis_url: str, prefix: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {**FAST, "encryption_key": ENCRYPTION_KEY,
                              "internal_secret": INTERNAL_SECRET, **overrides}
    return Settings(redis_url=redis_url, prefix=prefix, **values)


@asynccontextmanager
async def running_api(settings: Settings) -> AsyncIterator[Api]:
    client = make_client(settings.redis_url or "")
    keys = Keys(settings.prefix, settings.partitions)
    key_id, token = await create_api_key(client, keys, workspace="default", role="admin",
                                         name="tests")
    auth = {"Authorization": f"Bearer {token}"}
    async with serve_asgi(create_app(settings)) as url:
        base = url + settings.api_base_path.rstrip("/")
        async with httpx.AsyncClient(base_url=base, timeout=30, headers=auth) as http, \
                httpx.AsyncClient(base_url=url, timeout=30, headers=auth) as root:
            # Answered only once the lifespan (registry start-up, rebuild) has finished.
            (await http.get("/openapi.json")).raise_for_status()
            yield Api(http, root, settings, client, keys, key_id, token)
    await client.aclose()


@pytest.fixture
async def api(redis_url: str, prefix: str) -> AsyncIterator[Api]:
    """The HTTP API on a real loopback port, on a fresh key prefix."""
    async with running_api(api_settings(redis_url, prefix)) as running:
        yield running


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = Upstream()
    async with serve_asgi(up.app()) as url:
        up.url = url
        yield up
