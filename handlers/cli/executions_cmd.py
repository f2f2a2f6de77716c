"""``chatflow executions``: the executions in flight: the root tool, what runs now (the nested
tool and block), age and deadline. With ``--state finished|all``, finished runs from the run
history too (CHATFLOW_HISTORY_URL), with the filters of ``GET /api/executions``.

Roots in flight are the members of every partition's ``{cf:N}:deadlines`` zset;
a waiting parent's active child is ``<parent>.<version - 1>`` (runtime/machine.py
``spawn``), so the chain is followed down to the block that runs now.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from ..dataplane.trees import active_leaf, store_for
from ..keys import Keys
from ..redis_client import Client
from .common import add_redis_flag, client_for, history_url, settings_from

if TYPE_CHECKING:  # SQLAlchemy loads only when the history is read
    from ..history.queries import Filters


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
    workspace: str = "default"  # fixed when the tree started (RootInfo.workspace)


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
                             max(0, now - state.startedMs), deadline - now,
                             state.root.workspace))
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
    p = sub.add_parser("executions", help="list the executions in flight (and finished runs)")
    add_redis_flag(p)
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--state", choices=("running", "finished", "all"), default="running",
                   help="running (default: in flight, from Valkey), finished or all (finished "
                        "runs too, from the run history)")
    p.add_argument("--tool-id")
    p.add_argument("--published-tool-id")
    p.add_argument("--status", choices=("ok", "error", "cancelled", "timeout"))
    p.add_argument("--error-code")
    p.add_argument("--contact", help="contact id")
    p.add_argument("--since", help="started at or after: epoch ms or ISO 8601")
    p.add_argument("--until", help="started before: epoch ms or ISO 8601")
    p.add_argument("--children", action="store_true", help="nested runs too")
    p.add_argument("--limit", type=int, default=50, help="finished runs per page (max 200)")
    p.add_argument("--cursor", help="the next page: the cursor the previous one printed")
    p.add_argument("--history-url", help="overrides CHATFLOW_HISTORY_URL")
    p.set_defaults(handler=cmd_executions)


def render_finished(rows: list[dict[str, object]]) -> str:
    if not rows:
        return "no finished runs match"
    head = ("EXECUTION", "TOOL", "STATUS", "ERROR", "STARTED", "DURATION", "CONTACT")
    body = [(str(r["executionId"]), str(r["publishedToolId"]), str(r["status"]),
             str(r["errorCode"] or ""),
             time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(str(r["startedMs"])) / 1000)),
             f"{int(str(r['durationMs'])) / 1000:.3f}s", str(r["contactId"] or ""))
            for r in rows]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in [head, *body])


async def _finished(args: argparse.Namespace,
                    filters: Filters) -> tuple[list[dict[str, object]], str | None]:
    from chatflow.runtime.errors import ConfigurationError

    from ..history.db import engine_for
    from ..history.queries import BadQuery, list_runs

    url = history_url(args, settings_from(args), "finished runs live in the run history")
    engine = engine_for(url)
    try:  # the shell is an operator's: every workspace's runs
        return await list_runs(engine, None, filters, limit=args.limit,
                               cursor=args.cursor)
    except BadQuery as exc:
        raise ConfigurationError(str(exc)) from exc
    finally:
        await engine.dispose()


def _filters(args: argparse.Namespace) -> Filters:
    from chatflow.runtime.errors import ConfigurationError

    from ..history.queries import BadQuery, Filters

    try:  # one parser with GET /api/executions (handlers/history/queries.py)
        return Filters.parse(tool_id=args.tool_id, published_tool_id=args.published_tool_id,
                             status=args.status, error_code=args.error_code,
                             contact_id=args.contact, since=args.since, until=args.until,
                             children=True if args.children else None,
                             names=("--since", "--until"))
    except BadQuery as exc:
        raise ConfigurationError(str(exc)) from exc


async def _run(args: argparse.Namespace) -> int:
    filters = _filters(args)
    rows: list[InFlight] = []
    if args.state in ("running", "all") and not args.cursor:
        client, keys = client_for(settings_from(args))
        try:
            rows = await in_flight(client, keys)
        finally:
            await client.aclose()
        now = int(time.time() * 1000)
        rows = [r for r in rows
                if filters.admits_running(r.toolId, r.tool, r.contactId, now - r.ageMs)]
    finished, cursor = await _finished(args, filters) if args.state != "running" else ([], None)
    if args.json:
        for r in rows:
            print(json.dumps({**asdict(r), "state": "running"}, ensure_ascii=False))
        for f in finished:
            print(json.dumps(f, ensure_ascii=False))
    else:
        if args.state != "finished":
            print(render(rows))
        if args.state == "running" and not rows:
            print("finished runs are in the run history: add --state finished (or --state all)",
                  file=sys.stderr)
        if args.state != "running":
            print(render_finished(finished))
    if cursor:
        print(f"more: --cursor {cursor}", file=sys.stderr)
    return 0


def cmd_executions(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
