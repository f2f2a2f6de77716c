"""Retention: traces after CHATFLOW_HISTORY_TRACE_RETENTION_S, runs after
CHATFLOW_HISTORY_RUN_RETENTION_S, deleted in batches."""

from __future__ import annotations

import sqlalchemy as sa

from chatflow.handlers.history.capture import Captured
from chatflow.handlers.history.db import engine_for
from chatflow.handlers.history.schema import runs, steps
from chatflow.handlers.history.writer import HistoryWriter

DAY = 86_400_000
NOW = 1_800_000_000_000


def run_at(n: int, ended_ms: int) -> Captured:
    exec_id = f"0-run{n}"
    run = {"execution_id": exec_id, "root_execution_id": exec_id, "parent_execution_id": None,
           "depth": 0, "tool_id": "t", "published_tool_id": "pt",
           "root_published_tool_id": "pt", "def_hash": None,
           "contact_id": "c", "command_id": f"cmd-{n}", "status": "ok", "error_code": None,
           "error_message": None, "result": "x", "inputs": None, "started_ms": ended_ms - 5,
           "ended_ms": ended_ms, "duration_ms": 5, "trace": "stored",
           "forked_from_execution_id": None, "forked_from_block_id": None}
    trace = [{"execution_id": exec_id, "seq": i, "type": "block", "at_ms": ended_ms,
              "block_id": "b", "block_type": "return", "duration_ms": 0, "ok": True,
              "error_code": None, "error_message": None, "matched_condition_id": None,
              "next_block": None, "child_execution_id": None, "http_method": None,
              "http_url": None, "http_status": None, "result": None, "writes": None,
              "detail": None} for i in range(3)]
    return Captured(run, trace)


async def test_old_traces_then_old_runs_are_pruned_in_batches(migrated_url: str) -> None:
    engine = engine_for(migrated_url)
    writer = HistoryWriter(engine)
    try:
        fresh = [run_at(i, NOW - DAY) for i in range(3)]
        week_old = [run_at(10 + i, NOW - 8 * DAY) for i in range(5)]
        ancient = [run_at(20 + i, NOW - 91 * DAY) for i in range(4)]
        assert (await writer.write(fresh + week_old + ancient)).new == 12
        pruned = await writer.prune(now_ms=NOW, trace_retention_ms=7 * DAY,
                                    run_retention_ms=90 * DAY, batch=2, max_batches=100)
        assert (pruned.traces, pruned.runs) == (9, 4)
        async with engine.connect() as conn:
            left = {r.execution_id: r.trace for r in await conn.execute(sa.select(runs))}
            traced = set((await conn.execute(sa.select(steps.c.execution_id).distinct())).scalars())
        assert left == {**{c.run["execution_id"]: "stored" for c in fresh},
                        **{c.run["execution_id"]: "pruned" for c in week_old}}
        assert traced == {c.run["execution_id"] for c in fresh}
    finally:
        await engine.dispose()


async def test_one_prune_call_does_at_most_its_batches_and_the_next_goes_on(
        migrated_url: str) -> None:
    engine = engine_for(migrated_url)
    writer = HistoryWriter(engine)
    try:
        await writer.write([run_at(i, NOW - 100 * DAY) for i in range(7)])
        first = await writer.prune(now_ms=NOW, trace_retention_ms=7 * DAY,
                                   run_retention_ms=90 * DAY, batch=2, max_batches=2)
        assert first.runs == 4
        second = await writer.prune(now_ms=NOW, trace_retention_ms=7 * DAY,
                                    run_retention_ms=90 * DAY, batch=2, max_batches=2)
        assert second.runs == 3
    finally:
        await engine.dispose()
