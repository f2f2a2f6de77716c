"""The history projection: ``stream:tool-executions`` -> SQL, in the consumer group
``chatflow-history``.

Its own group, apart from the Valkey projection's ``core-tool-executions``: each keeps its
own position, so a slow or stopped database never holds the 7-day metrics back, and a
rebuild of one does not replay the other. The worker runs it (``handlers/dataplane/worker.py``) when
``CHATFLOW_HISTORY_URL`` is set; ``chatflow up`` sets it to a SQLite file in its data folder.

A batch is written, then acknowledged: a crash in between redelivers it, and the writes
are idempotent. A database error leaves the batch pending; it is reclaimed later. Unlike
the runtime's streams, a history entry is never dead-lettered for its delivery count: a
database that is down for an hour must not cost the runs of that hour.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from ..keys import HISTORY_GROUP, Keys, origin_of
from ..projections.progress import GroupProgress
from ..redaction import SecretIndex, redact_definition
from ..redis_client import Client, Entry, ensure_group
from ..settings import Settings
from .backfill import backfill_workspaces, owners
from .capture import Captured, capture, parse_events, read_logs
from .db import HistoryError, check, engine_for, upgrade
from .writer import HistoryWriter

log = structlog.get_logger("chatflow.history")

Process = Callable[[list[Entry]], Awaitable[None]]


class HistoryProjection:
    def __init__(self, client: Client, keys: Keys, engine: AsyncEngine, settings: Settings,
                 consumer: str = "history") -> None:
        self.client = client
        self.keys = keys
        self.engine = engine
        self.settings = settings
        self.consumer = consumer
        self.writer = HistoryWriter(engine)
        self.expired = 0  # runs stored without a trace: their event log was gone
        self.progress = GroupProgress(client, keys.executions, HISTORY_GROUP)
        self.secrets = SecretIndex(client, keys)
        self._last_prune = 0.0

    @classmethod
    def from_settings(cls, client: Client, keys: Keys, settings: Settings,
                      consumer: str) -> HistoryProjection:
        return cls(client, keys, engine_for(settings.history_url), settings, consumer)

    async def start(self, *, migrate: bool = False) -> None:
        """Check (or, for ``chatflow up``'s embedded SQLite, apply) the migrations, then
        create the group at id 0, so every event still in the stream is taken."""
        if migrate:
            await upgrade(self.engine)
        await check(self.engine)
        filled = await backfill_workspaces(self.engine, await owners(self.client, self.keys))
        if filled:
            log.info("history rows given their workspace", rows=filled)
        await self.ensure_group()

    async def ensure_group(self) -> None:
        await ensure_group(self.client, self.keys.executions, HISTORY_GROUP)

    async def capture(self, entries: list[Entry]) -> tuple[list[Captured], dict[str, Any]]:
        events = parse_events(entries)
        ids = [e.executionId for _, e, _ in events if e.executionId]
        roots = [e.rootExecutionId for _, e, _ in events
                 if e.rootExecutionId and e.rootExecutionId not in ids]
        logs = await read_logs(self.client, self.keys, list(dict.fromkeys(ids + roots)))
        captured = [capture(dedup, event, entry_ms, logs.get(event.executionId),
                            logs.get(event.rootExecutionId),
                            await self.secrets.of(event.workspace))
                    for dedup, event, entry_ms in events]
        defs = await self._definitions(captured)
        for c in captured:  # a fork is filed under the tool it forked, and says it is a fork
            c.run["root_published_tool_id"] = origin_of(c.run["root_published_tool_id"])
            fork = (defs.get(c.def_hash or "") or {}).get("forkOf")
            if c.run["depth"] == 0 and isinstance(fork, dict):
                c.run["forked_from_execution_id"] = str(fork.get("executionId") or "")[:200]
                c.run["forked_from_block_id"] = str(fork.get("blockId") or "")[:200]
        return captured, defs

    async def _definitions(self, captured: list[Captured]) -> dict[str, Any]:
        """The definitions the runs used, by content hash: the tree's copy, else the published
        tool itself while its hash still matches (a tree answered in the hop that took its
        command writes no copy: handlers/dataplane/store.py)."""
        refs = list(dict.fromkeys((c.partition, c.def_hash, str(c.run.get("published_tool_id") or ""))
                                  for c in captured if c.def_hash and c.partition is not None))
        if not refs:
            return {}
        async with self.client.pipeline(transaction=False) as pipe:
            for partition, digest, _pt in refs:
                pipe.get(self.keys.definition(int(partition or 0), str(digest)))
            copies = await pipe.execute()
        missing = [(i, refs[i][2]) for i, blob in enumerate(copies) if blob is None and refs[i][2]]
        if missing:
            async with self.client.pipeline(transaction=False) as pipe:
                for _i, pt in missing:
                    pipe.get(self.keys.tool(pt))
                tools = await pipe.execute()
            for (i, _pt), raw in zip(missing, tools, strict=True):
                # Published again since: not the definition the run used.
                if raw is not None and hashlib.sha1(raw, usedforsecurity=False).hexdigest() == refs[i][1]:
                    copies[i] = raw
        workspaces = {c.def_hash: str(c.run["workspace"]) for c in captured if c.def_hash}
        out: dict[str, Any] = {}
        for (_p, digest, _pt), blob in zip(refs, copies, strict=True):
            if blob is None:
                continue
            try:
                # Static header values of an httpCall may be credentials: masked here too (a
                # value that is only a {{variable}} reference holds none, and is kept).
                secrets = await self.secrets.of(workspaces.get(digest, "default"))
                out[str(digest)] = redact_definition(json.loads(blob), secrets)
            except ValueError:
                continue
        return out

    async def apply(self, entries: list[Entry]) -> int:
        captured, defs = await self.capture(entries)
        written = await self.writer.write(captured, defs)
        self.expired += sum(1 for c in captured if c.run["trace"] == "expired")
        return written.new

    async def process(self, entries: list[Entry]) -> None:
        """The consumer-group handler: write, then ack; a database error leaves the batch
        pending (logged once per batch) for the reclaim loop."""
        try:
            await self.apply(entries)
        except (SQLAlchemyError, OSError) as exc:
            log.warning("history write failed; batch left pending", error=str(exc)[:300],
                        entries=len(entries))
            return
        ids = [entry_id for entry_id, _ in entries]
        if ids:
            await self.client.xack(self.keys.executions, HISTORY_GROUP, *ids)
        await self.progress.advanced()

    async def reclaim(self, dispatch: Process, held: set[bytes] | None = None) -> int:
        """Take entries another consumer left idle (it died, or the database was down)."""
        s = self.settings
        await self.ensure_group()  # Valkey may have restarted without persistence
        pending = await self.client.xpending_range(self.keys.executions, HISTORY_GROUP,
                                                   min="-", max="+", count=s.batch_size,
                                                   idle=s.claim_idle_ms)
        ids = [p["message_id"] for p in pending if p["message_id"] not in (held or set())]
        if not ids:
            return 0
        claimed: list[Entry] = await self.client.xclaim(
            self.keys.executions, HISTORY_GROUP, self.consumer, s.claim_idle_ms, ids)
        fresh = [e for e in claimed if e[1]]
        gone = [e[0] for e in claimed if not e[1]]  # trimmed from the stream meanwhile
        if gone:
            await self.client.xack(self.keys.executions, HISTORY_GROUP, *gone)
        if fresh:
            await dispatch(fresh)
        return len(fresh)

    async def prune(self, now_ms: int | None = None) -> None:
        """Retention, at most every ``CHATFLOW_HISTORY_PRUNE_INTERVAL_S``."""
        if now_ms is None and time.monotonic() - self._last_prune < \
                self.settings.history_prune_interval_s:
            return
        self._last_prune = time.monotonic()
        s = self.settings
        pruned = await self.writer.prune(
            now_ms=now_ms if now_ms is not None else int(time.time() * 1000),
            trace_retention_ms=s.history_trace_retention_s * 1000,
            run_retention_ms=s.history_run_retention_s * 1000, batch=s.history_prune_batch)
        if pruned.traces or pruned.runs or pruned.definitions:
            log.info("history pruned", traces=pruned.traces, runs=pruned.runs,
                     definitions=pruned.definitions)

    async def tick(self, dispatch: Process, held: set[bytes] | None = None) -> None:
        """One maintenance round (the worker's reclaim loop): reclaim, then prune."""
        await self.reclaim(dispatch, held)
        with contextlib.suppress(SQLAlchemyError, OSError):
            await self.prune()

    async def caught_up(self) -> bool:
        return await self.progress.caught_up()

    async def wait_caught_up(self, timeout_s: float = 30.0) -> None:
        await self.progress.wait_caught_up(timeout_s)

    async def aclose(self) -> None:
        await self.engine.dispose()


__all__ = ["HISTORY_GROUP", "HistoryError", "HistoryProjection"]
