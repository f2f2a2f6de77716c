"""The SDK leaves no Redis connection open behind a call: five sync ``Runner.run`` calls that
each reach a native tool on a worker end with as many connections as before the first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from chatflow.handlers.dataplane.native import load_native_tools
from chatflow.handlers.dataplane.worker import Worker
from chatflow_agent import Agent, Runner
from chatflow_agent.runtime_client import CLIENT_NAME
from chatflow_agent.runtime_tools import RuntimeConnection, RuntimeTools
from tests.harness import Harness
from tests.sdk.fakes import ProviderFake


@pytest.fixture
async def native_worker(harness: Harness) -> AsyncIterator[Harness]:
    worker = Worker(harness.settings, harness.url,
                    native_tools=load_native_tools(["tests.bridge.native_tools"]))
    await worker.start()
    harness.workers.append(worker)
    yield harness


async def connections(h: Harness) -> int:
    # The SDK's own connections, by the name it gives them: the worker's pool may open one
    # more of its own at any moment (a lease renewal racing a reclaim), which is not a leak.
    return sum(1 for c in await h.client.client_list() if c.get("name") == CLIENT_NAME)


async def test_runner_run_closes_its_runtime_connections_every_time(
        native_worker: Harness, fake_provider: ProviderFake) -> None:
    h = native_worker
    connection = RuntimeConnection(h.url, prefix=h.keys.prefix, timeout_s=30)
    tools = await RuntimeTools.load(connection, native_names=["updateSentiment"])
    agent = Agent("Support", "Help.", tools=list(tools), model=fake_provider.model)
    runner = Runner(starting_agent=agent)
    before = await connections(h)
    counts = []
    for run in range(5):
        fake_provider.server.script(
            fake_provider.calls(("updateSentiment", {"sentiment": "neutral", "score": run})),
            fake_provider.text("noted"))
        # sync run: its own event loop, which ends with the run
        result = await asyncio.to_thread(runner.run, session_id=f"s-{run}", user_message="hi")
        assert result.tool_calls_executed == ["updateSentiment"]
        counts.append(await connections(h))
    assert counts == [before] * 5
