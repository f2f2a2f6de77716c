"""Reading batches of stream entries: the worker's readers, and raw FastStream subscribers.

The worker reads its groups with :class:`GroupReader` (one blocking XREADGROUP per group
over all its streams, which heals a lost group); the standalone projection runner still uses
FastStream's subscriber, wired by :func:`raw_broker`. There, two FastStream defaults cost
more than the work they wrap on our hot path, so the brokers made here turn them off:

- ``apply_types=False``: FastDepends would resolve the handler's parameters on
  every batch, and injecting ``Context("message")`` enters and exits a sync
  context manager through anyio's thread pool, two thread hops per batch
  (measured: about 0.8 ms from XREADGROUP's reply to our handler, idle). Our
  handler takes one argument, the decoded batch, and needs no injection.
- The batch parser JSON-decodes every entry and re-encodes the batch; an entry
  that is not valid UTF-8 JSON (a producer's mistake) would fail the whole batch
  there, before our own code could dead-letter it. ``raw_entries`` hands
  FastStream placeholders, and ``entries_of`` gives the handler the raw
  ``(entry id, fields)`` pairs, which our processors decode themselves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from faststream.redis import RedisBroker
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import ResponseError

from ..redis_client import Client, Entry, is_connection_lost, send_all

log = structlog.get_logger("chatflow.worker")

_NULL = {b"__data__": b"null"}
_QUIET: Any = None  # FastStream's per-message INFO lines would drown ours


def raw_broker(url: str, *, cluster: bool = False) -> Any:
    """A broker whose handlers get the decoded batch as their only argument."""
    if cluster:
        from faststream.redis import RedisClusterBroker

        return RedisClusterBroker(url, logger=_QUIET, apply_types=False)
    return RedisBroker(url, logger=_QUIET, apply_types=False)


async def raw_entries(message: Any, original: Callable[[Any], Awaitable[Any]]) -> Any:
    """Parser: FastStream parses placeholders; the raw entries ride along in the raw message."""
    light = dict(message)
    light["entries"] = message["data"]
    light["data"] = [_NULL]
    return await original(light)


async def entries_of(message: Any) -> list[Entry]:
    """Decoder: the batch as ``(entry id, fields)`` pairs, as XREADGROUP returned them."""
    raw = message.raw_message
    return list(zip(raw["message_ids"], raw["entries"], strict=True))


# -- the worker's own readers -------------------------------------------------------------

Process = Callable[[list[Entry]], Awaitable[None]]
Take = Callable[[str, str, Process, list[Entry]], Awaitable[None]]
Heal = Callable[[], Awaitable[None]]
RELOG_EVERY_S = 30.0  # a failure that lasts is logged again this often, not on every retry
MAX_BACKOFF_S = 2.0


def is_missing_group(exc: BaseException) -> bool:
    """Whether the server says the stream or its group is gone (restart with no persistence,
    FLUSHALL, a failover to an empty replica): recreating the groups fixes it."""
    return isinstance(exc, ResponseError) and str(exc).startswith("NOGROUP")


def by_slot(streams: list[str], cluster: bool) -> list[list[str]]:
    """Streams one XREADGROUP may read together: all of them on one node; on a cluster, the
    keys of one hash slot (a multi-key command must not cross slots)."""
    if not cluster:
        return [streams] if streams else []
    slots: dict[int, list[str]] = {}
    for stream in streams:
        slots.setdefault(key_slot(stream.encode()), []).append(stream)
    return list(slots.values())


def _entries(raw: list[Any]) -> list[Entry]:
    """XREADGROUP's raw entries (``[id, [field, value, ...]]``, as hiredis parsed them) as
    ``(id, fields)`` pairs: what redis-py's reply callback builds, without its per-entry
    calls (a command entry has one field)."""
    out: list[Entry] = []
    for entry_id, fields in raw:
        if not fields:  # an entry deleted while pending comes back with no fields
            out.append((entry_id, {}))
        elif len(fields) == 2:
            out.append((entry_id, {fields[0]: fields[1]}))
        else:
            it = iter(fields)
            out.append((entry_id, dict(zip(it, it, strict=True))))
    return out


async def read_group(client: Client, group: str, consumer: str, ids: dict[str, str], *,
                     count: int, block: int) -> list[tuple[str, list[Entry]]]:
    """One XREADGROUP over ``ids``' streams: ``(stream, entries)`` for each stream that has
    some. On one node the reply is read raw (:func:`send_all`) and turned into entries here,
    which costs a third of redis-py's client call and reply callback; a cluster client
    routes the read by its keys' slot itself."""
    if isinstance(client, RedisCluster):
        streams: dict[Any, Any] = dict(ids)
        reply: Any = await client.xreadgroup(group, consumer, streams, count=count, block=block)
        items = reply.items() if isinstance(reply, dict) else reply or ()
        return [(_name(stream), entries) for stream, entries in items if entries]
    raw = (await send_all(client, [("XREADGROUP", "GROUP", group, consumer, "COUNT", count,
                                    "BLOCK", block, "STREAMS", *ids, *ids.values())]))[0]
    if isinstance(raw, dict):  # RESP3: a map of stream -> entries
        raw = list(raw.items())
    return [(_name(stream), _entries(entries)) for stream, entries in raw or () if entries]


def _name(stream: str | bytes) -> str:
    return stream.decode() if isinstance(stream, bytes) else stream


class GroupReader:
    """Every stream of one consumer group read by ONE blocking XREADGROUP.

    FastStream's stream subscriber reads one stream per connection and polls it every
    ``polling_interval``: a worker with P partitions made 2P+2 reads per interval doing
    nothing. One read over all streams of a group, blocking until an entry arrives, costs one
    round trip per ``block_ms`` when idle, whatever P is, and still returns as soon as any
    stream gets an entry. It also does what FastStream's subscriber cannot: when the server
    says a group is gone (NOGROUP) it recreates the groups and reads on, instead of stopping
    for good with nothing logged.
    """

    def __init__(self, client: Client, group: str, consumer: str, streams: dict[str, Process],
                 take: Take, heal: Heal, *, count: int, block_ms: int,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.client = client
        self.group = group
        self.consumer = consumer
        self.streams = streams
        self.take = take
        self.heal = heal
        self.count = count
        self.block_ms = block_ms
        self.on_change = on_change
        self.failing_since: float | None = None  # monotonic start of the current failure streak
        self.unreachable = False  # the streak's last failure was the server not answering
        self.last_error = ""
        self.healed = 0  # times the groups were recreated after NOGROUP
        self._logged_at = 0.0

    @property
    def reading(self) -> bool:
        return self.failing_since is None

    def stalled_for(self, now: float) -> float:
        """Seconds this reader has failed for a reason a restart could fix (0 if it reads, or
        if the server is only unreachable: that is readiness' business, a restart would not
        bring the server back)."""
        if self.failing_since is None or self.unreachable:
            return 0.0
        return now - self.failing_since

    async def run(self) -> None:
        ids = dict.fromkeys(self.streams, ">")
        delay = 0.0
        while True:
            try:
                reply = await read_group(self.client, self.group, self.consumer, ids,
                                         count=self.count, block=self.block_ms)
            except Exception as exc:  # a reader must outlive any one failure
                delay = await self._failed(exc, delay)
                continue
            if self.failing_since is not None:
                log.info("stream reader resumed", group=self.group, streams=len(self.streams),
                         after_s=round(time.monotonic() - self.failing_since, 1))
                self.failing_since, self.unreachable, delay = None, False, 0.0
                self.on_change()
            for name, entries in reply:
                await self.take(name, self.group, self.streams[name], entries)

    async def _failed(self, exc: Exception, delay: float) -> float:
        """Record, log and (for NOGROUP) repair one failed read; wait before the next one."""
        now = time.monotonic()
        first = self.failing_since is None
        since = self.failing_since = now if self.failing_since is None else self.failing_since
        # A connection the server closed (redis-py #4287's leaked AttributeError included)
        # takes the ConnectionError path: the connection was dropped, the next read opens a
        # new one, at once.
        self.unreachable = is_connection_lost(exc)
        self.last_error = f"{type(exc).__name__}: {exc}"
        if first:
            self.on_change()  # told after the failure is recorded
        if first or now - self._logged_at >= RELOG_EVERY_S:
            self._logged_at = now
            if is_missing_group(exc):
                log.error("consumer group missing (Valkey restarted empty, was flushed or failed "
                          "over to an empty replica); recreating the groups", group=self.group,
                          error=str(exc))
            elif self.unreachable:
                log.warning("stream reader: Redis unreachable; retrying", group=self.group,
                            error=str(exc))
            else:
                log.error("stream reader failing; retrying", group=self.group,
                          error=self.last_error, failing_s=round(now - since, 1))
        if is_missing_group(exc):
            try:
                await self.heal()
                self.healed += 1
            except Exception as heal_exc:  # the next read reports the failure again
                self.last_error = f"recreating the groups failed: {heal_exc}"
        await asyncio.sleep(delay)
        # Retry at once after a repair, then back off while the failure lasts.
        return min(MAX_BACKOFF_S, max(0.05, delay * 2))
