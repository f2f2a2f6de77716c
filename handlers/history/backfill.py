"""Rows written before runs carried their workspace (revision r0002 added the column): filled
once, at the history projection's start, from the registry's tool views. This is the last
time a run's workspace is derived rather than recorded; every row written since carries the
workspace of its execution event.

A row's root published tool (a fork's is already its original tool's) names the tool; a test
run's root is ``test-<toolId>``. A tool the registry no longer knows leaves the row to
``default``, which is where such rows were shown before.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from chatflow.runtime.registry import DEFAULT_WORKSPACE, workspace_of

from ..keys import Keys
from ..redis_client import Client
from .schema import runs


async def owners(client: Client, keys: Keys) -> dict[str, str]:
    """Root published tool ids by workspace, from the registry's tool views."""
    out: dict[str, str] = {}
    for raw in (await client.hgetall(keys.registry_view("tools"))).values():
        try:
            view: Any = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(view, dict) or not isinstance(view.get("id"), str):
            continue
        workspace = workspace_of(view)
        out[f"test-{view['id']}"] = workspace
        if isinstance(view.get("publishedToolId"), str):
            out[view["publishedToolId"]] = workspace
    return out


async def backfill_workspaces(engine: AsyncEngine, by_tool: dict[str, str]) -> int:
    """Give every row without a workspace the one its root tool belongs to; how many."""
    async with engine.begin() as conn:
        tools = list((await conn.execute(
            sa.select(runs.c.root_published_tool_id).where(runs.c.workspace.is_(None))
            .distinct())).scalars())
        done = 0
        for tool in tools:
            result = await conn.execute(
                sa.update(runs).where(runs.c.workspace.is_(None),
                                      runs.c.root_published_tool_id == tool)
                .values(workspace=by_tool.get(tool, DEFAULT_WORKSPACE)))
            done += result.rowcount or 0
    return done
