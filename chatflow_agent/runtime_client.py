"""The SDK's own small Redis client for the runtime: connect, publish a command, wait for its
answer. It speaks only the public wire (chatflow.schemas): no part of the workers is imported,
so an application that calls runtime tools needs the SDK and Redis, nothing else.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from chatflow.schemas.keys import PublicKeys
from chatflow.schemas.wire import ExecuteToolCommand, ToolResult

from .errors import ResultTimeout, RuntimeUnavailable

Client = Any  # redis.asyncio.Redis | RedisCluster: both speak the few commands used here
Decoded = Any

_result = msgspec.json.Decoder(ToolResult)


CLIENT_NAME = "chatflow-agent"  # how the SDK's connections show in CLIENT LIST


def make_client(url: str, *, cluster: bool = False) -> Client:
    try:
        if cluster:
            return RedisCluster.from_url(url, decode_responses=False, client_name=CLIENT_NAME)
        return aioredis.Redis.from_url(url, decode_responses=False, client_name=CLIENT_NAME)
    except ValueError as exc:
        raise RuntimeUnavailable(f"{url!r} is not a Redis URL ({exc}); expected redis://host:port/db"
                                 ) from exc


async def last_id(client: Client, stream: str) -> bytes:
    """The id of ``stream``'s newest entry (``0-0`` when empty): read answers after it."""
    entries = await client.xrevrange(stream, count=1)
    return entries[0][0] if entries else b"0-0"


async def wait_for(client: Client, stream: str, after: bytes, timeout_s: float,
                   decode: msgspec.json.Decoder[Any], match: Any) -> Decoded | None:
    """The first entry after ``after`` on ``stream`` whose decoded ``data`` satisfies ``match``
    (entries that do not decode are someone else's and are skipped); ``None`` at the timeout."""
    cursor = after
    deadline = time.monotonic() + timeout_s
    while (left_ms := int((deadline - time.monotonic()) * 1000)) > 0:
        reply = await client.xread({stream: cursor}, count=1000, block=min(left_ms, 1000))
        for _name, entries in reply or []:
            for entry_id, fields in entries:
                cursor = entry_id
                try:
                    value = decode.decode(fields[b"data"])
                except (KeyError, msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if match(value):
                    return value
    return None


async def execute(client: Client, keys: PublicKeys, command: ExecuteToolCommand,
                  timeout_s: float = 60.0) -> ToolResult:
    """Publish ``command`` on ``stream:tool-commands`` and wait for its result."""
    stream = command.replyTo or keys.results
    after = await last_id(client, stream)
    await client.xadd(keys.commands, {"data": msgspec.json.encode(command)})
    found: ToolResult | None = await wait_for(client, stream, after, timeout_s, _result,
                                              lambda r: r.commandId == command.commandId)
    if found is None:
        raise ResultTimeout(f"no result for {command.commandId} after {timeout_s}s")
    return found
