"""The registry state: every registry event folded, in log order.

An event is a JSON object ``{"type": ..., "at": <epoch ms>, ...}``. ``apply``
changes the state and names what it touched (:data:`Ref`), so the projector
rewrites only those projections. Unknown event types are ignored, so an older
process can replay a newer log.

Workspaces: every record carries the ``workspace`` of the event that created it
(an endpoint belongs to its server's, an agent to the workspace of its first link).
Events written before workspaces existed carry none and fold into
:data:`DEFAULT_WORKSPACE`, which is how an upgraded log migrates: nothing is rewritten.

Published versions: every ``tool.published`` event is one immutable version of its tool,
numbered 1, 2, 3 ... (the event carries its number; a log from before versions is numbered
in order as it folds). Saved test cases (``test.*`` events) are kept per tool. A purge drops
both, but the numbering of a tool id only grows.

Versions: every event that touches an entity bumps its ``version`` by one
(and :data:`GRAPH_EVENTS` bump ``graph``);
the log's append script keeps the same counters (``handlers.registry.log``),
which is how two API processes detect that they raced.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..tenancy import DEFAULT_WORKSPACE as DEFAULT_WORKSPACE
from ..tenancy import resolves
from ..tenancy import workspace_of as workspace_of
from .records import record_hash, record_of

Record = dict[str, Any]
# ("tool", toolId) · ("pt", publishedToolId) · ("server", id) · ("credential", id) · ("agent", id)
Ref = tuple[str, str]


def native_key(workspace: str, native_name: str) -> str:
    """Where a nativeName is reserved: unique per workspace (``default`` keeps the bare name,
    so the version fields a log wrote before workspaces still guard it)."""
    return native_name if workspace == DEFAULT_WORKSPACE else f"{workspace}/{native_name}"


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


@dataclass
class RegistryState:
    tools: dict[str, Record] = field(default_factory=dict)
    servers: dict[str, Record] = field(default_factory=dict)
    credentials: dict[str, Record] = field(default_factory=dict)
    agents: dict[str, list[str]] = field(default_factory=dict)
    agent_versions: dict[str, int] = field(default_factory=dict)
    published: dict[str, str] = field(default_factory=dict)  # publishedToolId -> toolId
    native_names: dict[str, str] = field(default_factory=dict)  # native_key -> toolId
    agent_workspaces: dict[str, str] = field(default_factory=dict)  # agentId -> workspace
    versions: dict[str, list[Record]] = field(default_factory=dict)  # toolId -> oldest first
    last_version: dict[str, int] = field(default_factory=dict)  # toolId -> highest ever
    cases: dict[str, dict[str, Record]] = field(default_factory=dict)  # toolId -> caseId -> case
    # toolId -> bumped by every test case event: a gated publish checks the cases it ran
    cases_version: dict[str, int] = field(default_factory=dict)
    # Bumped by every event that changes what a publish may reference (publish, trash,
    # restore, purge, deleting a server, endpoint or credential): publishes and those
    # events check it, so a publish never races the removal of what it calls.
    graph: int = 0

    # -- reading ------------------------------------------------------------------

    def tool_in(self, tool_id: str, workspace: str) -> Record | None:
        """The tool if it belongs to ``workspace``; another workspace's is as absent."""
        tool = self.tools.get(tool_id)
        return tool if tool is not None and resolves(workspace_of(tool), workspace) else None

    def server_in(self, server_id: str, workspace: str) -> Record | None:
        server = self.servers.get(server_id)
        return server if server is not None and resolves(workspace_of(server), workspace) else None

    def credential_in(self, cred_id: str, workspace: str) -> Record | None:
        cred = self.credentials.get(cred_id)
        return cred if cred is not None and resolves(workspace_of(cred), workspace) else None

    def version_of(self, tool_id: str, number: int) -> Record | None:
        return next((v for v in self.versions.get(tool_id, []) if v["version"] == number), None)

    def agent_visible(self, agent_id: str, workspace: str) -> bool:
        """An agent nobody linked yet is free; a linked one belongs to its first linker."""
        return self.agent_workspaces.get(agent_id, workspace) == workspace

    def agents_of(self, tool_id: str) -> list[str]:
        return sorted(a for a, tools in self.agents.items() if tool_id in tools)

    def callers_of(self, tool_id: str) -> list[Record]:
        """Published tools, not in the trash, whose published definition calls ``tool_id``."""
        tool = self.tools.get(tool_id)
        pt = (tool.get("publishedTool") or {}).get("id") if tool else None
        out = []
        for other in self.tools.values():
            published = other.get("publishedTool")
            if other["id"] == tool_id or other.get("deletedAt") or not published:
                continue
            for block in (published["definition"].get("blocks") or {}).values():
                if not isinstance(block, dict) or block.get("type") != "callTool":
                    continue
                if block.get("toolId") == tool_id or (pt and block.get("publishedToolId") == pt):
                    out.append(other)
                    break
        return out

    def tools_using_server(self, server_id: str, endpoint_id: str | None = None,
                           workspace: str | None = None) -> list[Record]:
        """Tools (not in the trash) whose draft or published definition calls the server;
        only ``workspace``'s when given (a draft elsewhere may name any id)."""
        out = []
        for tool in self.tools.values():
            if tool.get("deletedAt") or (workspace and workspace_of(tool) != workspace):
                continue
            published = tool.get("publishedTool") or {}
            definitions = [tool.get("definition"), published.get("definition")]
            if any(_uses_server(d, server_id, endpoint_id) for d in definitions):
                out.append(tool)
        return out

    # -- folding ------------------------------------------------------------------

    def apply(self, event: Record) -> set[Ref]:
        kind = str(event.get("type"))
        handler = _HANDLERS.get(kind)
        if handler is None:
            return set()
        if kind in GRAPH_EVENTS:
            self.graph += 1
        return handler(self, event)


GRAPH_EVENTS = frozenset({"tool.published", "tool.trashed", "tool.restored", "tool.purged",
                          "server.deleted", "endpoint.deleted", "credential.deleted"})


def _uses_server(definition: Any, server_id: str, endpoint_id: str | None) -> bool:
    if not isinstance(definition, dict):
        return False
    for block in (definition.get("blocks") or {}).values():
        if (isinstance(block, dict) and block.get("type") == "callEndpoint"
                and block.get("serverId") == server_id
                and (endpoint_id is None or block.get("endpointId") == endpoint_id)):
            return True
    return False


def _touch(record: Record, at: int) -> None:
    record["version"] = int(record.get("version", 0)) + 1
    record["updatedAt"] = iso(at)


def _tool_refs(state: RegistryState, tool: Record) -> set[Ref]:
    refs: set[Ref] = {("tool", tool["id"])}
    pt = (tool.get("publishedTool") or {}).get("id")
    if pt:
        refs.add(("pt", pt))
    refs |= {("agent", a) for a in state.agents_of(tool["id"])}
    return refs


def _tool_created(s: RegistryState, e: Record) -> set[Ref]:
    tool = copy.deepcopy(e["tool"])
    tool["workspace"] = workspace_of(e)
    tool.update(version=1, createdAt=iso(e["at"]), updatedAt=iso(e["at"]), deletedAt=None,
                publishedTool=None)
    s.tools[tool["id"]] = tool
    if tool.get("nativeName"):
        s.native_names[native_key(tool["workspace"], tool["nativeName"])] = tool["id"]
    return {("tool", tool["id"])}


def _tool_saved(s: RegistryState, e: Record) -> set[Ref]:
    tool = s.tools.get(e["id"])
    if tool is None:
        return set()
    tool.update(copy.deepcopy(e["changes"]))
    _touch(tool, e["at"])
    return _tool_refs(s, tool)


def _tool_published(s: RegistryState, e: Record) -> set[Ref]:
    tool = s.tools.get(e["id"])
    if tool is None:
        return set()
    pt = e["publishedToolId"]
    name = str(e.get("name", tool["name"]))
    definition = copy.deepcopy(e["definition"])  # shared by the version: neither is changed
    number = int(e.get("version") or 0) or s.last_version.get(tool["id"], 0) + 1
    s.last_version[tool["id"]] = max(number, s.last_version.get(tool["id"], 0))
    tool["publishedTool"] = {"id": pt, "toolId": tool["id"], "name": name,
                             "definition": definition, "publishedAt": iso(e["at"]),
                             "version": number}
    s.versions.setdefault(tool["id"], []).append({
        "version": number, "publishedAt": iso(e["at"]), "publishedToolId": pt, "name": name,
        "keyId": e.get("actor"), "keyName": e.get("actorName"), "note": e.get("note"),
        "rollbackOf": e.get("rollbackOf"), "forced": e.get("forced"),
        "hash": record_hash(record_of(pt, tool["id"], name, definition, workspace_of(tool))),
        "definition": definition})
    s.published[pt] = tool["id"]
    _touch(tool, e["at"])
    return _tool_refs(s, tool)


def _tool_trashed(s: RegistryState, e: Record) -> set[Ref]:
    tool = s.tools.get(e["id"])
    if tool is None:
        return set()
    tool["deletedAt"] = iso(e["at"])
    _touch(tool, e["at"])
    return _tool_refs(s, tool)


def _tool_restored(s: RegistryState, e: Record) -> set[Ref]:
    tool = s.tools.get(e["id"])
    if tool is None:
        return set()
    tool["deletedAt"] = None
    _touch(tool, e["at"])
    return _tool_refs(s, tool)


def _tool_purged(s: RegistryState, e: Record) -> set[Ref]:
    tool = s.tools.get(e["id"])
    if tool is None:
        return set()
    refs = _tool_refs(s, tool)  # read the links before they go: the delete removes them
    del s.tools[e["id"]]
    s.versions.pop(e["id"], None)
    s.cases.pop(e["id"], None)
    s.cases_version.pop(e["id"], None)
    pt = (tool.get("publishedTool") or {}).get("id")
    if pt:
        s.published.pop(pt, None)
    if tool.get("nativeName"):
        s.native_names.pop(native_key(workspace_of(tool), tool["nativeName"]), None)
    for agent, tools in s.agents.items():
        if e["id"] in tools:
            tools.remove(e["id"])
            s.agent_versions[agent] = s.agent_versions.get(agent, 0) + 1
    return refs


def _case_saved(s: RegistryState, e: Record) -> set[Ref]:
    """``test.created`` / ``test.updated``: the case as sent, versioned and stamped."""
    tool_id = e["toolId"]
    if tool_id not in s.tools:
        return set()
    cases = s.cases.setdefault(tool_id, {})
    case = copy.deepcopy(e["case"])
    old = cases.get(case["id"])
    case.update(toolId=tool_id, version=int((old or {}).get("version", 0)) + 1,
                createdAt=(old or {}).get("createdAt") or iso(e["at"]), updatedAt=iso(e["at"]),
                createdBy=(old or {}).get("createdBy") or e.get("actor"))
    cases[case["id"]] = case
    s.cases_version[tool_id] = s.cases_version.get(tool_id, 0) + 1
    return set()


def _case_deleted(s: RegistryState, e: Record) -> set[Ref]:
    if s.cases.get(e["toolId"], {}).pop(e["id"], None) is not None:
        s.cases_version[e["toolId"]] = s.cases_version.get(e["toolId"], 0) + 1
    return set()


def _table(s: RegistryState, kind: str) -> dict[str, Record]:
    return s.servers if kind == "server" else s.credentials


def _created(kind: str) -> Callable[[RegistryState, Record], set[Ref]]:
    """``{kind}.created``: the record as sent, versioned and stamped."""
    def apply(s: RegistryState, e: Record) -> set[Ref]:
        item = copy.deepcopy(e[kind if kind == "server" else "credential"])
        item["workspace"] = workspace_of(e)
        if kind == "server":
            item.setdefault("endpoints", {})
        item.update(version=1, createdAt=iso(e["at"]), updatedAt=iso(e["at"]))
        _table(s, kind)[item["id"]] = item
        return {(kind, item["id"])}
    return apply


def _updated(kind: str) -> Callable[[RegistryState, Record], set[Ref]]:
    def apply(s: RegistryState, e: Record) -> set[Ref]:
        item = _table(s, kind).get(e["id"])
        if item is None:
            return set()
        item.update(copy.deepcopy(e["changes"]))
        _touch(item, e["at"])
        return {(kind, item["id"])}
    return apply


def _deleted(kind: str) -> Callable[[RegistryState, Record], set[Ref]]:
    def apply(s: RegistryState, e: Record) -> set[Ref]:
        return {(kind, e["id"])} if _table(s, kind).pop(e["id"], None) is not None else set()
    return apply


def _endpoints_added(s: RegistryState, e: Record) -> set[Ref]:
    server = s.servers.get(e["serverId"])
    if server is None:
        return set()
    items = e.get("endpoints") or [e["endpoint"]]
    for item in items:
        endpoint = copy.deepcopy(item)
        endpoint.update(serverId=server["id"], createdAt=iso(e["at"]), updatedAt=iso(e["at"]))
        server["endpoints"][endpoint["id"]] = endpoint
    _touch(server, e["at"])
    return {("server", server["id"])}


def _endpoint_updated(s: RegistryState, e: Record) -> set[Ref]:
    server = s.servers.get(e["serverId"])
    endpoint = server["endpoints"].get(e["id"]) if server else None
    if server is None or endpoint is None:
        return set()
    endpoint.update(copy.deepcopy(e["changes"]))
    endpoint["updatedAt"] = iso(e["at"])
    _touch(server, e["at"])
    return {("server", server["id"])}


def _endpoint_deleted(s: RegistryState, e: Record) -> set[Ref]:
    server = s.servers.get(e["serverId"])
    if server is None or server["endpoints"].pop(e["id"], None) is None:
        return set()
    _touch(server, e["at"])
    return {("server", server["id"])}


def _agent_linked(s: RegistryState, e: Record) -> set[Ref]:
    s.agent_workspaces.setdefault(e["agentId"], workspace_of(e))
    tools = s.agents.setdefault(e["agentId"], [])
    if e["toolId"] not in tools:
        tools.append(e["toolId"])
    s.agent_versions[e["agentId"]] = s.agent_versions.get(e["agentId"], 0) + 1
    return {("agent", e["agentId"])}


def _agent_unlinked(s: RegistryState, e: Record) -> set[Ref]:
    tools = s.agents.get(e["agentId"], [])
    if e["toolId"] in tools:
        tools.remove(e["toolId"])
    s.agent_versions[e["agentId"]] = s.agent_versions.get(e["agentId"], 0) + 1
    return {("agent", e["agentId"])}


_HANDLERS: dict[str, Callable[[RegistryState, Record], set[Ref]]] = {
    "tool.created": _tool_created,
    "tool.saved": _tool_saved,
    "tool.published": _tool_published,
    "tool.trashed": _tool_trashed,
    "tool.restored": _tool_restored,
    "tool.purged": _tool_purged,
    "server.created": _created("server"),
    "server.updated": _updated("server"),
    "server.deleted": _deleted("server"),
    "endpoint.created": _endpoints_added,
    "endpoints.imported": _endpoints_added,
    "endpoint.updated": _endpoint_updated,
    "endpoint.deleted": _endpoint_deleted,
    "credential.created": _created("credential"),
    "credential.updated": _updated("credential"),
    "credential.deleted": _deleted("credential"),
    "agent.linked": _agent_linked,
    "agent.unlinked": _agent_unlinked,
    "test.created": _case_saved,
    "test.updated": _case_saved,
    "test.deleted": _case_deleted,
}
