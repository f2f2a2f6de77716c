"""Leases on in-flight stream entries: a live owner renews them, reclaim takes only lapsed ones.

A pending entry's idle time is its lease. While a batch runs, its worker resets the idle
time of the batch's entries every ``lease_renew_ms`` (renew.lua: XCLAIM ... JUSTID, for
entries it still owns, which does not count a delivery). Reclaim takes entries idle for
``claim_idle_ms``, so it takes only what a dead worker, or a stuck one, holds: a healthy
20 s HTTP call is not run a second time because a 15 s idle limit passed (arq sizes its
lease to the job; Dramatiq requeues when a worker's heartbeat lapses).

"Stuck" is a worker that is alive but whose batch never ends: an entry is renewed for at
most ``max_hold_ms`` (the tool deadline plus one idle period), after which the lease
lapses and another worker finishes the entry (its tree is answered by then, so that is an
ack). A worker never reruns an entry it still holds, even if its own lease lapsed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .store import Store

_CHUNK = 500  # ids per script call: Lua's unpack has a stack limit


class Leases:
    def __init__(self, store: Store, consumer: str, *, max_hold_ms: int) -> None:
        self.store = store
        self.consumer = consumer
        self.max_hold_ms = max_hold_ms
        self._held: dict[tuple[str, str], dict[bytes, float]] = {}
        self.renewed = 0

    def hold(self, stream: str, group: str, ids: list[bytes]) -> Callable[[], None]:
        """Keep renewing the leases of ``ids`` until the returned function is called."""
        held = self._held.setdefault((stream, group), {})
        taken = time.monotonic()
        for entry_id in ids:
            held[entry_id] = taken

        def release() -> None:
            for entry_id in ids:
                held.pop(entry_id, None)

        return release

    def holds(self, stream: str, group: str) -> set[bytes]:
        """The entries of ``stream`` this worker is working on (reclaim skips them)."""
        return set(self._held.get((stream, group), ()))

    async def renew(self) -> int:
        """Renew every held entry's lease that is younger than ``max_hold_ms``."""
        oldest = time.monotonic() - self.max_hold_ms / 1000
        calls: list[tuple[str, str, list[bytes]]] = []
        for (stream, group), held in self._held.items():
            ids = [i for i, taken in held.items() if taken >= oldest]
            calls += [(stream, group, ids[k:k + _CHUNK]) for k in range(0, len(ids), _CHUNK)]
        if not calls:
            return 0
        renewed = sum(await self.store.renew_leases(calls, self.consumer))
        self.renewed += renewed
        return renewed
