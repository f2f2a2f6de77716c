"""The work one execution costs Valkey, pinned: commands (Lua-internal ones included) and
stream entries appended, counted by the server itself.

Counts, not timings: ``CONFIG RESETSTAT`` then ``INFO commandstats`` around a run of
executions through one in-process worker, whose background loops (reclaim, reaper, leases)
are slowed so that they do not tick inside the window. A change that writes more per
execution fails here; docs/architecture.md ("The commit record") says who reads each write.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from redis.asyncio import Redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chatflow.handlers.interfaces.client import last_id, wait_results
from tests.harness import Harness
from tests.support.http import serve_asgi_in_thread

N = 128  # two intake batches of 64 at most: the per-batch costs are shared as in production
# The execution log projection (handlers/projections) is off: its work is its own, and
# is counted by its own tests.
QUIET = {"claim_interval_ms": 600_000, "reaper_interval_ms": 600_000,
         "claim_idle_ms": 1_800_000, "block_ms": 5_000, "projections_enabled": False}
# The driver's own commands (publishing, reading results, measuring, connecting).
DRIVER = {"xread", "info", "config|resetstat", "client|list", "client|setinfo",
          "client|setname", "hello"}


@dataclass(frozen=True)
class Work:
    """Per execution, averaged over the run."""

    commands: float
    entries: float
    bytes_in: float  # what the worker sent the server
    by_name: dict[str, float]

    def __str__(self) -> str:
        names = ", ".join(f"{k} {v:.2f}" for k, v in sorted(self.by_name.items(), key=lambda kv: -kv[1]))
        return (f"{self.commands:.2f} commands, {self.entries:.2f} stream entries, "
                f"{self.bytes_in:.0f} bytes in ({names})")


def child_tool() -> dict[str, Any]:
    return {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r", "value": "{{n}}"}}}


def bench_3() -> dict[str, Any]:
    """callTool → (child: return) → return: answered in the hop that took the command."""
    return {"onboardingBlockId": "c", "blocks": {
        "c": {"type": "callTool", "id": "c", "toolId": "t-child", "publishedToolId": "child",
              "outputVariable": "o", "inputVariables": [{"name": "n", "value": "{{n}}"}],
              "onError": "blocking", "outputConditions": [],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{o}}"}}}


def http_3(base: str) -> dict[str, Any]:
    """httpCall → executeScript → return: the httpCall is a hop of its own."""
    return {"onboardingBlockId": "h", "blocks": {
        "h": {"type": "httpCall", "id": "h", "method": "GET", "url": base + "/echo?n={{n}}",
              "responseBodyVariable": "resp", "onError": "blocking", "outputConditions": [],
              "defaultOutput": {"type": "block", "blockId": "s"}},
        "s": {"type": "executeScript", "id": "s", "source": "return Number(n) + 1",
              "outputVariable": "s", "inputVariables": [{"name": "n", "value": "{{resp.n}}"}],
              "onError": "blocking", "outputConditions": [],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{s}}"}}}


async def _echo(request: Request) -> Response:
    return JSONResponse({"n": request.query_params.get("n", "0")})


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    with serve_asgi_in_thread(Starlette(routes=[Route("/echo", _echo)])) as base:
        yield base


@pytest.fixture
async def quiet(redis_url: str, prefix: str) -> AsyncIterator[Harness]:
    h = Harness(redis_url, prefix, **QUIET)
    try:
        yield h
    finally:
        await h.close()


def _stats(info: dict[str, Any]) -> dict[str, int]:
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in info.items()
            if name.startswith("cmdstat_")}


async def _worker_bytes(driver: Redis) -> int:
    """Bytes the server read from every client but the driver (whose connection is named)."""
    stats = await driver.info("stats")
    mine = sum(int(c.get("tot-net-in", 0)) for c in await driver.client_list()
               if c.get("name") == "measure")
    return int(stats["total_net_input_bytes"]) - mine


async def measure(h: Harness, pt: str, expected: str, n: int = N) -> Work:
    """Run ``n`` executions of ``pt`` (each answering ``expected``) and count their work."""
    ids = [f"w-{uuid.uuid4().hex[:10]}" for _ in range(n)]
    await h.run(pt, inputs={"n": "7"})  # warm: scripts loaded, definition cached
    driver = Redis.from_url(h.url, client_name="measure", single_connection_client=True)
    try:
        after = await last_id(driver, h.keys.results)
        await driver.config_resetstat()
        before = await _worker_bytes(driver)
        async with driver.pipeline(transaction=False) as pipe:
            for cid in ids:
                pipe.xadd(h.keys.commands, {"data": msgspec.json.encode(
                    h.command(pt, command_id=cid, inputs={"n": "7"}))})
            await pipe.execute()
        found = await wait_results(driver, h.keys.results, set(ids), after=after, timeout_s=120)
        stats = _stats(await driver.info("commandstats"))
        written = await _worker_bytes(driver) - before
    finally:
        await driver.aclose()
    assert sorted(found) == sorted(ids) and all(
        len(r) == 1 and r[0].ok and r[0].result == expected for r in found.values()), found
    work = {k: v / n for k, v in stats.items() if k not in DRIVER}
    return Work(sum(work.values()), work.get("xadd", 0.0), written / n, work)


async def test_a_one_hop_execution_costs_a_pinned_number_of_valkey_commands_and_entries(
        quiet: Harness) -> None:
    await quiet.put_tool("child", child_tool(), tool_id="t-child")
    await quiet.put_tool("bench", bench_3())
    await quiet.start_worker()
    work = await measure(quiet, "bench", "7")
    print(f"bench-3: {work}")
    # Per execution: the command's XADD; in the commit, the commandId guard (SET NX), the
    # tree's log (SET), the result and two execution events (XADD); the rest is per batch
    # (XREADGROUP, the tool's GET, one EVALSHA, one XACK and one XDEL per batch: 6.16 in all;
    # 6.3 with a commit call per partition). 40.7 before (12 entries, 5.3 TYPE checks,
    # 6.4 KB); 2,488 bytes before the compact log line (1,809 with it, 1,822 with the flat
    # commit record: the bytes are the log line, the three public messages and the keys).
    assert work.entries == 4, str(work)
    assert work.by_name.get("set") == 2 and "type" not in work.by_name, str(work)
    assert not {"hset", "zadd", "zrem", "expire"} & set(work.by_name), str(work)
    assert work.commands <= 7, str(work)
    assert work.bytes_in <= 1900, str(work)


async def test_a_two_hop_http_execution_costs_a_pinned_number_of_valkey_commands_and_entries(
        quiet: Harness, echo: str) -> None:
    await quiet.put_tool("http", http_3(echo))
    await quiet.start_worker()
    work = await measure(quiet, "http", "8", n=64)
    print(f"http-3: {work}")
    # Hop 1 (intake): guard, state (HSET, EXPIRE), definition copy, step, log, deadline.
    # Hop 2: the done key read before the call and in the commit, the version (HGET), done
    # key, deadline removed, state deleted, result, execution event, log (APPEND).
    # 40.1 before.
    assert work.entries == 4, str(work)
    assert "type" not in work.by_name, str(work)
    assert work.commands <= 20, str(work)
    assert work.bytes_in <= 4800, str(work)  # 4,999 before the compact log line
