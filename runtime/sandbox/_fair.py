"""Per-owner queues served round-robin, so one tool's slow scripts cannot starve another's."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Container
from typing import Generic, TypeVar

T = TypeVar("T")


class FairQueue(Generic[T]):
    """FIFO per owner; batches take one item per owner in turn (the ring's order)."""

    def __init__(self) -> None:
        self._queues: OrderedDict[str, deque[T]] = OrderedDict()

    def __bool__(self) -> bool:
        return bool(self._queues)

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def push(self, owner: str, item: T) -> None:
        queue = self._queues.get(owner)
        if queue is None:
            queue = self._queues[owner] = deque()
        queue.append(item)

    def push_front(self, owner: str, items: list[T]) -> None:
        """Give items back (unrun) ahead of the owner's other items, keeping their order."""
        if not items:
            return
        queue = self._queues.get(owner)
        if queue is None:
            # A returning owner goes to the back of the ring: others are served first.
            queue = self._queues[owner] = deque()
        queue.extendleft(reversed(items))

    def take(self, limit: int, slow: Container[str] = ()) -> list[tuple[str, T]]:
        """Up to ``limit`` items, one per owner per turn; served owners move to the back.

        A ``slow`` owner's item is a batch on its own when that owner's turn comes, and
        is left out of other batches, so quick owners' results never wait behind it.
        """
        first = next(iter(self._queues), None)
        if first is not None and first in slow:
            return [self._pop(first)]
        taken: list[tuple[str, T]] = []
        while len(taken) < limit:
            owner = next((o for o in self._queues if o not in slow), None)
            if owner is None:
                break
            taken.append(self._pop(owner))
        return taken

    def _pop(self, owner: str) -> tuple[str, T]:
        queue = self._queues[owner]
        item = queue.popleft()
        if queue:
            self._queues.move_to_end(owner)
        else:
            del self._queues[owner]
        return owner, item

    def drain(self) -> list[T]:
        items = [item for queue in self._queues.values() for item in queue]
        self._queues.clear()
        return items
