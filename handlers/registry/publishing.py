"""Publish one tool under a fixed publishedToolId, idempotently: create or update, then publish.

Shared by ``chatflow up`` (the example tools, :mod:`handlers.controlplane.examples`) and
``chatflow publish FILE``. Given ``{publishedToolId, toolId, name, definition}``:

* no tool ``toolId``: create it with that draft and publish it under the id (``created``);
* its published name and definition are these: leave it, no event (``unchanged``);
* they differ: save them as the draft and publish it under the same id (``updated``);
* the tool is in the trash: leave it there, unpublished (``in_trash``);
* the id belongs to another tool, or the tool is published under another id: a
  :class:`~handlers.registry.Conflict`; a definition the registry would not publish
  (shape, targets, callTool targets, cycles, credentials, servers): an
  :class:`~handlers.registry.Invalid` with every problem's JSON path. Both are raised
  before anything is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from chatflow.runtime.registry.validation import check_draft

from .errors import ApiCode, Conflict, Invalid
from .models import ToolCreate, ToolPatch
from .tools import ToolOps

Outcome = Literal["created", "updated", "unchanged", "in_trash"]


@dataclass(frozen=True)
class ToolRelease:
    """A tool as it should be published."""

    pt: str  # publishedToolId
    tool_id: str
    name: str | None  # None: keep the tool's name (a new tool is named after its toolId)
    definition: dict[str, Any]  # stored and compared as given


# (toolId, its draft's version, publishedToolId) -> the publish done: ``ToolOps.publish`` by
# default; ``chatflow publish FILE`` passes the gated one (the tool's saved test cases first).
Publisher = Callable[[str, int, str], Awaitable[Any]]


async def publish_release(tools: ToolOps, release: ToolRelease,
                          publisher: Publisher | None = None) -> Outcome:
    """Make the registry publish ``release``; returns what was done (see the module doc)."""
    async def plain(tool_id: str, version: int, pt: str) -> Any:
        return await tools.publish(tool_id, version, published_id=pt)

    publish = publisher or plain
    await tools.registry.catch_up()
    state = tools.registry.state
    owner = state.published.get(release.pt)
    if owner is not None and owner != release.tool_id:
        raise Conflict(f"publishedToolId {release.pt!r} belongs to tool {owner!r}, "
                       f"not {release.tool_id!r}", code=ApiCode.PUBLISHED_ID_TAKEN, toolId=owner)
    tool = state.tools.get(release.tool_id)
    if tool is not None and tool.get("deletedAt"):
        return "in_trash"
    published: dict[str, Any] = (tool or {}).get("publishedTool") or {}
    if published.get("id") not in (None, release.pt):
        raise Conflict(f"tool {release.tool_id!r} is published as {published['id']!r}, "
                       f"not {release.pt!r}", code=ApiCode.PUBLISHED_ID_MISMATCH,
                       publishedToolId=published["id"])
    name = release.name or (tool["name"] if tool else release.tool_id)
    if published.get("definition") == release.definition and published.get("name") == name:
        return "unchanged"
    problems = check_draft(state, release.tool_id, release.definition)
    if problems:
        raise Invalid(f"tool {release.tool_id!r} cannot be published: {len(problems)} "
                      "problem(s)", problems=problems, code=ApiCode.INVALID_DEFINITION)
    if tool is None:
        created = await tools.create(ToolCreate(id=release.tool_id, name=name,
                                                definition=release.definition))
        await publish(release.tool_id, int(created["version"]), release.pt)
        return "created"
    version = int(tool["version"])
    if tool.get("definition") != release.definition or tool.get("name") != name:
        saved = await tools.save(release.tool_id, ToolPatch(
            name=name, definition=release.definition, version=version))
        version = int(saved["version"])
    await publish(release.tool_id, version, release.pt)
    return "updated"
