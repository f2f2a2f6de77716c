"""``chatflow executions``: the executions in flight: the root tool, what runs now (the nested
tool and block), age and deadline.

Roots in flight are the members of every partition's ``{cf:N}:deadlines`` zset;
a waiting parent's active child is ``<parent>.<version - 1>`` (runtime/machine.py
``spawn``), so the chain is followed down to the block that runs now.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import asdict, dataclass

from ..keys import Keys
from ..redis_client import Client
from ..trees import active_leaf, store_for
from .common import add_redis_flag, client_for, settings_from


@dataclass(frozen=True, slots=True)
class InFlight:
    executionId: str
    activeExecutionId: str
    commandId: str
    contactId: str
    tool: str  # the root's publishedToolId: the tool the command ran
    toolId: str
    activeTool: str  # the execution running now (a nested callTool child, or the root)
    activeToolId: str
    block: str  # the active execution's block
    depth: int  # the active execution's depth
    status: str
    ageMs: int
    deadlineInMs: int


async def in_flight(client: Client, keys: Keys, now_ms: int | None = None) -> list[InFlight]:
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    store = store_for(client, keys)
    async with client.pipeline(transaction=False) as pipe:
        for n in range(keys.partitions):
            pipe.zrange(keys.deadlines(n), 0, -1, withscores=True)
        per_partition = await pipe.execute()
    refs = [(n, member.decode(), int(score))
            for n, members in enumerate(per_partition) for member, score in members]
    states = await store.load_states([(n, exec_id) for n, exec_id, _ in refs])
    rows: list[InFlight] = []
    for (n, exec_id, deadline), state in zip(refs, states, strict=True):
        if state is None or state.status == "done":
            continue
        leaf = await active_leaf(store, n, state)
        rows.append(InFlight(exec_id, leaf.execId, state.root.commandId, state.root.contactId,
                             state.publishedToolId, state.toolId, leaf.publishedToolId,
                             leaf.toolId, leaf.block, leaf.depth, leaf.status,
                             max(0, now - state.startedMs), deadline - now))
    rows.sort(key=lambda r: -r.ageMs)
    return rows


def _running(row: InFlight) -> str:
    """The active block, prefixed by the nested tool it belongs to when that is not the root."""
    block = row.block or "-"
    return block if row.activeExecutionId == row.executionId else f"{row.activeTool} › {block}"


def render(rows: list[InFlight]) -> str:
    if not rows:
        return "no executions in flight"
    head = ("EXECUTION", "TOOL", "RUNNING NOW", "DEPTH", "AGE", "DEADLINE IN", "CONTACT")
    body = [(r.executionId, r.tool, _running(r), str(r.depth), f"{r.ageMs / 1000:.1f}s",
             f"{r.deadlineInMs / 1000:.1f}s", r.contactId) for r in rows]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in [head, *body])


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("executions", help="list the executions in flight")
    add_redis_flag(p)
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(handler=cmd_executions)


async def _run(args: argparse.Namespace) -> int:
    client, keys = client_for(settings_from(args))
    try:
        rows = await in_flight(client, keys)
    finally:
        await client.aclose()
    if args.json:
        for r in rows:
            print(json.dumps(asdict(r), ensure_ascii=False))
    else:
        print(render(rows))
    return 0


def cmd_executions(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
