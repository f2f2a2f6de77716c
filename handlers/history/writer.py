"""Writing the history: batched, idempotent, and pruned in batches.

One transaction per consumed batch of events: every run row, every step and every
definition in one multi-row INSERT each, ``ON CONFLICT DO NOTHING`` on their keys (the
execution id, ``(execution id, position)``, the definition's hash). A redelivered, reclaimed
or replayed event therefore changes nothing: what was stored first stays.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .capture import Captured
from .schema import definitions, runs, steps

# SQLite allows 32,766 bound parameters per statement; a step row has 19 columns.
_CHUNK = 500


def _insert(conn: AsyncConnection, table: sa.Table) -> Any:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


@dataclass(frozen=True, slots=True)
class Written:
    new: int
    duplicates: int


@dataclass(frozen=True, slots=True)
class Pruned:
    traces: int  # runs whose steps were deleted (their row stays, trace = 'pruned')
    runs: int
    definitions: int = 0  # stored definitions no run uses any more


class HistoryWriter:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.written = 0
        self.duplicates = 0

    async def write(self, captured: Sequence[Captured],
                    defs: dict[str, Any] | None = None) -> Written:
        if not captured:
            return Written(0, 0)
        now = int(time.time() * 1000)
        new = 0
        async with self.engine.begin() as conn:
            rows = [c.run for c in captured]
            for i in range(0, len(rows), _CHUNK):
                stmt = (_insert(conn, runs).on_conflict_do_nothing(index_elements=["execution_id"])
                        .returning(runs.c.execution_id))
                new += len((await conn.execute(stmt, rows[i:i + _CHUNK])).all())
            step_rows = [s for c in captured for s in c.steps]
            for i in range(0, len(step_rows), _CHUNK):
                await conn.execute(_insert(conn, steps).on_conflict_do_nothing(
                    index_elements=["execution_id", "seq"]), step_rows[i:i + _CHUNK])
            if defs:
                await conn.execute(
                    _insert(conn, definitions).on_conflict_do_nothing(index_elements=["def_hash"]),
                    [{"def_hash": h, "definition": d, "first_seen_ms": now}
                     for h, d in defs.items()])
        dup = len(captured) - new
        self.written += new
        self.duplicates += dup
        return Written(new, dup)

    async def prune(self, *, now_ms: int, trace_retention_ms: int, run_retention_ms: int,
                    batch: int = 1000, max_batches: int = 10) -> Pruned:
        """Delete traces older than their retention, then runs older than theirs, ``batch``
        runs per transaction and at most ``max_batches`` transactions per call (a backlog is
        worked off over several calls, never in one long lock)."""
        traces = removed = 0
        trace_floor, run_floor = now_ms - trace_retention_ms, now_ms - run_retention_ms
        for _ in range(max_batches):
            async with self.engine.begin() as conn:
                ids = list((await conn.execute(
                    sa.select(runs.c.execution_id)
                    .where(runs.c.ended_ms < trace_floor, runs.c.trace == "stored")
                    .limit(batch))).scalars())
                if ids:
                    await conn.execute(sa.delete(steps).where(steps.c.execution_id.in_(ids)))
                    await conn.execute(sa.update(runs).where(runs.c.execution_id.in_(ids))
                                       .values(trace="pruned"))
            traces += len(ids)
            if len(ids) < batch:
                break
        for _ in range(max_batches):
            async with self.engine.begin() as conn:
                ids = list((await conn.execute(
                    sa.select(runs.c.execution_id).where(runs.c.ended_ms < run_floor)
                    .limit(batch))).scalars())
                if ids:
                    await conn.execute(sa.delete(steps).where(steps.c.execution_id.in_(ids)))
                    await conn.execute(sa.delete(runs).where(runs.c.execution_id.in_(ids)))
            removed += len(ids)
            if len(ids) < batch:
                break
        return Pruned(traces, removed, await self._unused_definitions(batch))

    async def _unused_definitions(self, batch: int) -> int:
        """Delete definitions no run uses any more (a fork's edited definition goes with the
        fork's runs), at most ``batch`` per call. A definition stored in the same batch as
        its first run is never orphaned: both are written in one transaction."""
        used = sa.select(runs.c.def_hash).where(runs.c.def_hash == definitions.c.def_hash)
        async with self.engine.begin() as conn:
            hashes = list((await conn.execute(
                sa.select(definitions.c.def_hash).where(~sa.exists(used)).limit(batch)
            )).scalars())
            if hashes:
                await conn.execute(sa.delete(definitions)
                                   .where(definitions.c.def_hash.in_(hashes)))
        return len(hashes)
