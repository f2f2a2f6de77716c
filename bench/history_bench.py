"""The run history's write cost per execution: ``python -m bench.history_bench --url URL``.

Writes ``--executions`` synthetic runs (a root with ``--steps`` trace entries each, the size
of a typical httpCall + script + return run) in batches of ``--batch``, as the projection
does (one transaction per batch), into a fresh database, and prints the wall time and the
writer process's CPU per execution. The database's own CPU is not included for PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from chatflow.handlers.history.capture import Captured
from chatflow.handlers.history.db import engine_for, upgrade
from chatflow.handlers.history.writer import HistoryWriter


def made(n: int, steps: int) -> Captured:
    exec_id = f"0-{n:032x}"
    run = {"execution_id": exec_id, "root_execution_id": exec_id, "parent_execution_id": None,
           "depth": 0, "tool_id": "t-bench", "published_tool_id": "pt-bench",
           "root_published_tool_id": "pt-bench", "def_hash": "d" * 40,
           "contact_id": f"55119{n % 10_000:08d}", "command_id": f"cmd-{n}", "status": "ok",
           "error_code": None, "error_message": None, "result": "Praça da Sé",
           "inputs": {"cep": "01001000"}, "started_ms": 1_800_000_000_000 + n,
           "ended_ms": 1_800_000_000_012 + n, "duration_ms": 12, "trace": "stored",
           "forked_from_execution_id": None, "forked_from_block_id": None}
    trace = [{"execution_id": exec_id, "seq": i, "type": "block", "at_ms": 1_800_000_000_000 + n,
              "block_id": f"b{i}", "block_type": "httpCall", "duration_ms": 3, "ok": True,
              "error_code": None, "error_message": None, "matched_condition_id": None,
              "next_block": f"b{i + 1}", "child_execution_id": None, "http_method": "GET",
              "http_url": "https://viacep.com.br/ws/01001000/json/", "http_status": 200,
              "result": None, "writes": {"status": 200, "body": {"logradouro": "Praça da Sé"}},
              "detail": {"url": "https://viacep.com.br/ws/01001000/json/", "method": "GET"}}
             for i in range(steps)]
    return Captured(run, trace)


async def main(url: str, executions: int, batch: int, steps: int) -> None:
    engine = engine_for(url)
    await upgrade(engine)
    writer = HistoryWriter(engine)
    runs = [made(n, steps) for n in range(executions)]
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, executions, batch):
        await writer.write(runs[i:i + batch])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await engine.dispose()
    print(f"{engine.url.get_backend_name()}: {executions} executions x {steps} steps, batches "
          f"of {batch}: {executions / wall:,.0f} exec/s, {wall / executions * 1e6:,.0f} µs wall "
          f"and {cpu / executions * 1e6:,.0f} µs writer CPU per execution")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--executions", type=int, default=5000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=5)
    a = p.parse_args()
    asyncio.run(main(a.url, a.executions, a.batch, a.steps))
