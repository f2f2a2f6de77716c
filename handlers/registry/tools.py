"""Tool operations: create, save, publish, trash, restore, delete for good, agent links.

Each builds its event from the caught-up state (so its checks hold against the
whole log) and names the versions it relies on; :meth:`Registry.commit` appends
it atomically with those checks.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from chatflow.runtime.registry import DEFAULT_WORKSPACE, RegistryState
from chatflow.runtime.registry.state import Record, native_key
from chatflow.runtime.registry.validation import check_publish
from chatflow.runtime.registry.views import agent_cache, tool_view

from .errors import ApiCode, Conflict, Invalid, NotFound
from .log import Append
from .models import ToolCreate, ToolPatch
from .registry import Registry
from .scope import SHELL, Scope


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def tool_version(state: RegistryState, tool_id: str) -> str:
    tool = state.tools.get(tool_id)
    return str(tool["version"]) if tool else "0"


def bump(state: RegistryState, tool_id: str) -> dict[str, str]:
    return {f"tool:{tool_id}": str(state.tools[tool_id]["version"] + 1)}


def graph(state: RegistryState) -> tuple[dict[str, str], dict[str, str]]:
    return {"graph": str(state.graph)}, {"graph": str(state.graph + 1)}


def get_tool(state: RegistryState, tool_id: str, *, trashed_ok: bool = False,
             workspace: str = DEFAULT_WORKSPACE) -> Record:
    tool = state.tool_in(tool_id, workspace)
    if tool is None:
        raise NotFound(f"no tool {tool_id!r}")
    if tool.get("deletedAt") and not trashed_ok:
        raise NotFound(f"tool {tool_id!r} is in the trash (POST /tools/{tool_id}/restore)",
                       code=ApiCode.IN_TRASH)
    return tool


def _published_id(state: RegistryState, tool: Record, wanted: str | None) -> str:
    """The id a publish uses: the tool's own if it has one, else ``wanted``, else a new one."""
    current: str | None = (tool.get("publishedTool") or {}).get("id")
    if wanted is None:
        return current or new_id("pt")
    if current and current != wanted:
        raise Conflict(f"tool {tool['id']!r} is published as {current!r}, not {wanted!r}",
                       code=ApiCode.PUBLISHED_ID_MISMATCH, publishedToolId=current)
    owner = state.published.get(wanted)
    if owner and owner != tool["id"]:
        raise Conflict(f"publishedToolId {wanted!r} belongs to tool {owner!r}",
                       code=ApiCode.PUBLISHED_ID_TAKEN, toolId=owner)
    return wanted


def case_field(tool_id: str, case_id: str) -> str:
    """The versions-hash field of one saved test case (``tests:{toolId}`` counts them all)."""
    return f"test:{tool_id}/{case_id}"


def check_version(record: Record, wanted: int | None, what: str) -> None:
    if wanted is not None and wanted != record["version"]:
        raise Conflict(f"{what} was changed meanwhile: it is at version {record['version']}, "
                       f"you sent {wanted}", code=ApiCode.VERSION_CONFLICT, version=record["version"])


class Gate(Protocol):
    """What a publish checks against the saved test cases it ran (``handlers.registry.gate``)."""

    def hold(self, state: RegistryState, item: Append) -> None: ...


def publish_event(state: RegistryState, tool: Record, pt: str, definition: Any,
                  note: str | None, scope: Scope, **extra: Any) -> Append:
    """A ``tool.published`` event: the tool's next version, by whom, with its note. Every
    publish and every rollback is one; a reader of the log sees a version in each."""
    tool_id = tool["id"]
    expect, sets = graph(state)
    expect[f"tool:{tool_id}"] = str(tool["version"])
    sets.update(bump(state, tool_id))
    event = {"type": "tool.published", "id": tool_id, "publishedToolId": pt,
             "name": tool["name"], "definition": definition,
             "version": state.last_version.get(tool_id, 0) + 1, "actorName": scope.name,
             "note": note or None, **extra}
    return Append(event, expect, sets)


class ToolOps:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    @property
    def state(self) -> RegistryState:
        return self.registry.state

    async def view(self, tool_id: str, *, trashed_ok: bool = False,
                   scope: Scope = SHELL) -> Record:
        await self.registry.catch_up()
        return tool_view(get_tool(self.state, tool_id, trashed_ok=trashed_ok,
                                  workspace=scope.workspace))

    async def create(self, body: ToolCreate, *, scope: Scope = SHELL) -> Record:
        tool_id = body.id or new_id("t")
        if body.kind == "native":
            if not body.nativeName:
                raise Invalid("nativeName: required for a native tool")
            if body.definition is not None:
                raise Invalid("definition: a native tool has no definition")
        elif body.nativeName:
            raise Invalid("nativeName: only native tools have one")

        def build(state: RegistryState) -> Append:
            if tool_id in state.tools:  # ids are global: the runtime's keys carry no workspace
                raise Conflict(f"the tool id {tool_id!r} is taken", code=ApiCode.TOOL_EXISTS)
            expect, sets = {f"tool:{tool_id}": "0"}, {f"tool:{tool_id}": "1"}
            if body.nativeName:
                native = native_key(scope.workspace, body.nativeName)
                owner = state.native_names.get(native)
                if owner:
                    raise Conflict(f"nativeName {body.nativeName!r} is taken by tool {owner!r}",
                                   code=ApiCode.NATIVE_NAME_TAKEN)
                expect[f"native:{native}"] = "0"
                sets[f"native:{native}"] = tool_id
            record = {"id": tool_id, "name": body.name, "description": body.description,
                      "kind": body.kind, "nativeName": body.nativeName,
                      "definition": body.definition if body.kind == "custom" else None}
            if record["definition"] is None and body.kind == "custom":
                record["definition"] = {"blocks": {}, "onboardingBlockId": None}
            return Append({"type": "tool.created", "tool": record}, expect, sets)

        await self.registry.commit(build, scope)
        return tool_view(self.state.tools[tool_id])

    async def save(self, tool_id: str, body: ToolPatch, *, scope: Scope = SHELL) -> Record:
        changes = body.model_dump(mode="json", exclude_unset=True, exclude={"version"})
        if "name" in changes and changes["name"] is None:
            raise Invalid("name: cannot be null")

        def build(state: RegistryState) -> Append:
            tool = get_tool(state, tool_id, workspace=scope.workspace)
            check_version(tool, body.version, f"tool {tool_id!r}")
            if tool.get("kind") == "native" and changes.get("definition") is not None:
                raise Invalid("definition: a native tool has no definition")
            return Append({"type": "tool.saved", "id": tool_id, "changes": changes},
                          {f"tool:{tool_id}": str(tool["version"])}, bump(state, tool_id))

        await self.registry.commit(build, scope)
        return tool_view(self.state.tools[tool_id])

    async def publish(self, tool_id: str, version: int | None = None, *,
                      published_id: str | None = None, scope: Scope = SHELL,
                      note: str | None = None, gate: Gate | None = None) -> Record:
        """Publish the draft as the tool's next version. A tool keeps one publishedToolId
        across re-publishes.

        ``published_id`` chooses the publishedToolId of the first publish. Only trusted
        internal callers pass it, through :mod:`handlers.registry.publishing`
        (``chatflow up`` publishes the examples under the fixed ids that flows and the
        README use, ``pt-greeting`` ...; ``chatflow publish FILE`` under the file's id);
        the API and ``chatflow tools publish`` never do, so the ids they hand out stay
        random. Asking for an id another tool owns, or for another id than the one the
        tool is already published under, is a Conflict.

        ``note`` is kept in the version. ``gate``: what the saved test cases said of this
        draft (:mod:`handlers.registry.gate`); the publish holds only while the cases it
        ran are still the tool's cases.
        """
        def build(state: RegistryState) -> Append:
            tool = state.tool_in(tool_id, scope.workspace)
            if tool is None:
                raise NotFound(f"no tool {tool_id!r}")
            if tool.get("deletedAt"):
                raise Conflict(f"tool {tool_id!r} is in the trash; restore it before publishing",
                               code=ApiCode.IN_TRASH)
            check_version(tool, version, f"tool {tool_id!r}")
            problems = check_publish(state, tool_id)
            if problems:
                raise Invalid(f"tool {tool_id!r} cannot be published: {len(problems)} problem(s)",
                              problems=problems, code=ApiCode.INVALID_DEFINITION)
            pt = _published_id(state, tool, published_id)
            item = publish_event(state, tool, pt, tool["definition"], note, scope)
            if gate is not None:
                gate.hold(state, item)
            return item

        await self.registry.commit(build, scope)
        return tool_view(self.state.tools[tool_id])

    async def trash(self, tool_id: str, *, scope: Scope = SHELL) -> Record:
        return await self._toggle(tool_id, "tool.trashed", scope)

    async def restore(self, tool_id: str, *, scope: Scope = SHELL) -> Record:
        return await self._toggle(tool_id, "tool.restored", scope)

    async def _toggle(self, tool_id: str, kind: str, scope: Scope) -> Record:
        def build(state: RegistryState) -> Append:
            tool = get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
            trashed = bool(tool.get("deletedAt"))
            if kind == "tool.trashed" and trashed:
                raise Conflict(f"tool {tool_id!r} is already in the trash", code=ApiCode.IN_TRASH)
            if kind == "tool.restored" and not trashed:
                raise Conflict(f"tool {tool_id!r} is not in the trash", code=ApiCode.NOT_IN_TRASH)
            expect, sets = graph(state)
            expect[f"tool:{tool_id}"] = str(tool["version"])
            sets.update(bump(state, tool_id))
            return Append({"type": kind, "id": tool_id}, expect, sets)

        await self.registry.commit(build, scope)
        return tool_view(self.state.tools[tool_id])

    async def purge(self, tool_id: str, *, scope: Scope = SHELL) -> Record:
        """Delete for good: only from the trash (400), never while a caller is live (409)."""
        def build(state: RegistryState) -> Append:
            tool = get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
            if not tool.get("deletedAt"):
                raise Invalid(f"tool {tool_id!r} is not in the trash: DELETE /tools/{tool_id} "
                              "first", code=ApiCode.NOT_IN_TRASH)
            callers = state.callers_of(tool_id)
            if callers:
                names = ", ".join(f"{c['name']} ({c['id']})" for c in callers)
                raise Conflict(f"tool {tool_id!r} is still called by published tools: {names}",
                               code=ApiCode.TOOL_HAS_CALLERS,
                               callers=[{"id": c["id"], "name": c["name"]} for c in callers])
            expect, sets = graph(state)
            expect[f"tool:{tool_id}"] = str(tool["version"])
            sets[f"tool:{tool_id}"] = ""
            if tool.get("nativeName"):
                sets[f"native:{native_key(scope.workspace, tool['nativeName'])}"] = ""
            for agent in state.agents_of(tool_id):
                sets[f"agent:{agent}"] = str(state.agent_versions.get(agent, 0) + 1)
            sets[f"tests:{tool_id}"] = ""
            for case_id in state.cases.get(tool_id, {}):
                sets[case_field(tool_id, case_id)] = ""
            return Append({"type": "tool.purged", "id": tool_id}, expect, sets)

        await self.registry.commit(build, scope)
        return {"id": tool_id, "deleted": True}

    # -- AI agents (AiAgentTool) ------------------------------------------------

    async def link(self, agent_id: str, tool_id: str, linked: bool = True, *,
                   scope: Scope = SHELL) -> Record:
        def build(state: RegistryState) -> Append:
            if not state.agent_visible(agent_id, scope.workspace):
                raise NotFound(f"no agent {agent_id!r}")
            tool = get_tool(state, tool_id, trashed_ok=not linked, workspace=scope.workspace)
            present = tool_id in state.agents.get(agent_id, [])
            if not linked and not present:
                raise NotFound(f"tool {tool_id!r} is not linked to agent {agent_id!r}")
            if linked and present:
                raise Conflict(f"tool {tool_id!r} is already linked to agent {agent_id!r}",
                               code=ApiCode.ALREADY_LINKED)
            version = state.agent_versions.get(agent_id, 0)
            return Append({"type": "agent.linked" if linked else "agent.unlinked",
                           "agentId": agent_id, "toolId": tool_id},
                          {f"agent:{agent_id}": str(version),
                           f"tool:{tool_id}": str(tool["version"])},
                          {f"agent:{agent_id}": str(version + 1)})

        await self.registry.commit(build, scope)
        return await self.agent(agent_id, scope=scope)

    async def agent(self, agent_id: str, *, scope: Scope = SHELL) -> dict[str, Any]:
        """The agent's cached tools; another workspace's agent reads as one never linked."""
        await self.registry.catch_up()
        if not self.state.agent_visible(agent_id, scope.workspace):
            return {"id": agent_id, "tools": []}
        return agent_cache(self.state, agent_id) or {"id": agent_id, "tools": []}
