"""Which executions and debug events a workspace's keys may see.

A tree's workspace is fixed when it starts (``RootInfo.workspace``: the root tool's, or the
caller's key's for a test run or a fork) and travels with everything it writes: its states,
its execution and debug events (``workspace``, left out for ``default``), the ``started``
entry of its log. Nothing here asks the registry, so purging or re-creating a tool moves no
run and no event. Contacts belong to no workspace (one contact talks to every workspace's
tools), so a contact's debug stream is filtered event by event.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from chatflow.runtime.registry import DEFAULT_WORKSPACE
from chatflow.runtime.state import LogEntry


def tree_workspace(entries: Iterable[LogEntry]) -> str:
    """The workspace of the tree an event log belongs to: its root's ``started`` entry's."""
    for entry in entries:
        if entry.type == "started" and "." not in entry.execId:
            found = (entry.detail or {}).get("workspace")
            return found if isinstance(found, str) and found else DEFAULT_WORKSPACE
    return DEFAULT_WORKSPACE


def event_workspace(data: bytes) -> str | None:
    """The workspace of a debug event as stored (None: not a debug event at all)."""
    try:
        event: Any = json.loads(data)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    found = event.get("workspace")
    return found if isinstance(found, str) and found else DEFAULT_WORKSPACE


class DebugScope:
    """Decides, per debug event, whether the workspace may see it."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace

    def allows(self, data: bytes) -> bool:
        return event_workspace(data) == self.workspace
