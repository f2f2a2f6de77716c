"""Server-sent events (the WHATWG format) read from an httpx response."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str


async def iter_sse(response: httpx.Response) -> AsyncIterator[ServerSentEvent]:
    """Yield each event; ``data`` lines are joined with newlines, comments skipped."""
    event = "message"
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield ServerSentEvent(event, "\n".join(data))
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield ServerSentEvent(event, "\n".join(data))
