"""Compare the history with its source: every execution event still in
``stream:tool-executions`` must have exactly one run row (``chatflow history verify``).

Rows are keyed by execution id, so a duplicate cannot exist; what can go wrong is a missing
row (an event the projection never wrote). Run it once the projection has caught up."""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from ..keys import Keys
from ..redis_client import Client
from .capture import parse_events
from .schema import runs


@dataclass(slots=True)
class Verified:
    events: int = 0  # distinct execution events in the stream
    stored: int = 0  # of those, with a row
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing


async def verify(client: Client, keys: Keys, engine: AsyncEngine, page: int = 1000) -> Verified:
    out = Verified()
    seen: set[str] = set()
    cursor = "-"
    async with engine.connect() as conn:
        while True:
            batch = await client.xrange(keys.executions, min=cursor, max="+", count=page)
            if not batch:
                break
            ids = [d for d, _e, _ms in parse_events(batch) if d not in seen]
            seen.update(ids)
            if ids:
                found = set((await conn.execute(sa.select(runs.c.execution_id)
                                                .where(runs.c.execution_id.in_(ids)))).scalars())
                out.events += len(ids)
                out.stored += len(found)
                out.missing += [i for i in ids if i not in found]
            cursor = "(" + batch[-1][0].decode()
            if len(batch) < page:
                break
    return out
