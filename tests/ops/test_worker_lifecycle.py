"""A worker's life on a real Valkey: what it costs idle, how it heals when Valkey loses its
data, when it says it is not live or not ready, and how it tidies the consumer groups.

Tests that flush Valkey or fill its memory run on a private embedded server of their own.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import redis.asyncio as aioredis
from prometheus_client.parser import text_string_to_metric_families

from chatflow.handlers.dataplane.recovery import Recovery
from chatflow.handlers.dataplane.worker import Worker
from chatflow.handlers.interfaces.client import last_id, publish, wait_results
from chatflow.handlers.keys import COMMANDS_GROUP, RELAY_GROUP
from chatflow.handlers.operations.embedded import EmbeddedServer, free_port
from tests.harness import Harness
from tests.ops.tools import returning
from tests.support.processes import kill, start_worker
from tests.support.waiting import until

IDLE_WINDOW_S = 12.0
IDLE_MAX_PER_S = 5


@pytest.fixture
def own_valkey() -> Iterator[str]:
    """A Valkey of this test alone: it gets flushed or filled up."""
    server = EmbeddedServer().start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
async def own(own_valkey: str, prefix: str) -> AsyncIterator[Harness]:
    h = Harness(own_valkey, prefix)
    try:
        yield h
    finally:
        await h.close()




async def top_level_commands(url: str, window_s: float) -> list[str]:
    """The commands clients sent during ``window_s`` (MONITOR; not those scripts ran)."""
    seen: list[str] = []
    client = aioredis.Redis.from_url(url)
    try:
        async with client.monitor() as monitor:
            async def collect() -> None:
                while True:
                    info = await monitor.next_command()
                    if info.get("client_type") != "lua":
                        seen.append(str(info["command"]).split(" ", 1)[0].upper())

            with pytest.raises(TimeoutError):
                await asyncio.wait_for(collect(), timeout=window_s)
    finally:
        await client.aclose()
    return seen


async def test_an_idle_worker_with_eight_partitions_makes_at_most_five_round_trips_a_second(
        own: Harness) -> None:
    proc = start_worker(own.url, own.settings.prefix, partitions="8")
    try:
        await own.put_tool("pt-idle", returning("awake"))
        assert (await own.run("pt-idle", timeout_s=120)).ok  # started, and idle from now on
        commands = await top_level_commands(own.url, IDLE_WINDOW_S)
    finally:
        kill(proc)
    assert len(commands) <= IDLE_MAX_PER_S * IDLE_WINDOW_S, sorted(commands)
    assert "XREADGROUP" in commands  # it was reading, blocked, all along


async def test_every_command_published_after_a_flushall_is_answered_without_a_restart(
        own: Harness) -> None:
    procs = [start_worker(own.url, own.settings.prefix, partitions="4", claim_idle_ms="1000")
             for _ in range(2)]
    try:
        await own.put_tool("pt-flush", returning("still here"))
        assert (await own.run("pt-flush", timeout_s=120)).ok
        stop, loaded = asyncio.Event(), asyncio.Event()

        async def load() -> None:  # commands keep coming while Valkey loses everything
            published = 0
            while not stop.is_set():
                await publish(own.client, own.keys, own.command("pt-flush"))
                published += 1
                if published == 200:
                    loaded.set()

        loader = asyncio.create_task(load())
        await asyncio.wait_for(loaded.wait(), timeout=60)
        await own.client.flushall()
        stop.set()
        await loader
        await own.put_tool("pt-flush", returning("still here"))  # the flush took it too
        after = await last_id(own.client, own.keys.results)
        commands = [own.command("pt-flush") for _ in range(40)]
        for command in commands:
            await publish(own.client, own.keys, command)
        found = await wait_results(own.client, own.keys.results,
                                   {c.commandId for c in commands}, after=after, timeout_s=120)
    finally:
        for proc in procs:
            kill(proc)
    assert all(results[0].ok for results in found.values()) and len(found) == 40


async def get(port: int, path: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        return await http.get(path)


async def gauge(port: int, name: str) -> float:
    fams = {f.name: f for f in text_string_to_metric_families((await get(port, "/metrics")).text)}
    return fams[name].samples[0].value


async def worker_up(port: int) -> float:
    return await gauge(port, "chatflow_worker_up")


async def test_a_reader_that_cannot_resume_fails_liveness_and_the_up_gauge_until_it_heals(
        bare: Harness) -> None:
    # The command stream's key replaced by a string: the group cannot be recreated (XGROUP
    # CREATE answers WRONGTYPE), so the reader fails on every read, for a reason a restart
    # of this worker would clear once someone removes the key, and no Redis outage explains.
    port = free_port()
    await bare.start_worker(metrics_port=port, metrics_host="127.0.0.1", claim_idle_ms=500)
    assert (await get(port, "/health/live")).status_code == 200
    assert await worker_up(port) == 1
    assert await gauge(port, "chatflow_worker_ready") == 1  # what ChatflowWorkersNotReady reads
    await bare.client.delete(bare.keys.commands)
    await bare.client.set(bare.keys.commands, "not a stream")

    async def not_live() -> bool:
        return (await get(port, "/health/live")).status_code == 503

    await until(not_live, 30, "/health/live fails")
    live = await get(port, "/health/live")
    assert "cannot resume" in live.text and "WRONGTYPE" in live.text
    assert await worker_up(port) == 0
    assert (await get(port, "/health/ready")).status_code == 503
    assert await gauge(port, "chatflow_worker_ready") == 0

    await bare.client.delete(bare.keys.commands)  # the groups can be recreated again

    async def live_again() -> bool:
        return (await get(port, "/health/live")).status_code == 200 and await worker_up(port) == 1

    await until(live_again, 30, "the reader heals")
    await bare.put_tool("pt-healed", returning("ok"))
    assert (await bare.run("pt-healed")).ok


async def test_a_lost_consumer_group_is_recreated_with_an_error_line_and_reading_resumes(
        harness: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    await harness.client.xgroup_destroy(harness.keys.commands, COMMANDS_GROUP)
    await harness.put_tool("pt-regroup", returning("again"))
    assert (await harness.run("pt-regroup")).ok
    out = capsys.readouterr()
    assert "consumer group missing" in out.out + out.err


async def test_readiness_reports_a_valkey_full_under_noeviction(own: Harness) -> None:
    worker = await own.start_worker()
    assert (await worker.ready())[0]
    await own.client.config_set("maxmemory-policy", "noeviction")
    await own.client.config_set("maxmemory", 1)
    try:
        ready, why = await worker.ready()
    finally:
        await own.client.config_set("maxmemory", 0)
    assert not ready and "Valkey is full" in why and "OOM" in why
    assert (await worker.ready())[0]


async def test_readiness_reports_writes_refused_with_oom_since_the_last_check(
        own: Harness) -> None:
    worker = await own.start_worker()
    assert (await worker.ready())[0]
    await own.client.config_set("maxmemory-policy", "noeviction")
    await own.client.config_set("maxmemory", 1)
    try:
        with pytest.raises(aioredis.ResponseError, match="maxmemory"):
            await own.client.set(f"{own.settings.prefix}big", "x" * 1000)
    finally:
        await own.client.config_set("maxmemory", 0)
    ready, why = await worker.ready()
    assert not ready and "writes for lack of memory (OOM)" in why
    assert (await worker.ready())[0]  # nothing refused since: ready again


async def consumers(client: aioredis.Redis, stream: str, group: str) -> dict[str, int]:
    return {c["name"].decode(): int(c["pending"])
            for c in await client.xinfo_consumers(stream, group)}


async def test_recovery_removes_consumers_idle_past_the_claim_window_with_nothing_pending(
        bare: Harness) -> None:
    worker = await bare.start_worker(claim_idle_ms=500, claim_interval_ms=100)
    stream = bare.keys.outbox(0)
    await bare.client.xreadgroup(RELAY_GROUP, "gone-worker", {stream: ">"}, count=1)
    assert "gone-worker" in await consumers(bare.client, stream, RELAY_GROUP)

    async def forgotten() -> bool:
        return "gone-worker" not in await consumers(bare.client, stream, RELAY_GROUP)

    await until(forgotten, 30, "the idle consumer is removed")
    assert worker.consumer in await consumers(bare.client, stream, RELAY_GROUP)


async def test_a_consumer_holding_pending_entries_is_never_removed(bare: Harness) -> None:
    settings = bare.settings.model_copy(update={"claim_idle_ms": 100})
    worker = Worker(settings, bare.url)
    try:
        recovery = Recovery(worker.store, worker.machine, settings, "me")
        stream, group = f"{bare.settings.prefix}private:{uuid.uuid4().hex[:6]}", "g"
        await bare.client.xgroup_create(stream, group, id="0", mkstream=True)
        await bare.client.xadd(stream, {"n": "1"})
        await bare.client.xreadgroup(group, "holder", {stream: ">"}, count=1)
        await bare.client.xreadgroup(group, "empty", {stream: ">"}, count=1)

        async def both_idle() -> bool:
            return all(int(c["idle"]) > 100 for c in await bare.client.xinfo_consumers(stream, group))

        await until(both_idle, 10, "both consumers idle past the window")
        assert await recovery.forget_idle_consumers([(stream, group)]) == 1
        assert await consumers(bare.client, stream, group) == {"holder": 1}
    finally:
        await worker.client.aclose()
        await worker.read_client.aclose()
        await worker.http.aclose()
        worker.sandbox.close()
