"""The builder's test runs, kept in the run history so each has a run page.

A test run (``POST /tools/test-flow``) runs inside the API process (``handlers.registry.inline``)
and never reaches ``stream:tool-executions``, so the history's consumer never sees it. The API
writes it here instead, through the same capture (secrets masked) and the same idempotent
writer. Its root published tool is ``test-<toolId>``, which the executions routes map to the
workspace of ``toolId``: a test run is seen by exactly the workspace that could run it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from chatflow.runtime.state import LogEntry
from chatflow.schemas.wire import ToolExecutionStreamEvent

from .capture import Captured, capture, masked
from .writer import HistoryWriter

_event = msgspec.json.Decoder(ToolExecutionStreamEvent)


def captured_test_run(events: list[bytes], trace: list[LogEntry]) -> list[Captured]:
    """History rows of one inline run: one per execution event it emitted, with its log."""
    logs: dict[str, list[LogEntry]] = {}
    for entry in trace:
        logs.setdefault(entry.execId, []).append(entry)
    now = int(time.time() * 1000)
    out = []
    for raw in events:
        try:
            event = _event.decode(raw)
        except msgspec.DecodeError:
            continue  # the inline runner wrote it: nothing a caller could have put there
        if not event.executionId:
            continue
        out.append(capture(event.executionId, event, now, logs.get(event.executionId),
                           logs.get(event.rootExecutionId or event.executionId)))
    return out


async def record_test_run(engine: AsyncEngine, events: list[bytes], trace: list[LogEntry],
                          definition: tuple[str, bytes]) -> bool:
    """Write a test run into the history; True when its root row is there afterwards."""
    captured = captured_test_run(events, trace)
    if not captured:
        return False
    digest, data = definition
    defs: dict[str, Any] = {}
    if digest and data:
        # Static header values of an httpCall may be credentials: masked, as the consumer does.
        defs[digest] = masked(json.loads(data))
    await HistoryWriter(engine).write(captured, defs)
    return True
