"""``chatflow tail --contact ID``: follow a contact's debug stream, readable for a person."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from .common import add_redis_flag, client_for, settings_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("tail", help="follow a contact's debug stream")
    add_redis_flag(p)
    p.add_argument("--contact", required=True, help="contactId")
    p.add_argument("--from-start", action="store_true", help="replay what the stream holds")
    p.add_argument("--json", action="store_true", help="print raw JSON lines")
    p.add_argument("--count", type=int, default=0, help="stop after N events (0: follow)")
    p.set_defaults(handler=cmd_tail)


def render_event(event: dict[str, Any]) -> str:
    """One line per debug event: time, nesting (indentation), status, block, duration, and
    what navigation matched; a nested tool's blocks name their tool."""
    payload = event.get("payload", {})
    at = str(event.get("occurredAt", ""))[11:23]
    kind = event.get("actionType", "")
    if event.get("type") == "action_start":
        inputs = json.dumps(payload.get("inputs"), ensure_ascii=False)
        return f"{at} ▶ {payload.get('publishedToolId')} inputs={inputs}"
    if kind == "executeTool":
        if "error" in payload:
            return f"{at} ✖ {payload['error'].get('code')}: {payload['error'].get('message')}"
        return f"{at} ■ result={json.dumps(payload.get('result'), ensure_ascii=False)}"
    depth = int(payload.get("depth", 0))
    pad = "  " * (depth + 1) + ("└ " if depth else "")
    status = "✖ error" if payload.get("error") else "✓ ok   "
    parts = [f"{at} {pad}{status} {payload.get('blockId')} [{payload.get('blockType')}]",
             f"{payload.get('durationMs', 0)}ms"]
    if depth:
        parts.append(f"({payload.get('publishedToolId')}, depth {depth})")
    if payload.get("method"):
        parts.append(f"{payload['method']} {payload.get('url')} → {payload.get('status', '-')}")
    if payload.get("matchedConditionId"):
        parts.append(f"→ matched {payload['matchedConditionId']}")
    elif payload.get("blockType") != "return" and not payload.get("error"):
        parts.append("→ default")
    if payload.get("error"):
        parts.append(f"error={payload['error']}")
    return " ".join(parts)


async def _tail(args: argparse.Namespace) -> int:
    client, keys = client_for(settings_from(args))
    stream = keys.debug(args.contact)
    cursor: bytes | str = "0-0" if args.from_start else "$"
    seen = 0
    try:
        while not args.count or seen < args.count:
            reply = await client.xread({stream: cursor}, count=100, block=1000)
            for _name, entries in reply or []:
                for entry_id, fields in entries:
                    cursor = entry_id
                    event = json.loads(fields[b"data"])
                    print(json.dumps(event, ensure_ascii=False) if args.json
                          else render_event(event), flush=True)
                    seen += 1
    finally:
        await client.aclose()
    return 0


def cmd_tail(args: argparse.Namespace) -> int:
    return asyncio.run(_tail(args))
