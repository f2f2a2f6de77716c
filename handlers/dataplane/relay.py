"""Relay a partition's outbox to the public streams, each message exactly once.

A transition's messages enter the outbox atomically with the transition;
this relay copies each one to its public stream under a dedup marker that
lives in the target stream's slot, then acks. A crash between the two is
harmless: the redelivered entry finds its marker and is only acked.
"""

from __future__ import annotations

import asyncio

import structlog

from ..keys import RELAY_GROUP, Keys
from ..operations import metrics
from ..redis_client import Entry
from ..settings import Settings
from .store import Publish, Store

log = structlog.get_logger("chatflow.relay")


class Relay:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.keys: Keys = store.keys
        self.settings = settings
        self.published = 0
        self._order: dict[int, asyncio.Lock] = {}

    def target(self, kind: bytes, key: bytes) -> tuple[str, int]:
        return self.store.targets.resolve(kind.decode(), key.decode())

    async def process(self, partition: int, entries: list[Entry]) -> None:
        # One batch of a partition at a time, in the order read: a subscriber keeps several
        # batches in flight, and a tree's messages (debug events) must not overtake each other.
        lock = self._order.setdefault(partition, asyncio.Lock())
        async with lock:
            await self._relay(partition, entries)

    async def _relay(self, partition: int, entries: list[Entry]) -> None:
        items: list[Publish] = []
        answers: list[Publish] = []
        for entry_id, fields in entries:
            kind = fields.get(b"k", b"")
            stream, maxlen = self.target(kind, fields.get(b"t", b""))
            marker = Keys.sent_marker(stream, f"{partition}:{entry_id.decode()}")
            publish = Publish(stream, marker, fields.get(b"d", b"{}"), maxlen,
                              self.store.targets.ttl(kind.decode()))
            (answers if kind == b"result" else items).append(publish)
        # A cluster pipeline runs on every node at once; results go out last, so whoever sees
        # a result (a flow, a test, a person tailing) also sees that tree's debug events.
        await self.store.publish_once(items)
        await self.store.publish_once(answers, answers=True)
        items += answers
        ids = [entry_id for entry_id, _ in entries]
        outbox = self.keys.outbox(partition)
        async with self.store.client.pipeline(transaction=False) as pipe:
            pipe.xack(outbox, RELAY_GROUP, *ids)
            pipe.xdel(outbox, *ids)
            await pipe.execute()
        self.published += len(items)
        metrics.relayed(fields.get(b"k", b"") for _id, fields in entries)
