"""The registry's audit trail: who changed what, read straight from the event log.

Every event carries the ``actor`` that made it (an API key's id, or ``shell``) and its
``workspace`` (:meth:`Registry.commit`). Events older than workspaces carry neither: they
belong to ``default`` and their actor is unknown. The trail shows what changed, never
the payload, so no secret (not even ciphertext) leaves through it.
"""

from __future__ import annotations

from typing import Any

from chatflow.runtime.registry import workspace_of
from chatflow.runtime.registry.state import iso

from .log import RegistryLog

# Per event family: the kind of object it changes and the field naming it (else the
# nested record's id, e.g. ``tool.created``'s ``tool.id``).
_OBJECTS: dict[str, tuple[str, str]] = {
    "tool": ("tool", "id"), "server": ("server", "id"), "credential": ("credential", "id"),
    "endpoint": ("endpoint", "id"), "endpoints": ("server", "serverId"), "agent": ("agent", "agentId"),
    "test": ("test", "id"),
}


def object_of(event: dict[str, Any]) -> tuple[str, str | None]:
    """``(kind, id)`` of what an event changed."""
    family = str(event.get("type", "")).split(".", 1)[0]
    kind, field = _OBJECTS.get(family, (family, "id"))
    nested = event.get(kind) if isinstance(event.get(kind), dict) else None
    found = event.get(field) or (nested or {}).get("id")
    return kind, str(found) if found is not None else None


def entry(entry_id: str, event: dict[str, Any]) -> dict[str, Any]:
    kind, ident = object_of(event)
    out: dict[str, Any] = {"id": entry_id, "at": iso(int(event.get("at", 0))),
                           "type": event.get("type"), "actor": event.get("actor"),
                           "workspace": workspace_of(event), "object": {"kind": kind, "id": ident}}
    if kind == "endpoint":
        out["object"]["serverId"] = event.get("serverId")
    if kind in ("agent", "test"):
        out["object"]["toolId"] = event.get("toolId")
    if event.get("type") == "tool.published" and event.get("version"):
        # Which version, not what it holds: a rollback and a forced publish say so.
        detail = {"version": event["version"]}
        if event.get("rollbackOf"):
            detail["rollbackOf"] = event["rollbackOf"]
        if event.get("forced"):
            detail["forced"] = True
        out["detail"] = detail
    return out


async def audit_trail(log: RegistryLog, workspace: str, *, object_id: str | None = None,
                      since_ms: int | None = None, until_ms: int | None = None,
                      limit: int = 500) -> list[dict[str, Any]]:
    """The workspace's changes, oldest first, whose time (``at``) lies between the bounds.

    An entry's id is never earlier than its ``at`` (stamped just before the append), so the
    read can start at ``since``; it reads on to the end, because ``until`` bounds ``at``."""
    after = f"{max(since_ms, 1) - 1}-{2**64 - 1}" if since_ms is not None else "0-0"
    out: list[dict[str, Any]] = []
    while len(out) < limit:
        batch = await log.read(after)
        if not batch:
            break
        for entry_id, event in batch:
            after = entry_id
            at = int(event.get("at", 0))
            if workspace_of(event) != workspace or (since_ms is not None and at < since_ms) \
                    or (until_ms is not None and at > until_ms):
                continue
            item = entry(entry_id, event)
            linked = (item["object"]["id"], item["object"].get("serverId"),
                      item["object"].get("toolId"))
            if object_id is None or object_id in linked:
                out.append(item)
                if len(out) >= limit:
                    break
    return out
