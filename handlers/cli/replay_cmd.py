"""``chatflow replay EXECUTION``: rebuild an execution from its event streams, re-run the pure
state machine over its recorded block outcomes, and report the first decision that differs."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from collections.abc import Mapping

from pydantic import ValidationError

from chatflow.runtime.replay import ReplayReport, definition_hashes, replay
from chatflow.schemas.definition import PublishedTool, ToolDefinition

from ..client import trace
from ..keys import Keys
from ..redis_client import Client
from .common import add_redis_flag, client_for, settings_from
from .exec_cmd import render_trace


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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("replay", help="rebuild an execution from its event stream and check it")
    add_redis_flag(p)
    p.add_argument("execution", help="a root execution id (ToolResult.executionId)")
    p.set_defaults(handler=cmd_replay)


async def _run(args: argparse.Namespace) -> int:
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
    return asyncio.run(_run(args))
