"""The producer's client: publish executeTool commands on Redis and wait for their results.

The one copy: the SDK's runtime tools, ``chatflow exec``, ``chatflow fork``, the API's test
runs, the benchmark and the tests all use it (``chatflow.handlers.interfaces.client`` adds
only the readers of the runtime's internal keys). It speaks only the public wire
(chatflow.schemas), so an application that calls runtime tools needs the SDK and Redis,
nothing else; any language can do the same with XADD and XREAD (docs/spec.md).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from chatflow.schemas.keys import PublicKeys
from chatflow.schemas.wire import ExecuteToolCommand, ToolResult

from .errors import ResultTimeout, RuntimeUnavailable

Key = str | bytes
Value = bytes | str | int | float
Entry = tuple[bytes, dict[bytes, bytes]]  # one stream entry: (id, fields)
StreamReply = list[tuple[bytes, list[Entry]]]  # XREAD and XREADGROUP: per stream, its entries
T = TypeVar("T")


class ProducerClient(Protocol):
    """The commands the SDK sends, typed as a client made with ``decode_responses=False``
    answers them; ``redis.asyncio.Redis`` and ``RedisCluster`` both (tests/test_redis_types.py
    checks that they have each). ``chatflow.handlers.redis_client.Client`` adds the rest."""

    async def get(self, name: Key) -> bytes | None: ...

    async def hget(self, name: Key, key: Key) -> bytes | None: ...

    async def xadd(self, name: Key, fields: Mapping[str, Value], id: Key = "*",
                   maxlen: int | None = None, approximate: bool = True) -> bytes: ...

    async def xread(self, streams: Mapping[str, Key], count: int | None = None,
                    block: int | None = None) -> StreamReply | None: ...

    async def xrange(self, name: Key, min: Key = "-", max: Key = "+",
                     count: int | None = None) -> list[Entry]: ...

    async def xrevrange(self, name: Key, max: Key = "+", min: Key = "-",
                        count: int | None = None) -> list[Entry]: ...

    async def aclose(self) -> None: ...



RESULT = msgspec.json.Decoder(ToolResult)  # the one decoder of a result entry's ``data``
_UNREADABLE = (KeyError, msgspec.DecodeError, msgspec.ValidationError)

CLIENT_NAME = "chatflow-agent"  # how the SDK's connections show in CLIENT LIST


def make_client(url: str, *, cluster: bool = False) -> ProducerClient:
    try:
        made = (RedisCluster if cluster else aioredis.Redis).from_url(
            url, decode_responses=False, client_name=CLIENT_NAME)
        return cast(ProducerClient, made)
    except ValueError as exc:
        raise RuntimeUnavailable(f"{url!r} is not a Redis URL ({exc}); expected redis://host:port/db"
                                 ) from exc


async def last_id(client: ProducerClient, stream: str) -> bytes:
    """The id of ``stream``'s newest entry (``0-0`` when empty): read answers after it."""
    entries = await client.xrevrange(stream, count=1)
    return entries[0][0] if entries else b"0-0"


async def publish(client: ProducerClient, keys: PublicKeys,
                  command: ExecuteToolCommand | dict[str, Any]) -> bytes:
    """XADD ``command`` on ``stream:tool-commands``; its entry id."""
    return await client.xadd(keys.commands, {"data": msgspec.json.encode(command)})


async def batches_after(client: ProducerClient, stream: str, after: bytes, timeout_s: float,
                        decode: msgspec.json.Decoder[T]) -> AsyncIterator[list[T]]:
    """The entries of ``stream`` after ``after``, a batch per read, until ``timeout_s`` has
    passed; entries whose ``data`` does not decode are someone else's, and are skipped."""
    cursor = after
    deadline = time.monotonic() + timeout_s
    while (left_ms := int((deadline - time.monotonic()) * 1000)) > 0:
        reply = await client.xread({stream: cursor}, count=1000, block=min(left_ms, 1000))
        batch: list[T] = []
        for _name, entries in reply or []:
            for entry_id, fields in entries:
                cursor = entry_id
                try:
                    batch.append(decode.decode(fields[b"data"]))
                except _UNREADABLE:
                    continue
        yield batch


async def wait_for(client: ProducerClient, stream: str, after: bytes, timeout_s: float,
                   decode: msgspec.json.Decoder[T], match: Callable[[T], bool]) -> T | None:
    """The first entry after ``after`` on ``stream`` that ``match`` accepts; None at the timeout."""
    async for batch in batches_after(client, stream, after, timeout_s, decode):
        for value in batch:
            if match(value):
                return value
    return None


async def wait_results(client: ProducerClient, stream: str, command_ids: set[str], *,
                       after: bytes, timeout_s: float = 60.0) -> dict[str, list[ToolResult]]:
    """Every result for ``command_ids`` on ``stream`` after ``after``, once each has one (lists,
    to spot a duplicate); :class:`ResultTimeout` names the missing ones."""
    found: dict[str, list[ToolResult]] = {}
    if not command_ids:
        return found
    async for batch in batches_after(client, stream, after, timeout_s, RESULT):
        for result in batch:
            if result.commandId in command_ids:
                found.setdefault(result.commandId, []).append(result)
        if set(found) >= command_ids:  # the whole batch read: a duplicate in it is seen
            return found
    missing = sorted(command_ids - set(found))
    raise ResultTimeout(f"{len(missing)} results missing after {timeout_s}s, e.g. {missing[:3]}")


async def execute(client: ProducerClient, keys: PublicKeys, command: ExecuteToolCommand,
                  timeout_s: float = 60.0) -> ToolResult:
    """Publish ``command`` and wait for its result (on its ``replyTo``, else the default)."""
    stream = command.replyTo or keys.results
    after = await last_id(client, stream)
    await publish(client, keys, command)
    found = await wait_results(client, stream, {command.commandId}, after=after,
                               timeout_s=timeout_s)
    return found[command.commandId][0]
