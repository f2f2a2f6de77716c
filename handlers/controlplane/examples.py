"""Publishing the example tools (``chatflow up``) through the tool registry.

Each file of the ``chatflow_examples`` package is ``{id, toolId, name, definition}``.
The tool ``toolId`` is created with that definition as its draft, then published
under the publishedToolId ``id`` (the ids flows and the README use: ``pt-greeting``
...), as the registry API does. So the examples are in the registry's log like any
tool: ``GET /api/tools`` lists them and ``chatflow registry rebuild`` keeps their
``tool:{id}``.

Idempotent, keyed by the files' ids (``chatflow up`` runs again on the same data), by
:func:`handlers.registry.publishing.publish_release`, which ``chatflow publish FILE`` uses
too:

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
from graphlib import TopologicalSorter
from importlib import resources

import structlog

from chatflow.runtime.registry.validation import call_targets
from chatflow.schemas.definition import PublishedTool

from ..keys import Keys
from ..redis_client import make_client
from ..registry import Registry
from ..registry.crypto import SecretBox
from ..registry.publishing import ToolRelease, publish_release
from ..registry.tools import ToolOps
from ..settings import Settings

log = structlog.get_logger("chatflow.examples")


def _files() -> list[bytes]:
    folder = resources.files("chatflow.examples")
    return [item.read_bytes() for item in sorted(folder.iterdir(), key=lambda p: p.name)
            if item.name.endswith(".json")]


def example_tools() -> list[PublishedTool]:
    return [PublishedTool.model_validate_json(data) for data in _files()]


def examples() -> list[ToolRelease]:
    """The shipped examples in file-name order, each checked against the PublishedTool schema."""
    out = []
    for data in _files():
        tool = PublishedTool.model_validate_json(data)
        raw = json.loads(data)  # as shipped: the registry stores and compares it as is
        out.append(ToolRelease(tool.id, tool.toolId, tool.name, raw["definition"]))
    return out


def in_call_order(items: list[ToolRelease]) -> list[ToolRelease]:
    """Callees before their callers: publishing checks that every callTool target is published."""
    by_pt = {e.pt: e for e in items}
    graph = {e.pt: [pt for _key, pt in call_targets(e.definition) if pt in by_pt]
             for e in items}
    return [by_pt[pt] for pt in TopologicalSorter(graph).static_order()]


async def publish_examples(settings: Settings, url: str) -> list[str]:
    """Publish the examples through the registry; the publishedToolIds now published."""
    keys = Keys(settings.prefix, settings.partitions)
    client = make_client(url, cluster=settings.redis_cluster)
    try:
        tools = ToolOps(Registry(client, keys, SecretBox.from_settings(settings)))
        items = examples()
        live = set()
        for example in in_call_order(items):
            outcome = await publish_release(tools, example)
            log.info("example tool", publishedToolId=example.pt, outcome=outcome)
            if outcome != "in_trash":
                live.add(example.pt)
        return [e.pt for e in items if e.pt in live]
    finally:
        await client.aclose()
