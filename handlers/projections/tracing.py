"""The tracing projection: ``stream:tool-executions`` -> OTLP spans, in the consumer group
``chatflow-tracing`` (docs/operations.md "Tracing").

Each execution event is a finished execution whose every transition has committed: its
spans are built from its tree's event log (``handlers/projections/spans.py``) and exported
over OTLP/HTTP (protobuf) by the OpenTelemetry SDK's exporter; the batch is acked only once
the collector took it. So spans come from committed transitions only, a worker killed
between the commit and the export loses none (its batch stays pending and another worker
reclaims it), and a batch exported twice (redelivered, reclaimed, the group rebuilt) sends
spans with the same derived ids and the same content: one span per block visit at the
collector. A collector that is down holds back this group alone (its own position), never
the steps; nothing here is ever dead-lettered.

The worker runs it while tracing is on (``CHATFLOW_TRACING_PROJECTION``, default true).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import structlog
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from chatflow.runtime.state import LogEntry, decode_log

from ..history.capture import parse_events
from ..keys import TRACING_GROUP, Keys
from ..operations.tracing import Tracing, otlp_exporter
from ..redaction import SecretIndex
from ..redis_client import Client, Entry
from .spans import SpanBuilder

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

log = structlog.get_logger("chatflow.tracing")
Process = Callable[[list[Entry]], Awaitable[None]]
FAILED_LOG_EVERY_S = 60.0


class TracingProjection:
    def __init__(self, client: Client, keys: Keys, tracing: Tracing, consumer: str, *,
                 claim_idle_ms: int = 15_000, batch_size: int = 64,
                 exporter: SpanExporter | None = None) -> None:
        self.client = client
        self.keys = keys
        self.consumer = consumer
        self.builder = SpanBuilder(tracing)
        self.secrets = SecretIndex(client, keys)  # masked wherever they appear, as the history
        self.exporter = exporter or otlp_exporter(tracing.endpoint)
        self.claim_idle_ms = claim_idle_ms
        self.batch_size = batch_size
        self.exported = 0  # spans the collector took
        self._one_export = asyncio.Lock()  # the exporter's HTTP session serves one at a time
        self._failed_logged_at = -FAILED_LOG_EVERY_S

    async def ensure_group(self) -> None:
        try:
            await self.client.xgroup_create(self.keys.executions, TRACING_GROUP, id="0",
                                            mkstream=True)
        except Exception as exc:  # BUSYGROUP: it exists already
            if "BUSYGROUP" not in str(exc):
                raise

    async def spans_of(self, entries: list[Entry]) -> list[ReadableSpan]:
        """The spans of the executions in ``entries``: each tree's log read once."""
        events = [event for _dedup, event, _ms in parse_events(entries) if event.executionId]
        roots = list(dict.fromkeys(e.rootExecutionId or e.executionId.split(".", 1)[0]
                                   for e in events))
        logs = await self._logs(roots)
        spans: list[ReadableSpan] = []
        for event in events:
            root = event.rootExecutionId or event.executionId.split(".", 1)[0]
            tree = logs.get(root, [])
            if not self.builder.tree_of(root, tree).sampled:
                continue
            spans += self.builder.spans(event, tree, await self.secrets.of(event.workspace))
        return spans

    async def _logs(self, roots: list[str]) -> dict[str, list[LogEntry]]:
        wanted = []
        for root in roots:
            try:
                wanted.append((root, self.keys.partition_of_exec(root)))
            except ValueError:
                continue
        if not wanted:
            return {}
        async with self.client.pipeline(transaction=False) as pipe:
            for root, partition in wanted:
                pipe.get(self.keys.log(partition, root))
            raws = await pipe.execute()
        out = {}
        for (root, _p), raw in zip(wanted, raws, strict=True):
            try:
                out[root] = decode_log(raw or b"")
            except Exception:  # an undecodable log: its spans are lost, the batch is not
                log.warning("event log undecodable; its spans are skipped", root_id=root)
        return out

    async def process(self, entries: list[Entry]) -> None:
        """The consumer-group handler: export, then ack; an export the collector refused or
        could not take leaves the batch pending for the reclaim."""
        spans = await self.spans_of(entries)
        if spans and not await self._export(spans):
            return
        ids = [entry_id for entry_id, _ in entries]
        if ids:
            await self.client.xack(self.keys.executions, TRACING_GROUP, *ids)

    async def _export(self, spans: list[ReadableSpan]) -> bool:
        async with self._one_export:
            result = await asyncio.to_thread(self.exporter.export, spans)
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
            return True
        now = time.monotonic()
        if now - self._failed_logged_at >= FAILED_LOG_EVERY_S:
            self._failed_logged_at = now
            log.warning("spans not exported; batch left pending", spans=len(spans))
        return False

    async def reclaim(self, dispatch: Process, held: set[bytes] | None = None) -> int:
        """Take entries another consumer left idle (it died, or the collector was down)."""
        stream = self.keys.executions
        await self.ensure_group()  # Valkey may have restarted without persistence
        pending = await self.client.xpending_range(stream, TRACING_GROUP, min="-", max="+",
                                                   count=self.batch_size,
                                                   idle=self.claim_idle_ms)
        ids = [p["message_id"] for p in pending if p["message_id"] not in (held or set())]
        if not ids:
            return 0
        claimed: list[Entry] = await self.client.xclaim(stream, TRACING_GROUP, self.consumer,
                                                        self.claim_idle_ms, ids)
        gone = [e[0] for e in claimed if not e[1]]  # trimmed from the stream meanwhile
        if gone:
            await self.client.xack(stream, TRACING_GROUP, *gone)
        fresh = [e for e in claimed if e[1]]
        if fresh:
            await dispatch(fresh)
        return len(fresh)

    def shutdown(self) -> None:
        self.exporter.shutdown()


__all__ = ["TRACING_GROUP", "TracingProjection"]
