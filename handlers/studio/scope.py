"""Which executions and debug events a workspace's keys may see.

Tools belong to workspaces; contacts do not (one contact talks to every workspace's tools), so
a contact's debug stream is filtered event by event: an event belongs to the workspace of the
tool it names, and the events without a tool (the final result of a command) to the workspace
of their command's root tool.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec

from chatflow.runtime.registry import DEFAULT_WORKSPACE, workspace_of

from ..interfaces.client import first_log_entry
from ..keys import Keys
from ..redis_client import Client
from ..registry import Registry


async def workspace_tools(registry: Registry, workspace: str) -> set[str]:
    """The ids and publishedToolIds of the workspace's tools."""
    await registry.catch_up()
    out: set[str] = set()
    for tool_id, tool in registry.state.tools.items():
        if registry.state.tool_in(tool_id, workspace) is not None:
            out.add(tool_id)
            if tool.get("publishedTool"):
                out.add(tool["publishedTool"]["id"])
    return out


def owner_of_published(registry: Registry) -> Callable[[str], str]:
    """Whose an execution is, by the publishedToolId it ran: the workspace of the tool that
    published it (a command's ``toolId`` is only its caller's label). A published tool the
    registry does not know (written straight to ``tool:{id}``, as before workspaces) is
    ``default``'s, like every object that predates them. The caller has caught the registry
    up; the index is built once, so a listing looks each row up in constant time."""
    owners: dict[str, str] = {}
    for tool in registry.state.tools.values():
        published = tool.get("publishedTool")
        if isinstance(published, dict) and isinstance(published.get("id"), str):
            owners[published["id"]] = workspace_of(tool)
    return lambda published_tool_id: owners.get(published_tool_id, DEFAULT_WORKSPACE)


async def root_tool(client: Client, keys: Keys, exec_id: str) -> str | None:
    """The publishedToolId an execution tree started with (its root's first log entry)."""
    root = exec_id.split(".", 1)[0]
    try:
        first = await first_log_entry(client, keys, root)
    except (ValueError, msgspec.DecodeError, KeyError):
        return None
    found = (first.detail or {}).get("publishedToolId") if first is not None else None
    return found if isinstance(found, str) else None


class DebugScope:
    """Decides, per debug event, whether the workspace may see it; remembers per command."""

    def __init__(self, client: Client, keys: Keys, registry: Registry, workspace: str) -> None:
        self.client, self.keys, self.registry, self.workspace = client, keys, registry, workspace
        self.commands: dict[str, bool] = {}

    async def allows(self, data: bytes) -> bool:
        try:
            event: Any = json.loads(data)
        except ValueError:
            return False
        if not isinstance(event, dict):
            return False
        command = event.get("commandId")
        if isinstance(command, str) and command in self.commands:
            return self.commands[command]
        raw = event.get("payload")
        payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
        # publishedToolId is what ran; an action's toolId is only the caller's label for it.
        tool = payload.get("publishedToolId") or payload.get("toolId")
        if not isinstance(tool, str) and isinstance(event.get("executionId"), str):
            tool = await root_tool(self.client, self.keys, event["executionId"])
        allowed = isinstance(tool, str) and tool in await workspace_tools(self.registry,
                                                                          self.workspace)
        if isinstance(command, str):
            self.commands[command] = allowed
        return allowed
