"""The producer's side, as the handlers use it: the SDK's producer client
(``chatflow_agent.runtime_client``: publish, wait for results, execute), plus the readers of
the runtime's internal keys a producer of the public wire never needs (an execution's trace,
a tree's first log entry).

Used by ``chatflow exec``, ``chatflow fork``, the API, the Studio, the benchmark and the tests.
"""

from __future__ import annotations

from chatflow.runtime.state import LogEntry, decode_log
from chatflow_agent.errors import ResultTimeout
from chatflow_agent.runtime_client import execute, last_id, publish, wait_results

from ..keys import Keys
from ..redis_client import Client

__all__ = ["ResultTimeout", "execute", "first_log_entry", "last_id", "publish", "trace",
           "wait_results"]


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
