"""Rolling 7-day metrics per tool, read from the execution log projection.

``tool_metrics`` is what ``GET /tools`` shows as ``runs7d``, ``avgMs`` and
``successRate`` (from ``stream:tool-executions``, docs/spec.md). The window is the
168 hourly buckets ending with the hour that holds ``now``: resolution one hour,
so an event counts from its occurrence until 7 days later, rounded up to the
end of its hour.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypedDict

from ..keys import Keys
from ..redis_client import Client

HOUR_MS = 3_600_000
WINDOW_HOURS = 168


class ToolMetrics(TypedDict):
    runs7d: int
    avgMs: int
    successRate: float


def to_ms(now: Any) -> int:
    """``now`` as epoch ms: a datetime, epoch seconds (< 1e11), epoch ms, or None (the clock)."""
    if now is None:
        return int(time.time() * 1000)
    if isinstance(now, datetime):
        return int(now.timestamp() * 1000)
    value = float(now)
    return int(value * 1000) if value < 1e11 else int(value)


def window(now_ms: int) -> tuple[int, int]:
    """The first and last hour (epoch ms // HOUR_MS) of the 7-day window at ``now_ms``."""
    last = now_ms // HOUR_MS
    return last - WINDOW_HOURS + 1, last


def summarize(buckets: dict[bytes, bytes], now_ms: int) -> ToolMetrics:
    first, last = window(now_ms)
    runs = ok = total_ms = 0
    for field, value in buckets.items():
        hour_s, _, kind = field.decode().partition(":")
        if not hour_s.isdecimal() or not first <= int(hour_s) <= last:
            continue
        if kind == "n":
            runs += int(value)
        elif kind == "ok":
            ok += int(value)
        elif kind == "ms":
            total_ms += int(value)
    if runs == 0:
        return ToolMetrics(runs7d=0, avgMs=0, successRate=0.0)
    return ToolMetrics(runs7d=runs, avgMs=round(total_ms / runs),
                       successRate=round(ok / runs, 4))


async def tool_metrics(client: Client, keys: Keys, tool_ids: Iterable[str], now: Any = None,
                       *, ns: str = "proj") -> dict[str, ToolMetrics]:
    """``{toolId: {runs7d, avgMs, successRate}}`` for every id asked (zeros when never run).

    ``successRate`` is a fraction in [0, 1]; ``avgMs`` is rounded to whole ms.
    """
    ids = list(dict.fromkeys(tool_ids))
    if not ids:
        return {}
    now_ms = to_ms(now)
    async with client.pipeline(transaction=False) as pipe:
        for tool in ids:
            pipe.hgetall(keys.proj_buckets(tool, ns))
        rows = await pipe.execute()
    return {tool: summarize(row or {}, now_ms) for tool, row in zip(ids, rows, strict=True)}
