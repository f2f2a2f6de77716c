"""How far a consumer group of ``stream:tool-executions`` has got: shared by the two read
models of that stream (the metrics projection, ``execlog``, and the run history,
``handlers/history/runner.py``), which differ only in their group's name."""

from __future__ import annotations

import asyncio
from typing import Any

from ..redis_client import Client


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def entry_id(value: Any) -> tuple[int, int]:
    """A stream entry id as a comparable (ms, seq)."""
    ms, _, seq = text(value).partition("-")
    return int(ms or 0), int(seq or 0)


class GroupProgress:
    """Wakes waiters when this process's consumer of ``group`` has handled a batch, and says
    whether the group has caught up with the stream (everything delivered and acked)."""

    def __init__(self, client: Client, stream: str, group: str) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self._progress: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        # Made on first use: the condition belongs to the loop that waits on it.
        if self._progress is None:
            self._progress = asyncio.Condition()
        return self._progress

    async def advanced(self) -> None:
        """Called after each batch is handled and acked."""
        cond = self._condition()
        async with cond:
            cond.notify_all()

    async def caught_up(self) -> bool:
        """True when the group has been delivered every entry and acked them all."""
        try:
            info = await self.client.xinfo_stream(self.stream)
        except Exception:  # no stream yet: nothing to catch up with
            return True
        last = entry_id(info.get("last-generated-id"))
        for group in await self.client.xinfo_groups(self.stream):
            if text(group.get("name")) == self.group:
                return (int(group.get("pending") or 0) == 0
                        and entry_id(group.get("last-delivered-id")) >= last)
        return False

    async def wait_caught_up(self, timeout_s: float = 30.0) -> None:
        """Wait, without polling, until this process's consumer has caught up with the stream."""
        cond = self._condition()
        async with cond:
            while not await self.caught_up():
                await asyncio.wait_for(cond.wait(), timeout=timeout_s)
