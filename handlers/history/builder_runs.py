"""The builder's test runs, kept in the run history so each has a run page.

A test run (``POST /tools/test-flow``) runs inside the API process (``handlers.registry.inline``)
and never reaches ``stream:tool-executions``, so the history's consumer never sees it. The API
writes it here instead, through the same capture (secrets masked) and the same idempotent
writer. It is filed under the workspace it ran in (the caller's, fixed when it started), like
every run: a test run is seen by exactly the workspace that ran it. Its root published tool is
``test-<toolId>``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from chatflow.runtime.state import LogEntry

from ..redaction import redact_definition
from .capture import Captured, capture, parse_events
from .writer import HistoryWriter


def captured_test_run(events: list[bytes], trace: list[LogEntry],
                      secrets: tuple[str, ...] = ()) -> list[Captured]:
    """History rows of one inline run: one per execution event it emitted, with its log
    (the events read as the consumer reads stream entries, by the same parser)."""
    logs: dict[str, list[LogEntry]] = {}
    for entry in trace:
        logs.setdefault(entry.execId, []).append(entry)
    now = int(time.time() * 1000)
    entries = [(b"0-0", {b"data": raw}) for raw in events]
    return [capture(dedup, event, now, logs.get(event.executionId),
                    logs.get(event.rootExecutionId or event.executionId), secrets)
            for dedup, event, _ms in parse_events(entries) if event.executionId]


async def record_test_run(engine: AsyncEngine, events: list[bytes], trace: list[LogEntry],
                          definition: tuple[str, bytes], secrets: tuple[str, ...] = ()) -> bool:
    """Write a test run into the history; True when its root row is there afterwards.
    ``secrets``: the workspace's stored secret values, masked wherever they appear."""
    captured = captured_test_run(events, trace, secrets)
    if not captured:
        return False
    digest, data = definition
    defs: dict[str, Any] = {}
    if digest and data:
        # Static header values of an httpCall may be credentials: masked, as the consumer does
        # (a value that is only a {{variable}} reference is kept).
        defs[digest] = redact_definition(json.loads(data), secrets)
    await HistoryWriter(engine).write(captured, defs)
    return True
