"""``chatflow exec``: publish one command, wait for its result, print it (and its trace)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from chatflow.runtime.errors import ConfigurationError, ErrorCode

from .common import add_redis_flag, client_for, pairs, settings_from, variables

if TYPE_CHECKING:
    from chatflow.runtime.state import LogEntry
    from chatflow.schemas.wire import ExecuteToolCommand

    from ..keys import Keys
    from ..redis_client import Client


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("exec", help="publish one executeTool command and print its result")
    add_redis_flag(p)
    p.add_argument("--file", help="a JSON file holding a whole ExecuteToolCommand")
    p.add_argument("--tool", help="publishedToolId to run")
    p.add_argument("--tool-id", default=None, help="Tool.id (defaults to the publishedToolId)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=VALUE",
                   help="a tool input (repeatable); VALUE may use {{session}} variables")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="a session variable of the calling flow (repeatable); a dotted NAME "
                        "(order.total=40) sets that path inside an object variable")
    p.add_argument("--contact", default="cli", help="contactId of the context")
    p.add_argument("--output", default="result", help="outputVariable")
    p.add_argument("--on-error", choices=["blocking", "continue"], default="blocking")
    p.add_argument("--debug", action="store_true", help="emit debug events for the contact")
    p.add_argument("--trace", action="store_true", help="print the block-by-block trace")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the result")
    p.set_defaults(handler=cmd_exec)


def build_command(args: argparse.Namespace) -> ExecuteToolCommand:
    from chatflow.schemas.wire import ExecuteToolCommand

    if args.file:
        try:
            return msgspec.json.decode(Path(args.file).read_bytes(), type=ExecuteToolCommand)
        except (OSError, msgspec.DecodeError) as exc:
            raise ConfigurationError(f"--file {args.file}: {exc}") from exc
    if not args.tool:
        raise ConfigurationError("give --tool PUBLISHED_TOOL_ID or --file COMMAND.json")
    inputs = pairs(args.input, "--input")
    data: dict[str, Any] = {
        "commandId": f"cli-{uuid.uuid4().hex[:12]}",
        "action": {"id": "cli", "type": "executeTool", "toolId": args.tool_id or args.tool,
                   "publishedToolId": args.tool, "outputVariable": args.output,
                   "onError": args.on_error, "errorVariable": "error",
                   "inputVariables": [{"name": k, "value": v} for k, v in inputs.items()]},
        "context": {"contactId": args.contact, "variables": variables(args.var, "--var"),
                    "debug": args.debug},
    }
    return msgspec.convert(data, ExecuteToolCommand)


def render_trace(entries: list[LogEntry]) -> str:
    lines = []
    for e in entries:
        depth = e.execId.count(".")
        pad = "  " * depth
        if e.type == "block":
            mark = "ok " if e.ok else "ERR"
            extra = f" -> {e.matchedConditionId}" if e.matchedConditionId else ""
            err = f"  {e.error.message}" if e.error else ""
            lines.append(f"{pad}{mark} {e.blockId} [{e.blockType}] {e.durationMs}ms{extra}{err}")
        elif e.type == "spawned":
            lines.append(f"{pad}    callTool {e.blockId} -> child {e.child}")
        elif e.type in ("finished", "aborted"):
            outcome = repr(e.result) if e.ok else (e.error.message if e.error else "")
            lines.append(f"{pad}{e.type} {outcome}")
    return "\n".join(lines)


async def _run(args: argparse.Namespace) -> int:
    from chatflow_agent.errors import ResultTimeout

    from ..interfaces.client import execute, trace

    settings = settings_from(args)
    client, keys = client_for(settings)
    try:
        command = build_command(args)
        try:
            result = await execute(client, keys, command, timeout_s=args.timeout)
        except ResultTimeout as exc:
            raise ConfigurationError(f"{exc}: is a worker running against this REDIS_URL? "
                                     "(`chatflow worker` or `chatflow up`)") from exc
        print(json.dumps(msgspec.to_builtins(result), ensure_ascii=False, indent=2))
        if result.error is not None and result.error.code == ErrorCode.TOOL_NOT_FOUND:
            hint = await suggest_tool(client, keys, command.action.publishedToolId)
            if hint:
                print(f"chatflow: {hint}", file=sys.stderr)
        if args.trace and result.executionId:
            print(render_trace(await trace(client, keys, result.executionId)), file=sys.stderr)
        return 0 if result.ok else 1
    finally:
        await client.aclose()


async def suggest_tool(client: Client, keys: Keys, wanted: str) -> str | None:
    """For a publishedToolId nothing is published under: the tool whose name, id or slug it
    is, and the id it is published as; else the closest published ids and names. From the
    registry's tool view (what the API and `chatflow tools` keep), best effort."""
    import difflib

    views = [json.loads(raw) for raw in
             (await client.hgetall(keys.registry_view("tools"))).values()]
    live = [v for v in views if v.get("kind") == "custom" and not v.get("deletedAt")]
    folded = wanted.casefold()
    for v in live:
        if folded in {str(v.get(k) or "").casefold() for k in ("name", "id", "slug")}:
            what = f"{wanted!r} is tool {v['id']!r} ({v.get('name') or 'no name'})"
            if v.get("publishedToolId"):
                return (f"{what}, published as {v['publishedToolId']!r}: chatflow exec "
                        f"--tool {v['publishedToolId']} ...")
            return f"{what}, which is not published yet: publish it first"
    published = {v["publishedToolId"]: v for v in live if v.get("publishedToolId")}
    by_name = {str(v.get("name") or ""): pt for pt, v in published.items()}
    close = difflib.get_close_matches(wanted, [*published, *by_name], n=3, cutoff=0.5)
    ids = list(dict.fromkeys(by_name.get(c, c) for c in close))
    if not ids:
        return None
    return "no tool is published as {!r}; did you mean {}?".format(
        wanted, " or ".join(f"{pt!r} ({published[pt].get('name') or 'no name'})" for pt in ids))


def cmd_exec(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))
