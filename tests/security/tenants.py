"""Three workspaces on one deployment, for the trust-boundary attacks: the real API on
loopback, a real worker with the run history (SQLite), and loopback upstreams that record
every request they get (workspace ``a``'s server, ``b``'s server, ``b``'s LLM).

* ``default``: its admin (``api.http``), plus a viewer and an editor;
* ``a``: an editor and a viewer; its server ``srv-a`` (secret ``A_SECRET``) echoes what it
  gets, and its tool ``t-a`` (published as ``pt_a``) calls it;
* ``b``: an admin; its server ``srv-b`` (secret header ``B_SECRET``), its LLM credential
  ``cred-b`` (key ``B_KEY``, on a fake OpenAI that checks it) and its tool ``t-b`` (``pt_b``).

Nothing of ``b``'s may ever reach ``b``'s upstreams through another workspace:
:meth:`Tenants.b_untouched` says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatflow.handlers.history.db import engine_for, upgrade
from tests.api.support import Api, Upstream, api_settings, running_api
from tests.blocks_ai.fakes import FakeOpenAI
from tests.harness import Harness
from tests.registry.defs import call_endpoint, definition, ret
from tests.support.http import serve_asgi

A_SECRET = "a-secret-6f1e2d3c"
B_SECRET = "b-secret-71c0a9e4"
B_KEY = "sk-b-" + "9" * 40


@dataclass
class Tenants:
    h: Harness
    api: Api
    a: httpx.AsyncClient  # editor of a
    a_viewer: httpx.AsyncClient
    b: httpx.AsyncClient  # admin of b
    d_viewer: httpx.AsyncClient  # viewer of default
    d_editor: httpx.AsyncClient  # editor of default
    up_a: Upstream
    up_b: Upstream
    llm_b: FakeOpenAI
    pt_a: str = ""
    pt_b: str = ""

    def b_untouched(self) -> None:
        assert self.up_b.requests == [], [(r.method, r.path) for r in self.up_b.requests]
        assert self.llm_b.requests == [], self.llm_b.requests

    async def caught_up(self) -> None:
        assert self.h.workers[0].history is not None
        await self.h.workers[0].history.wait_caught_up()

    async def run_a(self, pt: str | None = None, **kw: Any) -> str:
        """Run a tool of ``a`` as a producer would; its execution id, once in the history."""
        result = await self.h.run(pt or self.pt_a, **kw)
        assert result.executionId, result
        await self.caught_up()
        return result.executionId


async def ok(client: httpx.AsyncClient, method: str, path: str, status: int = 200,
             **kw: Any) -> Any:
    response = await client.request(method, path, **kw)
    assert response.status_code == status, (method, path, response.status_code, response.text)
    return response.json()


async def _setup_b(t: Tenants) -> None:
    for method, path, body in [
        ("POST", "/integration-servers", {"id": "srv-b", "name": "B", "baseUrl": t.up_b.url,
                                          "headers": [{"name": "Authorization",
                                                       "value": B_SECRET, "secret": True}]}),
        ("POST", "/integration-servers/srv-b/endpoints", {"id": "ep-b", "name": "get",
                                                          "path": "/b"}),
        ("POST", "/llm-credentials", {"id": "cred-b", "name": "B", "apiKey": B_KEY,
                                      "baseUrl": t.llm_b.url + "/v1"}),
        ("POST", "/tools", {"id": "t-b", "definition": definition(ret("from b"))}),
    ]:
        await ok(t.b, method, path, 201, json=body)
    t.pt_b = (await ok(t.b, "POST", "/tools/t-b/publish"))["publishedToolId"]


async def _setup_a(t: Tenants) -> None:
    await ok(t.a, "POST", "/integration-servers", 201, json={
        "id": "srv-a", "name": "A", "baseUrl": t.up_a.url,
        "headers": [{"name": "Authorization", "value": A_SECRET, "secret": True}]})
    await ok(t.a, "POST", "/integration-servers/srv-a/endpoints", 201,
             json={"id": "ep-a", "name": "echo", "path": "/a"})
    await ok(t.a, "POST", "/tools", 201, json={"id": "t-a", "definition": definition(
        call_endpoint("e", "srv-a", "ep-a", []), ret("{{status}}"))})
    t.pt_a = (await ok(t.a, "POST", "/tools/t-a/publish"))["publishedToolId"]


@pytest.fixture
async def tenants(redis_url: str, prefix: str, tmp_path: Path) -> AsyncIterator[Tenants]:
    history = f"sqlite:///{tmp_path / 'history.db'}"
    engine = engine_for(history)
    await upgrade(engine)
    await engine.dispose()
    up_a, up_b = Upstream(), Upstream()
    llm_b = FakeOpenAI(B_KEY, replies=["from b's model"])
    h = Harness(redis_url, prefix, history_url=history)
    try:
        await h.start_worker()
        async with serve_asgi(up_a.app()) as url_a, serve_asgi(up_b.app()) as url_b, \
                serve_asgi(llm_b.app(), lifespan="off") as url_llm, \
                running_api(api_settings(redis_url, prefix, history_url=history)) as api:
            up_a.url, up_b.url, llm_b.url = url_a, url_b, url_llm
            tokens = await asyncio.gather(
                api.new_key("a", "editor"), api.new_key("a", "viewer"), api.new_key("b", "admin"),
                api.new_key("default", "viewer"), api.new_key("default", "editor"))
            clients = [api.as_key(token) for token in tokens]
            try:
                t = Tenants(h, api, *clients, up_a=up_a, up_b=up_b, llm_b=llm_b)
                await _setup_b(t)
                await _setup_a(t)
                yield t
            finally:
                for client in clients:
                    await client.aclose()
    finally:
        await h.close()
