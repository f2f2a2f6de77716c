"""The registry of one process: the state folded from the log, kept caught up, and commits.

Every operation catches up with the log first, so any number of API processes
see each other's writes. A commit builds its event from the caught-up state and
appends it with the versions it read; if another process appended in between,
the versions differ, the append is refused, and the operation is rebuilt on the
new state (up to a few times), so its checks always hold against the latest log.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog

from chatflow.runtime.registry import Ref, RegistryState

from ..keys import Keys
from ..redis_client import Client
from .crypto import SecretBox
from .errors import ApiCode, Conflict
from .log import Append, RegistryLog, StaleVersion
from .projector import Projector
from .scope import SHELL, Scope

log = structlog.get_logger("chatflow.registry")
ATTEMPTS = 8


def now_ms() -> int:
    return int(time.time() * 1000)


class Registry:
    def __init__(self, client: Client, keys: Keys, box: SecretBox) -> None:
        self.client = client
        self.keys = keys
        self.box = box
        self.log = RegistryLog(client, keys)
        self.projector = Projector(client, keys, box)
        self.state = RegistryState()
        self.last_id = "0-0"
        self._lock = asyncio.Lock()
        self._started = False

    async def start(self) -> bool:
        """Fold the log; rebuild the projections when they are missing. True if rebuilt."""
        async with self._lock:
            if self._started:
                return False
            self._started = True
            projected = await self.client.get(self.keys.registry_projected)
            if projected is None:
                await self._rebuild()
                return True
            marker = projected.decode()
            dirty: set[Ref] = set()
            for entry_id, event in await self._read_all("0-0"):
                refs = self.state.apply(event)
                if _after(entry_id, marker):
                    dirty |= refs
                self.last_id = entry_id
            if dirty:
                await self.projector.write(self.state, dirty, self.last_id)
            await self._catch_up()
            return False

    async def rebuild(self) -> int:
        """Replay the whole log into fresh projections (what a publisher does at boot to warm the caches)."""
        async with self._lock:
            self._started = True
            return await self._rebuild()

    async def _rebuild(self) -> int:
        self.state = RegistryState()
        self.last_id = "0-0"
        refs: set[Ref] = set()
        entries = await self._read_all("0-0")
        for entry_id, event in entries:
            refs |= self.state.apply(event)
            self.last_id = entry_id
        # Everything the log ever touched is rewritten or deleted; a tool in the trash
        # has no tool:{publishedToolId}, so a rebuild never brings it back.
        refs |= {("tool", t) for t in self.state.tools} | {("pt", p) for p in self.state.published}
        await self.projector.clear_views()
        await self.projector.write(self.state, refs, self.last_id)
        log.info("registry projections rebuilt", events=len(entries))
        await self._catch_up()
        return len(entries)

    async def _read_all(self, after: str) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        while True:
            batch = await self.log.read(after)
            if not batch:
                return out
            out += batch
            after = batch[-1][0]

    async def catch_up(self) -> None:
        await self.start()
        async with self._lock:
            await self._catch_up()

    async def _catch_up(self) -> None:
        while True:  # read, project, read again: converges (see handlers.registry.projector)
            batch = await self.log.read(self.last_id)
            if not batch:
                return
            dirty: set[Ref] = set()
            for entry_id, event in batch:
                dirty |= self.state.apply(event)
                self.last_id = entry_id
            await self.projector.write(self.state, dirty, self.last_id)

    async def commit(self, build: Callable[[RegistryState], Append], scope: Scope = SHELL) -> str:
        """Append the event ``build`` makes from the latest state; rebuilt on a race.

        The event is stamped with ``scope``: its workspace (the fold files new records
        there) and its actor (the audit log's "who")."""
        await self.start()
        async with self._lock:
            for _attempt in range(ATTEMPTS):
                await self._catch_up()
                item = build(self.state)
                item.event.setdefault("at", now_ms())
                item.event["workspace"] = scope.workspace
                item.event["actor"] = scope.actor
                try:
                    entry_id = await self.log.append(item)
                except StaleVersion as stale:
                    log.info("registry append raced; retrying", field=stale.name)
                    continue
                await self._catch_up()
                return entry_id
        raise Conflict("the registry kept changing under this request; try again",
                       code=ApiCode.REGISTRY_BUSY)


def _after(entry_id: str, marker: str) -> bool:
    def key(x: str) -> tuple[int, int]:
        ms, _, seq = x.partition("-")
        return int(ms), int(seq or 0)

    return key(entry_id) > key(marker)
