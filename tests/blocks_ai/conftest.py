"""Fixtures: the two fake APIs on loopback, and a runtime harness pointed at them."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.blocks_ai.fakes import FakeGraph, FakeOpenAI
from tests.harness import Harness
from tests.support.http import serve_asgi

WA_TOKEN = "EAAGfakeWhatsAppToken123"


@dataclass
class Fakes:
    openai: FakeOpenAI
    graph: FakeGraph
    api_key: str


@pytest.fixture
async def fakes() -> AsyncIterator[Fakes]:
    api_key = f"sk-proj-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    openai, graph = FakeOpenAI(api_key), FakeGraph(WA_TOKEN)
    async with (serve_asgi(openai.app(), lifespan="off") as openai_url,
               serve_asgi(graph.app(), lifespan="off") as graph_url):
        openai.url, graph.url = openai_url, graph_url
        try:
            yield Fakes(openai, graph, api_key)
        finally:
            openai.released.set()  # let a hanging request finish before the server stops


Opener = Callable[..., Awaitable[Harness]]


@pytest.fixture
async def open_ai(redis_url: str, prefix: str, fakes: Fakes) -> AsyncIterator[Opener]:
    """Opens the harness of ``ai`` with settings overridden (``llm_timeout_ms=300``)."""
    opened: list[Harness] = []

    async def open_harness(**overrides: Any) -> Harness:
        h = Harness(redis_url, prefix, graph_base_url=fakes.graph.url, graph_version="v21.0",
                    **overrides)
        opened.append(h)
        credential = {"id": "cred-1", "name": "OpenAI", "provider": "openai",
                      "baseUrl": f"{fakes.openai.url}/v1", "apiKey": fakes.api_key}
        await h.client.set(h.keys.llm_credential("cred-1"), json.dumps(credential))
        await h.start_worker()
        return h

    try:
        yield open_harness
    finally:
        for h in opened:
            await h.close()


@pytest.fixture
async def ai(open_ai: Opener) -> Harness:
    """A harness whose worker talks to the fakes, with credential ``cred-1`` in the cache."""
    return await open_ai()
