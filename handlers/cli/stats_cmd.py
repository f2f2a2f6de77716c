"""``chatflow stats [TOOL]``: the rolling 7-day table of the execution log projection."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys

from ..keys import Keys
from ..projections.metrics import ToolMetrics, tool_metrics
from ..redis_client import Client
from .common import add_redis_flag, client_for, settings_from


def render(rows: dict[str, ToolMetrics]) -> str:
    if not rows:
        return "no tool has run yet (is the projection running? `chatflow projections run`)"
    head = ("TOOL", "RUNS 7D", "AVG MS", "SUCCESS")
    body = [(tool, str(m["runs7d"]), str(m["avgMs"]), f"{m['successRate'] * 100:.1f}%")
            for tool, m in sorted(rows.items(), key=lambda kv: (-kv[1]["runs7d"], kv[0]))]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = []
    for row in [head, *body]:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:],
                                                                          strict=True)]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("stats", help="runs, average duration and success rate over 7 days")
    add_redis_flag(p)
    p.add_argument("tool", nargs="?", help="a Tool.id (default: every tool seen)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_stats)


async def resolve_tool(client: Client, keys: Keys, name: str) -> tuple[str, str | None]:
    """The Tool.id to read for ``name``, and a note for stderr when it was not one.

    The projection is keyed by Tool.id; people often have the publishedToolId at hand (it is
    what commands and `chatflow tail` show), so one is mapped to its tool."""
    if await client.sismember(keys.proj_tools(), name):
        return name, None
    raw = await client.get(keys.tool(name))
    if raw is not None:
        with contextlib.suppress(ValueError, AttributeError):
            tool_id = json.loads(raw).get("toolId")
            if isinstance(tool_id, str) and tool_id:
                return tool_id, f"{name} is a publishedToolId; showing its tool {tool_id}"
    return name, (f"no runs of {name!r} in the execution log: stats take a Tool.id (the "
                  "`toolId` of tool-execution events; `chatflow stats` lists every tool seen)")


async def _run(args: argparse.Namespace) -> int:
    client, keys = client_for(settings_from(args))
    try:
        if args.tool:
            tool, note = await resolve_tool(client, keys, args.tool)
            if note:
                print(note, file=sys.stderr)
            tools = [tool]
        else:
            tools = sorted(t.decode() for t in await client.smembers(keys.proj_tools()))
        rows = await tool_metrics(client, keys, tools)
    finally:
        await client.aclose()
    print(json.dumps(rows, indent=2) if args.json else render(rows))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
