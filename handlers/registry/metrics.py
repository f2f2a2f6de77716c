"""Tool metrics for ``GET /tools``: runs in 7 days, mean duration, success rate.

The metrics projection (stream:tool-executions folded per tool) is another
issue's work; until it exists every tool reads as zero: nothing is invented.
Its author replaces the body of :func:`tool_metrics`, keeping the signature.
"""

from __future__ import annotations

from typing import Any

from ..keys import Keys
from ..redis_client import Client

ZERO: dict[str, Any] = {"runs7d": 0, "avgMs": 0, "successRate": 0.0}


async def tool_metrics(client: Client, keys: Keys,
                       tool_ids: list[str]) -> dict[str, dict[str, Any]]:
    """``{toolId: {"runs7d": int, "avgMs": int, "successRate": float}}`` for every id."""
    del client, keys
    return {tool_id: dict(ZERO) for tool_id in tool_ids}
