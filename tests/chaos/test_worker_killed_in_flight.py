"""SIGKILL a worker while its executions are in flight: another worker answers each once."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from chatflow.handlers.keys import Keys
from chatflow.handlers.redis_client import make_client
from tests.support.chaos import HoldingServer, WorkerPool, command, drained, read_all, setup_prefix

# The slow tier: worker processes killed under load (python -m pytest -m slow).
pytestmark = pytest.mark.slow

N = 24


async def test_a_second_worker_delivers_exactly_one_result_for_each_execution_in_flight_in_a_killed_worker(
        redis_url: str) -> None:
    prefix = f"kill{uuid.uuid4().hex[:6]}:"
    keys = Keys(prefix, 4)
    client = make_client(redis_url)
    http = HoldingServer()
    first = WorkerPool(redis_url, prefix)
    second = WorkerPool(redis_url, prefix)
    try:
        await setup_prefix(client, keys, http.base)
        http.hold()
        ids = [f"k{i}-{uuid.uuid4().hex[:8]}" for i in range(N)]
        async with client.pipeline(transaction=False) as pipe:
            for i, cid in enumerate(ids):
                pipe.xadd(keys.commands, command("chaos-http", cid, i))
            await pipe.execute()
        first.start(1)
        # Every execution is now inside the first worker, waiting on its HTTP request.
        arrived = await asyncio.to_thread(http.wait_requests, N, 60.0)
        assert arrived, f"only {http.requests} of {N} requests reached the server"
        first.kill(0)
        assert await client.xlen(keys.results) == 0
        http.release()
        second.start(1)
        assert await drained(client, keys, timeout_s=60.0)
        results = [json.loads(f[b"data"]) for _id, f in await read_all(client, keys.results)]
        assert sorted(r["commandId"] for r in results) == sorted(ids)
        assert all(r["ok"] for r in results)
        assert {r["commandId"]: r["result"] for r in results} == {cid: str(i) for i, cid in enumerate(ids)}
    finally:
        first.stop()
        second.stop()
        http.stop()
        await client.aclose()
