"""A producer's side: publish executeTool commands and wait for their results.

Used by ``chatflow exec``, the benchmark and the tests; any language can do
the same with XADD and XREAD (see the README).
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from chatflow.runtime.state import LogEntry, decode_log
from chatflow.schemas.wire import ExecuteToolCommand, ToolResult
from chatflow_agent.errors import ResultTimeout

from ..keys import Keys
from ..redis_client import Client

_result = msgspec.json.Decoder(ToolResult)


async def last_id(client: Client, stream: str) -> bytes:
    entries = await client.xrevrange(stream, count=1)
    return entries[0][0] if entries else b"0-0"


async def publish(client: Client, keys: Keys, command: ExecuteToolCommand | dict[str, Any]) -> bytes:
    data = msgspec.json.encode(command)
    entry_id: bytes = await client.xadd(keys.commands, {"data": data})
    return entry_id


async def wait_results(client: Client, stream: str, command_ids: set[str], *, after: bytes,
                       timeout_s: float = 60.0) -> dict[str, list[ToolResult]]:
    """Every result for ``command_ids`` seen on ``stream`` after ``after`` (lists: to spot duplicates)."""
    found: dict[str, list[ToolResult]] = {}
    cursor = after
    deadline = time.monotonic() + timeout_s
    while set(found) < command_ids:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            missing = sorted(command_ids - set(found))
            raise ResultTimeout(f"{len(missing)} results missing after {timeout_s}s, "
                                f"e.g. {missing[:3]}")
        reply = await client.xread({stream: cursor}, count=1000, block=min(left_ms, 1000))
        for _name, entries in reply or []:
            for entry_id, fields in entries:
                cursor = entry_id
                result = _result.decode(fields[b"data"])
                if result.commandId in command_ids:
                    found.setdefault(result.commandId, []).append(result)
    return found


async def execute(client: Client, keys: Keys, command: ExecuteToolCommand,
                  timeout_s: float = 60.0) -> ToolResult:
    stream = command.replyTo or keys.results
    after = await last_id(client, stream)
    await publish(client, keys, command)
    found = await wait_results(client, stream, {command.commandId}, after=after,
                               timeout_s=timeout_s)
    return found[command.commandId][0]


async def trace(client: Client, keys: Keys, exec_id: str) -> list[LogEntry]:
    """An execution's event log with its children's, depth-first, in order.

    A tree's log is one string, a line per transition (``Keys.log``, of its root). A tree a
    worker of the previous version started also has its first entries in per-execution
    streams (``Keys.events``); they come first, since that version ran first."""
    partition = keys.partition_of_exec(exec_id)
    root = exec_id.split(".", 1)[0]
    by_exec: dict[str, list[LogEntry]] = {}
    for entry in decode_log(await client.get(keys.log(partition, root)) or b""):
        by_exec.setdefault(entry.execId, []).append(entry)
    return await _depth_first(client, keys, partition, exec_id, by_exec)


async def _depth_first(client: Client, keys: Keys, partition: int, exec_id: str,
                       by_exec: dict[str, list[LogEntry]]) -> list[LogEntry]:
    old = [entry for _id, fields in await client.xrange(keys.events(partition, exec_id))
           for entry in decode_log(fields[b"d"])]
    out: list[LogEntry] = []
    for entry in old + by_exec.get(exec_id, []):
        out.append(entry)
        if entry.type == "spawned" and entry.child:
            out.extend(await _depth_first(client, keys, partition, entry.child, by_exec))
    return out


async def first_log_entry(client: Client, keys: Keys, root_id: str) -> LogEntry | None:
    """A tree's first log entry (its root's ``started``), whichever version wrote it."""
    partition = keys.partition_of_exec(root_id)
    raw = await client.get(keys.log(partition, root_id))
    line = raw.split(b"\n", 1)[0] if raw else b""
    if not line:
        first = await client.xrange(keys.events(partition, root_id), count=1)
        line = first[0][1][b"d"] if first else b""
    entries = decode_log(line) if line else []
    return entries[0] if entries else None
