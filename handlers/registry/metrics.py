"""Tool metrics for ``GET /tools``: runs in 7 days, mean duration, success rate.

They come from the execution log projection (handlers/projections: stream:tool-executions
folded per tool in the group ``core-tool-executions``); a tool that never ran reads as zero.
"""

from __future__ import annotations

from typing import Any

from ..keys import Keys
from ..projections.metrics import tool_metrics as _projected
from ..redis_client import Client

ZERO: dict[str, Any] = {"runs7d": 0, "avgMs": 0, "successRate": 0.0}


async def tool_metrics(client: Client, keys: Keys, tool_ids: list[str],
                       now: Any = None) -> dict[str, dict[str, Any]]:
    """``{toolId: {"runs7d": int, "avgMs": int, "successRate": float}}`` for every id.

    ``now`` (datetime, epoch s or ms; default the clock) ends the rolling 7-day window.
    """
    metrics = await _projected(client, keys, tool_ids, now)
    return {tool_id: dict(metrics.get(tool_id, ZERO)) for tool_id in tool_ids}
