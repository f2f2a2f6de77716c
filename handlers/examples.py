"""Publishing the example tools (``chatflow up``) through the tool registry.

Each file of the ``chatflow_examples`` package is ``{id, toolId, name, definition}``.
The tool ``toolId`` is created with that definition as its draft, then published
under the publishedToolId ``id`` (the ids flows and the README use: ``pt-greeting``
...), as the registry API does. So the examples are in the registry's log like any
tool: ``GET /api/tools`` lists them and ``chatflow registry rebuild`` keeps their
``tool:{id}``.

Idempotent, keyed by the files' ids (``chatflow up`` runs again on the same data):

* no tool ``toolId``: create it and publish it under ``id``;
* its published name and definition are the shipped ones: leave it (no event);
* they differ (the shipped file changed, or the example was edited and published in
  the registry): save the shipped name and definition as the draft and publish them,
  so the registry holds what this package ships;
* the tool is in the trash: leave it there, unpublished (someone put it there);
* ``id`` belongs to another tool, or ``toolId`` is published under another id:
  a :class:`~handlers.registry.Conflict`, nothing written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from graphlib import TopologicalSorter
from importlib import resources
from typing import Any

import structlog

from schemas.definition import PublishedTool

from .keys import Keys
from .redis_client import make_client
from .registry import Conflict, Registry
from .registry.crypto import SecretBox
from .registry.models import ToolCreate, ToolPatch
from .registry.tools import ToolOps
from .settings import Settings

log = structlog.get_logger("chatflow.examples")


@dataclass(frozen=True)
class Example:
    pt: str  # publishedToolId
    tool_id: str
    name: str
    definition: dict[str, Any]  # as shipped: the registry stores and compares it as is

    def calls(self) -> list[str]:
        blocks = self.definition.get("blocks") or {}
        return [str(b.get("publishedToolId")) for b in blocks.values()
                if isinstance(b, dict) and b.get("type") == "callTool"]


def _files() -> list[bytes]:
    folder = resources.files("chatflow_examples")
    return [item.read_bytes() for item in sorted(folder.iterdir(), key=lambda p: p.name)
            if item.name.endswith(".json")]


def example_tools() -> list[PublishedTool]:
    return [PublishedTool.model_validate_json(data) for data in _files()]


def examples() -> list[Example]:
    """The shipped examples in file-name order, each checked against the PublishedTool schema."""
    out = []
    for data in _files():
        tool = PublishedTool.model_validate_json(data)
        raw = json.loads(data)
        out.append(Example(tool.id, tool.toolId, tool.name, raw["definition"]))
    return out


def in_call_order(items: list[Example]) -> list[Example]:
    """Callees before their callers: publishing checks that every callTool target is published."""
    by_pt = {e.pt: e for e in items}
    graph = {e.pt: [pt for pt in e.calls() if pt in by_pt] for e in items}
    return [by_pt[pt] for pt in TopologicalSorter(graph).static_order()]


async def sync_example(tools: ToolOps, example: Example) -> str:
    """Make the registry publish ``example``; returns what was done (see the module doc)."""
    await tools.registry.catch_up()
    state = tools.registry.state
    owner = state.published.get(example.pt)
    if owner is not None and owner != example.tool_id:
        raise Conflict(f"example {example.pt!r}: that publishedToolId belongs to tool "
                       f"{owner!r}, not {example.tool_id!r}", code="published_id_taken")
    tool = state.tools.get(example.tool_id)
    if tool is None:
        created = await tools.create(ToolCreate(id=example.tool_id, name=example.name,
                                                definition=example.definition))
        await tools.publish(example.tool_id, created["version"], published_id=example.pt)
        return "created"
    if tool.get("deletedAt"):
        return "in_trash"
    published = tool.get("publishedTool") or {}
    if published.get("definition") == example.definition and published.get("name") == example.name:
        return "unchanged"
    version = int(tool["version"])
    if tool.get("definition") != example.definition or tool.get("name") != example.name:
        saved = await tools.save(example.tool_id, ToolPatch(
            name=example.name, definition=example.definition, version=version))
        version = int(saved["version"])
    await tools.publish(example.tool_id, version, published_id=example.pt)
    return "updated"


async def publish_examples(settings: Settings, url: str) -> list[str]:
    """Publish the examples through the registry; the publishedToolIds now published."""
    keys = Keys(settings.prefix, settings.partitions)
    client = make_client(url, cluster=settings.redis_cluster)
    try:
        tools = ToolOps(Registry(client, keys, SecretBox(settings.encryption_key)))
        items = examples()
        live = set()
        for example in in_call_order(items):
            outcome = await sync_example(tools, example)
            log.info("example tool", publishedToolId=example.pt, outcome=outcome)
            if outcome != "in_trash":
                live.add(example.pt)
        return [e.pt for e in items if e.pt in live]
    finally:
        await client.aclose()
