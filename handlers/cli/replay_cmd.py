"""``chatflow replay EXECUTION``: rebuild an execution from its event streams, re-run the pure
state machine over its recorded block outcomes, and report the first decision that differs."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

import msgspec
from pydantic import ValidationError

from chatflow.runtime.replay import ReplayReport, definition_hashes, replay
from chatflow.schemas.definition import PublishedTool, ToolDefinition
from chatflow.schemas.wire import ToolExecutionStreamEvent

from ..interfaces.client import trace
from ..keys import Keys
from ..redis_client import Client
from .common import add_redis_flag, client_for, settings_from
from .exec_cmd import render_trace

_decode_event = msgspec.json.Decoder(ToolExecutionStreamEvent)


async def load_definitions(client: Client, keys: Keys, partition: int,
                           hashes: Mapping[str, str] | set[str]) -> dict[str, ToolDefinition]:
    """The definitions the trace ran with, by content hash: the tree's copy
    (``{cf:N}:def:<sha1>``), else the published tool itself (``tool:<id>``, when ``hashes``
    maps a hash to its publishedToolId) while its hash still matches. A tree answered in the
    hop that took its command writes no copy."""
    out: dict[str, ToolDefinition] = {}
    for digest in sorted(hashes):
        raw = await client.get(keys.definition(partition, digest))
        pt = hashes.get(digest) if isinstance(hashes, Mapping) else None
        if raw is None and pt:
            raw = await client.get(keys.tool(pt))
            if raw is not None and hashlib.sha1(raw, usedforsecurity=False).hexdigest() != digest:
                raw = None  # published again since: not the definition the tree ran
        if raw is None:
            continue
        try:
            out[digest] = PublishedTool.model_validate_json(raw).definition
        except ValidationError:
            continue
    return out


async def replay_execution(client: Client, keys: Keys, exec_id: str) -> ReplayReport:
    entries = await trace(client, keys, exec_id)
    definitions = await load_definitions(client, keys, keys.partition_of_exec(exec_id),
                                         definition_hashes(entries))
    return replay(entries, definitions)


@dataclass
class BulkReport:
    """What ``chatflow replay --verify`` found over the recent trees."""

    trees: int = 0
    transitions: int = 0
    expired: int = 0  # its log is gone (CHATFLOW_STATE_TTL_S): nothing left to check
    differing: list[tuple[str, str]] = field(default_factory=list)  # (execution id, divergence)


async def recent_roots(client: Client, keys: Keys, count: int) -> list[str]:
    """The root execution ids of the newest ``count`` events on ``stream:tool-executions``
    (a root's event is written when its tree ends, so each id names a finished tree)."""
    out: list[str] = []
    seen: set[str] = set()
    for _id, fields in await client.xrevrange(keys.executions, count=count):
        try:
            event = _decode_event.decode(fields[b"data"])
        except (KeyError, msgspec.DecodeError):
            continue  # not ours to judge here: the projection reports malformed events
        root = event.rootExecutionId or event.executionId
        if event.depth == 0 and root and root not in seen:
            seen.add(root)
            out.append(root)
    return out


async def verify_recent(client: Client, keys: Keys, count: int) -> BulkReport:
    """Replay every tree among the newest ``count`` execution events and collect the ones
    whose record differs from what the machine decides now."""
    bulk = BulkReport()
    for root in await recent_roots(client, keys, count):
        report = await replay_execution(client, keys, root)
        if not report.trace:
            bulk.expired += 1
            continue
        bulk.trees += 1
        bulk.transitions += report.transitions
        if report.first is not None:
            bulk.differing.append((root, str(report.first)))
    return bulk


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("replay", help="rebuild an execution from its event stream and check it")
    add_redis_flag(p)
    p.add_argument("execution", nargs="?",
                   help="a root execution id (ToolResult.executionId)")
    p.add_argument("--verify", action="store_true",
                   help="replay every tree among the newest --count execution events and "
                        "report each whose record differs (exit 1 if any)")
    p.add_argument("--count", type=int, default=10_000,
                   help="with --verify: how many of the newest execution events to look at")
    p.set_defaults(handler=cmd_replay)


async def _run_bulk(args: argparse.Namespace) -> int:
    client, keys = client_for(settings_from(args))
    try:
        bulk = await verify_recent(client, keys, args.count)
    finally:
        await client.aclose()
    for root, divergence in bulk.differing[:20]:
        print(f"{root}: {divergence}")
    print(f"replayed {bulk.trees} tree(s), {bulk.transitions} transition(s); "
          f"{len(bulk.differing)} differ; {bulk.expired} expired before they could be read")
    return 1 if bulk.differing else 0


async def _run(args: argparse.Namespace) -> int:
    if args.execution is None:
        return await _run_bulk(args)
    client, keys = client_for(settings_from(args))
    try:
        report = await replay_execution(client, keys, args.execution)
    finally:
        await client.aclose()
    if not report.trace:
        print(f"no event stream for {args.execution} (expired after CHATFLOW_STATE_TTL_S, "
              "or never existed)", file=sys.stderr)
        return 1
    print(render_trace(report.trace))
    print(f"\nreplayed {report.executions} execution(s), {report.transitions} transition(s)")
    if report.first is None:
        print("every transition matches the record")
        return 0
    print(f"first differing transition: {report.first}")
    return 1


def cmd_replay(args: argparse.Namespace) -> int:
    if args.execution is None and not args.verify:
        print("chatflow replay: name an execution id, or pass --verify to check the recent "
              "ones", file=sys.stderr)
        return 2
    if args.count < 1:
        print("chatflow replay: --count must be at least 1", file=sys.stderr)
        return 2
    return asyncio.run(_run(args))
