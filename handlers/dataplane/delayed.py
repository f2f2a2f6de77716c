"""Delayed steps: a retry's wait, held by Valkey and not by a worker.

A block whose attempt failed and may be tried again commits a transition with no state
write and one delayed step (runtime/retry.py decides; ``Transition.delayed``): a member of
the partition's zset ``{cf:N}:delayed``, scored by the ms it is due. While it waits, no
worker slot, connection, task or pending stream entry is held for it, so a worker killed
during the wait loses nothing and holds nothing up.

When it is due, ``lua/promote.lua`` moves it onto the partition's step stream in one atomic
script (it is in the zset or on the stream, never both), and it runs like any step: its
version check makes a duplicate, or a tree answered meanwhile (a cancel, the deadline),
commit nothing. Two paths promote, both idempotent:

* the worker that committed the wait wakes at its due time (:class:`DelayedSteps`, one
  loop per worker whatever the number of waits: a heap of due times, no task per wait);
* every worker's reaper pass (``CHATFLOW_REAPER_INTERVAL_MS``) probes the delayed zsets in
  the same script call as the deadlines and promotes what is due: the retry of a worker
  that died is made by another, at most one reaper interval late.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time

import structlog

from .store import PROMOTE, Store

log = structlog.get_logger("chatflow.delayed")

BATCH = 200  # steps moved per script call (a call holds Valkey for its duration)
RETRY_AFTER_ERROR_MS = 500


def now_ms() -> int:
    return int(time.time() * 1000)


class DelayedSteps:
    """Promotes due delayed steps: those this worker committed at their due time, the
    others when the reaper's probe finds them (``promote``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._due: list[tuple[int, int]] = []  # (due ms, partition), a heap
        self._wake = asyncio.Event()
        self.promoted = 0

    def note(self, partition: int, due_ms: int) -> None:
        """A delayed step of ``partition`` committed by this worker, due at ``due_ms``."""
        heapq.heappush(self._due, (due_ms, partition))
        if self._due[0][0] == due_ms:
            self._wake.set()  # earlier than what the loop sleeps for

    async def promote(self, partition: int) -> int:
        """Move every due step of ``partition`` onto its step stream; how many moved."""
        keys = [self.store.keys.delayed(partition), self.store.keys.steps(partition)]
        moved = 0
        while True:
            (n,) = await self.store.run_scripts([PROMOTE.command(keys, [now_ms(), BATCH])])
            moved += int(n)
            if int(n) < BATCH:
                break
        self.promoted += moved
        return moved

    async def run(self) -> None:
        """Until cancelled: sleep until the earliest noted due time, promote its partition."""
        while True:
            now = now_ms()
            partitions: set[int] = set()
            while self._due and self._due[0][0] <= now:
                partitions.add(heapq.heappop(self._due)[1])
            for partition in sorted(partitions):
                try:
                    await self.promote(partition)
                except Exception as exc:  # Valkey away: the reaper's probe promotes later
                    log.warning("delayed steps not promoted; retrying", partition=partition,
                                error=str(exc))
                    heapq.heappush(self._due, (now + RETRY_AFTER_ERROR_MS, partition))
            self._wake.clear()
            timeout = (self._due[0][0] - now_ms()) / 1000 if self._due else None
            if timeout is None or timeout > 0:
                with contextlib.suppress(TimeoutError):  # the time came: promote what is due
                    await asyncio.wait_for(self._wake.wait(), timeout)
