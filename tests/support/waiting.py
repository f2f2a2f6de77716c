"""Waiting on what nothing announces, bounded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> None:
    """Wait for a condition nothing announces (a reader's state, a consumer's idle time, a
    key on the server), re-checking it often, for at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        await asyncio.sleep(0.02)
