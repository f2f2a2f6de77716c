"""How far the run history lags under the bench's load: ``python -m bench.history_lag --url URL``.

Real ``chatflow worker`` processes with ``CHATFLOW_HISTORY_URL`` set run ``bench-3`` (a callTool
of a child that returns: two runs per execution) with ``--window`` commands in flight, as
``bench.stream_bench`` does. Every ``--every`` seconds it samples the group ``chatflow-history``
(``XINFO GROUPS``: entries not yet delivered, delivered but not acknowledged), the results
answered so far and the root runs in the database. It prints the worst lag, how long after a
result its run's row was in the database (from the samples: the time until the rows reached
the results counted at each sample; the sampling period bounds its precision), and how long the
history took to catch up after the last result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from dataclasses import dataclass

import sqlalchemy as sa

from bench.stream_bench import BENCH_3, BENCH_CHILD, Driver, pct, spawn_workers
from chatflow.handlers.history.db import engine_for, upgrade
from chatflow.handlers.history.runner import HISTORY_GROUP
from chatflow.handlers.history.schema import runs
from chatflow.handlers.keys import Keys
from chatflow.handlers.operations.embedded import EmbeddedServer
from chatflow.handlers.redis_client import make_client
from tests.support.processes import stop


@dataclass(slots=True)
class Sample:
    at: float
    results: int
    rows: int  # root runs in the history
    lag: int  # entries not yet delivered to the group
    pending: int  # delivered, not acknowledged


async def main(url: str, redis_url: str, executions: int, workers: int, window: int,
               every: float) -> None:
    engine = engine_for(url)
    await upgrade(engine)
    prefix = f"hlag{uuid.uuid4().hex[:6]}:"
    keys = Keys(prefix, 4)
    client = make_client(redis_url)
    for record in (BENCH_CHILD, BENCH_3):
        await client.set(keys.tool(str(record["id"])), json.dumps(record))
    os.environ["CHATFLOW_HISTORY_URL"] = url  # spawn_workers passes the environment on
    procs = spawn_workers(redis_url, prefix, workers, baseline=False)
    samples: list[Sample] = []
    roots = sa.select(sa.func.count()).select_from(runs).where(runs.c.depth == 0)

    async def sample() -> Sample:
        lag = pending = 0
        for g in await client.xinfo_groups(keys.executions):
            if g["name"] in (HISTORY_GROUP, HISTORY_GROUP.encode()):
                lag, pending = int(g.get("lag") or 0), int(g.get("pending") or 0)
        async with engine.connect() as conn:
            rows = int((await conn.execute(roots)).scalar_one())
        return Sample(time.perf_counter(), int(await client.xlen(keys.results)), rows, lag,
                      pending)

    done = asyncio.Event()

    async def sampler() -> None:
        while not done.is_set():
            samples.append(await sample())
            await asyncio.sleep(every)  # a sampling period, not a synchronisation

    try:
        driver = Driver(redis_url, prefix, baseline=False)
        await driver.run("pt-bench", 32, 32)  # warm-up: workers up, scripts loaded
        warm = await sample()
        task = asyncio.create_task(sampler())
        wall, _lat = await driver.run("pt-bench", executions, window)
        last_result = time.perf_counter()
        caught_up = None
        deadline = last_result + 600
        while time.perf_counter() < deadline:
            s = await sample()
            if s.rows >= warm.rows + executions and s.lag == 0 and s.pending == 0:
                caught_up = s.at - last_result
                break
            await asyncio.sleep(every)
        done.set()
        await task
        delays = []
        for i, s in enumerate(samples):
            reached = next((t for t in samples[i:] if t.rows >= s.results), None)
            if reached is not None and s.results > warm.results:
                delays.append(reached.at - s.at)
        print(f"{engine.url.get_backend_name()}: {workers} worker(s), {executions} bench-3 "
              f"executions ({2 * executions} runs), {window} in flight: "
              f"{executions / wall:,.0f} exec/s")
        print(f"  chatflow-history: lag max {max(s.lag for s in samples)} entries, pending max "
              f"{max(s.pending for s in samples)}; result -> row p50 "
              f"{pct(delays, 0.5) * 1000 if delays else 0:,.0f} ms, "
              f"max {max(delays, default=0) * 1000:,.0f} ms "
              f"({len(delays)} samples, every {every * 1000:.0f} ms); caught up "
              + (f"{caught_up * 1000:,.0f} ms after the last result" if caught_up is not None
                 else "NOT within 600 s"))
        await driver.client.aclose()
    finally:
        for p in procs:
            stop(p)
        await client.aclose()
        await engine.dispose()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True, help="the history database (sqlite:///... or postgresql://...)")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL"))
    p.add_argument("--executions", type=int, default=2000)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--window", type=int, default=512)
    p.add_argument("--every", type=float, default=0.1, help="seconds between samples")
    a = p.parse_args()
    server = None if a.redis_url else EmbeddedServer().start()
    try:
        asyncio.run(main(a.url, a.redis_url or server.url, a.executions, a.workers, a.window,
                         a.every))
    finally:
        if server is not None:
            server.stop()
