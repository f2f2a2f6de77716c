"""Fixtures: the two fake APIs on loopback, and a runtime harness pointed at them."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.blocks_ai.fakes import FakeGraph, FakeOpenAI, serve
from tests.harness import Harness

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
    async with serve(openai.app()) as openai_url, serve(graph.app()) as graph_url:
        openai.url, graph.url = openai_url, graph_url
        try:
            yield Fakes(openai, graph, api_key)
        finally:
            openai.released.set()  # let a hanging request finish before the server stops


@pytest.fixture
async def ai(redis_url: str, prefix: str, fakes: Fakes) -> AsyncIterator[Harness]:
    """A harness whose worker talks to the fakes, with credential ``cred-1`` in the cache."""
    h = Harness(redis_url, prefix, graph_base_url=fakes.graph.url, graph_version="v21.0")
    credential = {"id": "cred-1", "name": "OpenAI", "provider": "openai",
                  "baseUrl": f"{fakes.openai.url}/v1", "apiKey": fakes.api_key}
    await h.client.set(h.keys.llm_credential("cred-1"), json.dumps(credential))
    await h.start_worker()
    try:
        yield h
    finally:
        await h.close()
