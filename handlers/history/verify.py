"""Compare the history with its source: every execution event still in
``stream:tool-executions`` must have exactly one run row, with the same tool, status,
duration and end (``chatflow history verify``, ``chatflow projections rebuild --verify``).

Rows are keyed by execution id, so a duplicate cannot exist; what can go wrong is a missing
row (an event the projection never wrote) or a row that says something else than its event
(a bug in capture, or a row written by another version). Tool, status, duration and end are
what the 7-day metric buckets are made of, so a history that agrees on them can rebuild them.
Run it once the projection has caught up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from ..keys import Keys
from ..redis_client import Client
from .capture import _ms, parse_events, status_of
from .schema import runs

MAX_REPORTED = 1_000  # differences kept for printing; the counts stay exact beyond it


@dataclass(slots=True)
class Verified:
    events: int = 0  # distinct execution events in the stream
    stored: int = 0  # of those, with a row
    missing: list[str] = field(default_factory=list)
    # (execution id, column, the stream's value, the history's value)
    differ: list[tuple[str, str, Any, Any]] = field(default_factory=list)
    differing: int = 0  # rows with at least one difference

    @property
    def ok(self) -> bool:
        return not self.missing and not self.differing


_COLUMNS = ("tool_id", "status", "duration_ms", "ended_ms")


async def verify(client: Client, keys: Keys, engine: AsyncEngine, page: int = 1000) -> Verified:
    out = Verified()
    seen: set[str] = set()
    cursor = "-"
    cols = [runs.c.execution_id, *(runs.c[c] for c in _COLUMNS)]
    async with engine.connect() as conn:
        while True:
            batch = await client.xrange(keys.executions, min=cursor, max="+", count=page)
            if not batch:
                break
            expected: dict[str, tuple[Any, ...]] = {}
            for dedup, event, entry_ms in parse_events(batch):
                if dedup in seen:
                    continue
                seen.add(dedup)
                expected[dedup] = (event.toolId or event.publishedToolId, status_of(event),
                                   max(0, event.durationMs), _ms(event.occurredAt, entry_ms))
            if expected:
                rows = (await conn.execute(sa.select(*cols).where(
                    runs.c.execution_id.in_(list(expected))))).all()
                found = {r[0]: tuple(r[1:]) for r in rows}
                out.events += len(expected)
                out.stored += len(found)
                for exec_id, want in expected.items():
                    got = found.get(exec_id)
                    if got is None:
                        out.missing.append(exec_id)
                        continue
                    wrong = [(exec_id, c, w, g) for c, w, g in zip(_COLUMNS, want, got, strict=True)
                             if w != g]
                    if wrong:
                        out.differing += 1
                        out.differ += wrong[:max(0, MAX_REPORTED - len(out.differ))]
            cursor = "(" + batch[-1][0].decode()
            if len(batch) < page:
                break
    return out
