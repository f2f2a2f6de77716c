"""A tool's published versions: listed, read, compared, and rolled back to.

A version is the ``tool.published`` event that made it (``runtime.registry.state``), so it
never changes. A rollback publishes version n's definition again as a new version (its
``rollbackOf`` is n): the number only grows, the log says who rolled back and why (its
note), and the publishedToolId flows call stays the same. A rollback is a publish: it runs
the publish checks (the servers, credentials and tools it calls must still be there) and,
through :func:`handlers.registry.gate.rollback_gated`, the tool's saved test cases against
version n's definition, refused or forced as a publish is.
"""

from __future__ import annotations

from typing import Any

from chatflow.runtime.registry import RegistryState
from chatflow.runtime.registry.diff import diff_definitions
from chatflow.runtime.registry.state import Record
from chatflow.runtime.registry.validation import check_draft
from chatflow.runtime.registry.views import tool_view

from .errors import ApiCode, Conflict, Invalid, NotFound
from .log import Append
from .scope import SHELL, Scope
from .tools import Gate, ToolOps, get_tool, publish_event

Side = int | str  # a version number, or "draft"


def summary(version: Record) -> Record:
    """A version without its definition (the list)."""
    return {k: v for k, v in version.items() if k != "definition"}


def _version(state: RegistryState, tool_id: str, number: int, text: str | None = None
             ) -> Record:
    found = state.version_of(tool_id, number)
    if found is None:
        raise NotFound(f"tool {tool_id!r} has no version {text or number}",
                       code=ApiCode.VERSION_NOT_FOUND)
    return found


def callers(state: RegistryState, tool_id: str) -> list[Record]:
    """The published tools that call this one: what a rollback changes under them."""
    return [{"id": c["id"], "name": c.get("name", "")} for c in state.callers_of(tool_id)]


def republishable(state: RegistryState, tool_id: str, number: int, scope: Scope) -> Record:
    """Version ``number`` of the tool, if it may be published again: the tool is not in the
    trash and what the version calls is still there."""
    tool = get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
    if tool.get("deletedAt"):
        raise Conflict(f"tool {tool_id!r} is in the trash; restore it before rolling "
                       "back", code=ApiCode.IN_TRASH)
    old = _version(state, tool_id, number)
    problems = check_draft(state, tool_id, old["definition"], scope.workspace)
    if problems:
        raise Invalid(f"version {number} of tool {tool_id!r} cannot be published "
                      f"again: {len(problems)} problem(s)", problems=problems,
                      code=ApiCode.INVALID_DEFINITION)
    return old


def parse_side(text: str) -> Side:
    if text == "draft":
        return text
    if text.isdecimal() and int(text) > 0:
        return int(text)
    raise Invalid(f"{text!r}: expected a version number or 'draft'", code=ApiCode.INVALID_VERSION)


class VersionOps:
    def __init__(self, tools: ToolOps) -> None:
        self.tools = tools
        self.registry = tools.registry

    async def list(self, tool_id: str, *, scope: Scope = SHELL) -> Record:
        """``{"toolId", "current", "callers", "versions"}``, newest version first."""
        await self.registry.catch_up()
        state = self.registry.state
        tool = get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
        published = tool.get("publishedTool") or {}
        return {"toolId": tool_id, "current": published.get("version"),
                "callers": callers(state, tool_id),
                "versions": [summary(v) for v in reversed(state.versions.get(tool_id, []))]}

    async def get(self, tool_id: str, number: int, *, number_text: str | None = None,
                  scope: Scope = SHELL) -> Record:
        await self.registry.catch_up()
        get_tool(self.registry.state, tool_id, trashed_ok=True, workspace=scope.workspace)
        return dict(_version(self.registry.state, tool_id, number, number_text))

    async def diff(self, tool_id: str, left: Side | None, right: Side, *,
                   scope: Scope = SHELL) -> Record:
        """What changed from ``left`` to ``right`` (each a version number or the draft;
        ``left`` None: the published version, else the draft)."""
        await self.registry.catch_up()
        state = self.registry.state
        tool = get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
        if left is None:
            left = (tool.get("publishedTool") or {}).get("version") or "draft"

        def definition(side: Side) -> Any:
            if side == "draft":
                return tool.get("definition")
            return _version(state, tool_id, int(side))["definition"]

        return {"toolId": tool_id, "from": left, "to": right,
                **diff_definitions(definition(left), definition(right))}

    async def rollback(self, tool_id: str, number: int, *, note: str | None = None,
                       scope: Scope = SHELL, gate: Gate | None = None) -> Record:
        """Publish version ``number``'s definition as the tool's next version. ``gate``:
        what the saved test cases said of it (:func:`handlers.registry.gate.rollback_gated`)."""
        def build(state: RegistryState) -> Append:
            tool = get_tool(state, tool_id, trashed_ok=True, workspace=scope.workspace)
            old = republishable(state, tool_id, number, scope)
            pt = (tool.get("publishedTool") or {}).get("id") or old["publishedToolId"]
            item = publish_event(state, tool, pt, old["definition"], note, scope,
                                 rollbackOf=number)
            if gate is not None:
                gate.hold(state, item)
            return item

        await self.registry.commit(build, scope)
        state = self.registry.state
        latest = state.versions[tool_id][-1]
        return {**tool_view(state.tools[tool_id]), "publishedVersion": latest["version"],
                "rolledBack": summary(latest), "callers": callers(state, tool_id)}
