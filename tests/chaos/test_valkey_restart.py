"""Restart Valkey (AOF everysec, clean shutdown) mid-load: every acknowledged command is answered."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from chatflow.handlers.keys import Keys
from chatflow.handlers.operations.embedded import EmbeddedServer, free_port
from chatflow.handlers.redis_client import make_client
from tests.support.chaos import HoldingServer, WorkerPool, command, drained, read_all, setup_prefix

# The slow tier: worker processes killed under load (python -m pytest -m slow).
pytestmark = pytest.mark.slow

MIX = ("chaos-http", "chaos-script", "chaos-nested")


async def _publish(client: Any, keys: Keys, count: int, acked: list[str]) -> int:
    """Publish until ``count`` XADDs returned and the outage refused some (the load must span
    it, however long the workers take to notice; at most 20 times ``count``); only returned
    XADDs count as sent. Returns the refusals."""
    refused = 0
    i = 0
    while len(acked) < count or (refused == 0 and len(acked) < 20 * count):
        i += 1
        cid = f"r{i}-{uuid.uuid4().hex[:8]}"
        try:
            await client.xadd(keys.commands, command(MIX[i % 3], cid, i))
        except RedisError:
            refused += 1  # not acknowledged: a producer retries it; nothing is promised
            await asyncio.sleep(0.05)  # the producer's own backoff
            continue
        acked.append(cid)
        await asyncio.sleep(0.005)  # pacing the load, not synchronisation
    return refused


async def _wait_logged(pool: WorkerPool, text: str, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(text in str(line.get("event")) for line in pool.log_lines()) < count:
        assert time.monotonic() < deadline, (
            f"fewer than {count} log lines with {text!r}: "
            f"{[(x.get('event'), x.get('loop')) for x in pool.log_lines() if 'loop' in x]}")
        await asyncio.sleep(0.05)  # polling the workers' log files, bounded


async def _until_up(client: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await client.ping()
            return
        except RedisConnectionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)  # polling for the server, bounded


async def test_every_command_whose_xadd_returned_is_answered_across_a_clean_valkey_restart(
        tmp_path: Path) -> None:
    server = EmbeddedServer(port=free_port(), data_dir=str(tmp_path / "aof"),
                            appendonly=True).start()
    prefix = f"rs{uuid.uuid4().hex[:6]}:"
    keys = Keys(prefix, 4)
    client = make_client(server.url)
    http = HoldingServer()
    pool = WorkerPool(server.url, prefix)
    acked: list[str] = []
    try:
        await setup_prefix(client, keys, http.base)
        pool.start(2)
        load = asyncio.create_task(_publish(client, keys, 600, acked))
        while await client.xlen(keys.results) < 100:  # mid-load: workers up, results flowing
            await asyncio.sleep(0.02)  # polling the server, bounded by the load's own end
        await asyncio.to_thread(server.stop)  # SIGTERM: SHUTDOWN flushes the AOF
        # Down until both workers noticed (each recovery loop logs the outage once).
        await _wait_logged(pool, "cannot reach Redis", 2, timeout_s=20)
        await asyncio.to_thread(server.start)  # same port, same directory: AOF replayed
        refused = await load
        await _until_up(client, 10)
        assert refused > 0  # some XADDs did fail while the server was down
        assert await drained(client, keys, timeout_s=90.0)
        counts = Counter(json.loads(f[b"data"])["commandId"]
                         for _id, f in await read_all(client, keys.results))
        assert set(acked) <= set(counts), f"{len(set(acked) - set(counts))} acked commands unanswered"
        assert max(counts.values()) == 1
        # Every loop that logged the outage reconnects on its next tick (backed off to at most
        # 2 s): wait for that before stopping, since the answers may all be in before it.
        outages = sum("cannot reach Redis; retrying" in str(line.get("event"))
                      for line in pool.log_lines())
        await _wait_logged(pool, "recovery loop reconnected", outages, timeout_s=20)
    finally:
        pool.stop()
        http.stop()
        await client.aclose()
        server.stop()
    # Reconnected, and said so once per worker and loop, not once per tick or per batch.
    lines = list(pool.log_lines())
    events = Counter(str(line.get("event")) for line in lines)
    lost = Counter(line.get("loop") for line in lines
                   if line.get("event") == "recovery loop cannot reach Redis; retrying")
    back = Counter(line.get("loop") for line in lines
                   if line.get("event") == "recovery loop reconnected")
    assert lost and max(lost.values()) <= 2, lost  # two workers: once each at most, per loop
    assert back == lost, (back, lost)
    assert events["Redis connection lost; batches left pending for reclaim"] <= 2
    assert events["batch left pending after a Redis error"] == 0
