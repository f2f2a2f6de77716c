"""Run the execution log projection on its own (``chatflow projections run``).

The worker runs the same subscriber (handlers/dataplane/worker.py); this process is for
deployments that keep projections apart from tool execution. Same group, so
both may run at once: entries are shared between them and deduplicated anyway.

While tracing is on (an OTLP endpoint, docs/operations.md "Tracing") it also runs the tracing
projection, which exports the spans: with ``CHATFLOW_TRACING_PROJECTION=false`` on the
workers, that work leaves the workers' processes for these.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import structlog
from faststream.middlewares import AckPolicy
from faststream.redis import StreamSub
from redis.exceptions import RedisError

from chatflow.runtime.machine import Machine

from ..dataplane.batches import entries_of, raw_broker, raw_entries
from ..dataplane.recovery import Recovery
from ..dataplane.store import Store
from ..keys import PROJECTION_GROUP, TRACING_GROUP, Keys
from ..redis_client import Entry, make_client
from ..settings import Settings
from .execlog import ExecutionLog, ensure_group, trim_source

if TYPE_CHECKING:
    from .tracing import TracingProjection

log = structlog.get_logger("chatflow.projections")


class ProjectionRunner:
    def __init__(self, settings: Settings, url: str, consumer: str) -> None:
        s = settings
        self.settings = s
        self.keys = Keys(s.prefix, s.partitions)
        self.client = make_client(url, cluster=s.redis_cluster)
        self.projection = ExecutionLog(self.client, self.keys,
                                       log_retention_ms=s.projection_log_retention_s * 1000)
        store = Store(self.client, self.keys, state_ttl_s=s.state_ttl_s,
                      dedup_ttl_s=s.dedup_ttl_s, marker_ttl_s=s.marker_ttl_s)
        self.recovery = Recovery(store, Machine(s.limits()), s, consumer)
        self.broker = raw_broker(url, cluster=s.redis_cluster)
        self._loop: asyncio.Task[None] | None = None
        self.spans: TracingProjection | None = None
        if s.traces_endpoint():
            from ..operations.tracing import Tracing
            from .tracing import TracingProjection

            tracing = Tracing.from_settings(s)
            assert tracing is not None
            # FastStream hands this subscriber one batch at a time: each batch is sent at
            # once (no batch would join it while it waited), and batches are larger instead.
            self.spans = TracingProjection(self.client, self.keys, tracing, consumer,
                                           claim_idle_ms=s.claim_idle_ms, batch_size=s.batch_size,
                                           flush_batches=1)
            export = self.spans.process

            async def handle_spans(entries: list[Entry]) -> None:
                await export(entries)

            self.broker.subscriber(
                stream=StreamSub(self.keys.executions, group=TRACING_GROUP, consumer=consumer,
                                 batch=True, max_records=s.batch_size * 8,
                                 polling_interval=s.block_ms),
                ack_policy=AckPolicy.MANUAL, parser=raw_entries, decoder=entries_of,
            )(handle_spans)

        async def handle(entries: list[Entry]) -> None:
            await self.projection.process(entries)

        self.broker.subscriber(
            stream=StreamSub(self.keys.executions, group=PROJECTION_GROUP, consumer=consumer,
                             batch=True, max_records=s.batch_size, polling_interval=s.block_ms),
            ack_policy=AckPolicy.MANUAL,
            parser=raw_entries,  # a malformed entry must not fail FastStream's batch parse
            decoder=entries_of,
        )(handle)

    async def _maintain(self) -> None:
        s = self.settings
        ticks = 0
        while True:
            with contextlib.suppress(RedisError):
                await self.recovery.reclaim(self.keys.executions, PROJECTION_GROUP, -1,
                                            self.projection.process, "projection")
                if self.spans is not None:
                    await self.spans.reclaim(self.spans.process)
                if ticks % 30 == 0:
                    await trim_source(self.client, self.keys,
                                      retention_ms=s.executions_retention_s * 1000,
                                      unread_max_ms=s.executions_unread_max_s * 1000)
            ticks += 1
            await asyncio.sleep(s.claim_interval_ms / 1000)

    async def start(self) -> None:
        await ensure_group(self.client, self.keys)
        if self.spans is not None:
            await self.spans.ensure_group()
        await self.broker.start()
        self._loop = asyncio.create_task(self._maintain())
        log.info("projection running", stream=self.keys.executions, group=PROJECTION_GROUP)

    async def stop(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
        await self.broker.stop()
        if self.spans is not None:
            await self.spans.flush()
            await asyncio.to_thread(self.spans.shutdown)
        await self.client.aclose()
