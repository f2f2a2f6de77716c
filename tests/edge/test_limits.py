"""Rate and concurrency limits of an integration server, held across worker processes
through Valkey, and an origin's limits shared fairly by workspaces (SPEC: ``limits``;
CHATFLOW_ORIGIN_LIMITS). Real ``chatflow worker`` processes, a real loopback upstream."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec

from chatflow.handlers.interfaces.client import wait_results
from chatflow.handlers.operations.metrics import REGISTRY
from chatflow.runtime.origins import origin_of
from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer, Reply, Request, json_reply
from tests.support.processes import WorkerProc, kill, start_worker

from .support import Counting, endpoint_tool, put_server, put_tool_in

WORKER = {"block_ms": "200", "claim_idle_ms": "2000"}


@contextmanager
def workers(url: str, prefix: str, n: int, **settings: str) -> Iterator[list[WorkerProc]]:
    procs = [start_worker(url, prefix, **{**WORKER, **settings}) for _ in range(n)]
    try:
        yield procs
    finally:
        for proc in procs:
            kill(proc)


async def run_all(h: Harness, pt: str, n: int, timeout_s: float) -> list[str]:
    """Publish ``n`` commands of ``pt`` at once; every one's result (ok: its value, else its
    error code)."""
    mark = await h.mark()
    ids = [f"c{i}-{uuid.uuid4().hex[:8]}" for i in range(n)]
    async with h.client.pipeline(transaction=False) as pipe:
        for cid in ids:
            pipe.xadd(h.keys.commands, {"data": msgspec.json.encode(h.command(pt, command_id=cid))})
        await pipe.execute()
    found = await wait_results(h.client, h.keys.results, set(ids), after=mark,
                               timeout_s=timeout_s)
    assert sorted(found) == sorted(ids), f"{len(found)} of {n} answered"
    return [r[0].result if r[0].ok else (r[0].error.code if r[0].error else "?")
            for r in found.values()]


async def test_with_max_concurrent_two_and_two_workers_the_upstream_never_sees_more_than_two(
        client_only: Harness, http_server: LoopbackServer, redis_url: str, prefix: str) -> None:
    h = client_only
    upstream = Counting(hold_s=0.3)
    http_server.route("GET", "/call", upstream)
    await put_server(h, "srv", http_server.base, limits={"maxConcurrent": 2})
    await h.put_tool("pt", endpoint_tool("srv"))
    with workers(redis_url, prefix, 2):
        results = await run_all(h, "pt", 12, timeout_s=60)
    assert results == ["200"] * 12, results
    assert upstream.most == 2, upstream.most  # the limit was reached, never passed
    # The waits were counted: twelve calls through two slots, most of them waited.


async def test_requests_per_second_five_holds_across_workers_over_a_ten_second_burst(
        client_only: Harness, http_server: LoopbackServer, redis_url: str, prefix: str) -> None:
    h = client_only
    upstream = Counting()
    http_server.route("GET", "/call", upstream)
    await put_server(h, "srv", http_server.base,
                     limits={"requestsPerSecond": 5, "burst": 1})
    await h.put_tool("pt", endpoint_tool("srv"))
    with workers(redis_url, prefix, 2, tool_timeout_ms="20000"):
        results = await run_all(h, "pt", 50, timeout_s=60)
    assert results == ["200"] * 50, results
    times = sorted(upstream.times)
    assert len(times) == 50
    # Fifty turns 200 ms apart: ten seconds. Any two seconds hold at most the limit's ten,
    # plus the burst, plus one for how late a loaded worker may wake and send (arrival
    # times, not turns, are what the upstream sees).
    assert times[-1] - times[0] >= 9.0, times[-1] - times[0]
    tightest = min(times[i + 12] - times[i] for i in range(len(times) - 12))
    assert tightest >= 2.0, tightest


async def test_a_call_that_cannot_get_a_turn_before_the_deadline_fails_rate_limited(
        client_only: Harness, http_server: LoopbackServer, redis_url: str, prefix: str) -> None:
    h = client_only
    upstream = Counting()
    http_server.route("GET", "/call", upstream)
    await put_server(h, "srv", http_server.base, limits={"requestsPerSecond": 2, "burst": 1})
    await h.put_tool("pt", endpoint_tool("srv"))
    with workers(redis_url, prefix, 1, tool_timeout_ms="2000"):
        results = await run_all(h, "pt", 10, timeout_s=60)
    # A turn every 500 ms inside a 2 s deadline: four calls at most (fewer on a machine slow
    # to pick the commands up); the rest are refused at once, not left to time out.
    ok = results.count("200")
    assert 1 <= ok <= 4 and results.count("rate_limited") == 10 - ok, results
    assert len(upstream.times) == ok
    messages = {r["error"]["message"] for r in await h.stream(h.keys.results) if r["error"]}
    assert messages == {"limite de requisições atingido: serverId=srv (requestsPerSecond=2, "
                        "burst=1); sem vez antes do prazo da tool"}, messages


async def test_two_workspaces_sharing_a_limited_origin_each_get_at_least_forty_percent(
        client_only: Harness, http_server: LoopbackServer, redis_url: str, prefix: str) -> None:
    h = client_only
    upstream = Counting()
    http_server.route("GET", "/a", upstream)
    http_server.route("GET", "/b", upstream)
    limits = json.dumps({http_server.base: {"requestsPerSecond": 10, "burst": 1}})
    for ws, path in (("ws-a", "/a"), ("ws-b", "/b")):
        await put_tool_in(h, f"pt-{ws}", tool("h", http("h", http_server.base + path, to("r"),
                                                         responseStatusVariable="st"),
                                              ret("r", "{{st}}")), ws)
    mark = await h.mark()
    flood = [f"a{i}-{uuid.uuid4().hex[:6]}" for i in range(80)]  # ws-a floods first
    steady = [f"b{i}-{uuid.uuid4().hex[:6]}" for i in range(25)]
    with workers(redis_url, prefix, 2, tool_timeout_ms="8000", origin_limits=limits):
        async with h.client.pipeline(transaction=False) as pipe:
            for cid in flood:
                pipe.xadd(h.keys.commands, {"data": msgspec.json.encode(
                    h.command("pt-ws-a", command_id=cid))})
            for cid in steady:
                pipe.xadd(h.keys.commands, {"data": msgspec.json.encode(
                    h.command("pt-ws-b", command_id=cid))})
            await pipe.execute()
        found = await wait_results(h.client, h.keys.results, {*flood, *steady}, after=mark,
                                   timeout_s=60)
    assert len(found) == len(flood) + len(steady)
    assert origin_of(http_server.base)  # the setting names the upstream's origin
    arrivals = sorted(zip(upstream.times, upstream.paths, strict=True))
    # While both workspaces call (until ws-b's last request), each had at least 40%.
    last_b = max(i for i, (_t, path) in enumerate(arrivals) if path == "/b")
    window = [path for _t, path in arrivals[: last_b + 1]]
    share_b = window.count("/b") / len(window)
    assert window.count("/b") == len(steady), "every ws-b call got through"
    assert 0.4 <= share_b <= 0.6, (share_b, window.count("/a"), window.count("/b"))


async def test_a_call_that_waited_for_its_turn_is_counted(
        harness: Harness, http_server: LoopbackServer) -> None:
    upstream = Counting(hold_s=0.1)
    http_server.route("GET", "/call", upstream)
    await put_server(harness, "srv", http_server.base, limits={"maxConcurrent": 1})
    await harness.put_tool("pt", endpoint_tool("srv"))
    before = REGISTRY.get_sample_value("chatflow_rate_limit_waits_total") or 0.0
    assert await run_all(harness, "pt", 4, timeout_s=30) == ["200"] * 4
    waited = (REGISTRY.get_sample_value("chatflow_rate_limit_waits_total") or 0.0) - before
    assert upstream.most == 1 and waited >= 2, (upstream.most, waited)


async def test_a_slot_held_by_a_killed_worker_comes_back_within_the_claim_window(
        client_only: Harness, http_server: LoopbackServer, redis_url: str, prefix: str) -> None:
    h = client_only
    arrived, release = threading.Event(), threading.Event()
    times: list[float] = []

    def held_first(_request: Request) -> Reply:
        times.append(time.monotonic())
        if len(times) == 1:
            arrived.set()
            release.wait(60)  # the first call hangs until its worker is long dead
        return json_reply({"ok": True})

    http_server.route("GET", "/call", held_first)
    await put_server(h, "srv", http_server.base, limits={"maxConcurrent": 1})
    await h.put_tool("pt", endpoint_tool("srv"))
    settings = {**WORKER, "claim_idle_ms": "1000"}
    first = start_worker(redis_url, prefix, **settings)
    second = None
    try:
        mark = await h.mark()
        command = h.command("pt")
        await h.send(command)
        assert await asyncio.to_thread(arrived.wait, 60)
        kill(first)  # its slot is still taken: no one gives it back
        killed = time.monotonic()
        # The dead worker's slot ends with its lease, at most a claim window from now.
        (held,) = await h.client.zrange(f"{prefix}{{edge:server:srv}}:slots", 0, -1,
                                        withscores=True)
        seconds, micros = await h.client.time()
        assert held[1] - (seconds * 1000 + micros // 1000) <= 1000, held
        second = start_worker(redis_url, prefix, **settings)
        found = await h.results_after(mark, {command.commandId}, timeout_s=60)
        (result,) = found[command.commandId]
    finally:
        release.set()
        kill(first)
        if second is not None:
            kill(second)
    assert (result.ok, result.result) == (True, "200"), result
    # The step was reclaimed and its call got the dead worker's slot once its lease ended
    # (the lease is the claim window, like the stream entry's: checked above).
    assert len(times) == 2 and times[1] > killed
