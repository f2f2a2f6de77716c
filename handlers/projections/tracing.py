"""The tracing projection: ``stream:tool-executions`` -> OTLP spans, in the consumer group
``chatflow-tracing`` (docs/operations.md "Tracing").

Each execution event is a finished execution whose every transition has committed: its
spans are built from its tree's event log (``handlers/projections/spans.py``) and exported
over OTLP/HTTP (protobuf, ``handlers/projections/otlp.py``); a batch is acked only once the
collector took the request holding its spans. So spans come from committed transitions only,
a worker killed between the commit and the export loses none (its batch stays pending and
another worker reclaims it), and a batch exported twice (redelivered, reclaimed, the group
rebuilt) sends spans with the same derived ids and the same content: one span per block visit
at the collector. A collector that is down holds back this group alone (its own position),
never the steps; nothing here is ever dead-lettered.

The cost per execution is kept small (docs/scale.md "Tracing"): the logs of a batch are read
in one pipelined round trip; a tree the sampler drops is skipped before its log is decoded
(its decision needs the command's ``traceparent``, and a log without one is decided from the
root id alone); a log is decoded in outline, its written values parsed over; and batches
share requests: a request takes the spans of the batches that arrive while it fills (up to
``FLUSH_BATCHES`` of them or ``FLUSH_SPANS`` spans, for at most ``linger_s``) or while the one
before it is being sent, so one POST carries hundreds of trees under load.

The worker runs it while tracing is on (``CHATFLOW_TRACING_PROJECTION``, default true).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import TYPE_CHECKING

import msgspec
import structlog

from chatflow.runtime.state import LogOutline, outline_log

from ..history.capture import parse_events
from ..keys import TRACING_GROUP, Keys
from ..operations.tracing import Tracing
from ..redaction import SecretIndex
from ..redis_client import Client, Entry, ensure_group, send_all
from .otlp import Outgoing, Sender
from .spans import SpanBuilder

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from chatflow.schemas.wire import ScopedExecutionEvent

    from ..operations.tracing import TreeTrace

    Process = Callable[[list[Entry]], Awaitable[None]]

log = structlog.get_logger("chatflow.tracing")
FAILED_LOG_EVERY_S = 60.0
LINGER_S = 0.2  # the longest a batch's spans wait for others to share their request
FLUSH_BATCHES = 8  # batches waiting on one request (each holds a worker's batch slot)
FLUSH_SPANS = 4096  # spans in one request (a few hundred KB)
_TRACEPARENT = b'"traceparent"'


class _Request:
    """A request being filled or sent, the entries to ack once the collector took it, and
    the batches waiting for that."""

    def __init__(self, outgoing: Outgoing) -> None:
        self.outgoing = outgoing
        self.ids: list[bytes] = []
        self.batches = 0
        self.done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.timer: asyncio.TimerHandle | None = None


class TracingProjection:
    def __init__(self, client: Client, keys: Keys, tracing: Tracing, consumer: str, *,
                 claim_idle_ms: int = 15_000, batch_size: int = 64,
                 sender: Sender | None = None, linger_s: float = LINGER_S,
                 flush_batches: int = FLUSH_BATCHES) -> None:
        self.client = client
        self.keys = keys
        self.consumer = consumer
        self.tracing = tracing
        self.builder = SpanBuilder(tracing)
        self.secrets = SecretIndex(client, keys)  # masked wherever they appear, as the history
        self.sender = sender or Sender(tracing.endpoint, tracing.resource)
        self.claim_idle_ms = claim_idle_ms
        self.batch_size = batch_size
        self.linger_s = linger_s
        self.flush_batches = flush_batches
        self.exported = 0  # spans the collector took
        self._open: _Request | None = None  # the request batches add their spans to
        self._queue: deque[_Request] = deque()  # closed, to be sent in order
        self._sending: asyncio.Task[None] | None = None
        self._failed_logged_at = -FAILED_LOG_EVERY_S

    async def ensure_group(self) -> None:
        await ensure_group(self.client, self.keys.executions, TRACING_GROUP)

    # -- one batch --------------------------------------------------------------------

    async def process(self, entries: list[Entry]) -> None:
        """The consumer-group handler: the batch's spans join the open request, and the
        batch is acked once the collector took it; a request the collector refused or
        could not take leaves its batches pending for the reclaim."""
        ids = [entry_id for entry_id, _ in entries]
        events = [event for _dedup, event, _ms in parse_events(entries) if event.executionId]
        trees = await self._trees(events)
        secrets = {ws: await self.secrets.of(ws) for ws in {e.workspace for e in events}}
        # From here to the join nothing awaits: the open request cannot be sent half-filled.
        request = self._open
        added = 0
        for event in events:
            found = trees.get(_root(event))
            if found is None:
                continue
            if request is None:
                request = self._open = _Request(self.sender.request())
            tree, outline = found
            added += self.builder.add(request.outgoing.spans, event, outline, tree,
                                      secrets[event.workspace])
        if not added:  # nothing of this batch is sampled (or its logs are gone)
            if ids:
                await self.client.xack(self.keys.executions, TRACING_GROUP, *ids)
            return
        assert request is not None
        request.ids += ids
        request.batches += 1
        request.outgoing.count += added
        if request.batches >= self.flush_batches or request.outgoing.count >= FLUSH_SPANS:
            self._close(request)
        elif request.timer is None:
            request.timer = asyncio.get_running_loop().call_later(self.linger_s, self._close,
                                                                 request)
        await asyncio.shield(request.done)

    async def _trees(self, events: list[ScopedExecutionEvent]
                     ) -> dict[str, tuple[TreeTrace, list[LogOutline]]]:
        """The sampled trees of ``events``, each with its log in outline: all logs read in one
        round trip, an unsampled tree's log left undecoded."""
        by_partition: dict[int, list[str]] = {}
        for root in dict.fromkeys(_root(e) for e in events):
            try:
                by_partition.setdefault(self.keys.partition_of_exec(root), []).append(root)
            except ValueError:
                continue
        if not by_partition:
            return {}
        # One MGET per partition (a partition's keys share a hash slot), all in one write.
        replies = await send_all(self.client, [
            ("MGET", *(self.keys.log(n, root) for root in roots))
            for n, roots in by_partition.items()])
        wanted = [root for roots in by_partition.values() for root in roots]
        raws = [raw for reply in replies for raw in reply]
        out = {}
        for root, raw in zip(wanted, raws, strict=True):
            raw = raw or b""
            if _TRACEPARENT not in raw and not self.tracing.tree(root).sampled:
                continue  # no producer's decision to obey, and the root id's says no
            try:
                outline = outline_log(raw)
            except (msgspec.DecodeError, ValueError):  # its spans are lost, the batch is not
                log.warning("event log undecodable; its spans are skipped", root_id=root)
                continue
            tree = self.builder.tree_of(root, outline)
            if tree.sampled:
                out[root] = (tree, outline)
        return out

    # -- requests ---------------------------------------------------------------------

    def _close(self, request: _Request) -> None:
        """No more spans join ``request``: it is queued to be sent."""
        if request is not self._open:
            return
        self._open = None
        if request.timer is not None:
            request.timer.cancel()
        self._queue.append(request)
        if self._sending is None or self._sending.done():
            self._sending = asyncio.get_running_loop().create_task(self._send_queued())

    async def _send_queued(self) -> None:
        """Send the queued requests one at a time (the exporter's HTTP session serves one),
        acking each one's entries once the collector took it."""
        while self._queue:
            request = self._queue.popleft()
            try:
                ok = await asyncio.to_thread(self.sender.send, request.outgoing)
                if ok:
                    self.exported += request.outgoing.count
                    await self.client.xack(self.keys.executions, TRACING_GROUP, *request.ids)
                else:
                    self._refused(request)
            except Exception as exc:  # a Redis error on the ack: the batches stay pending
                request.done.set_exception(exc)
                continue
            request.done.set_result(ok)

    def _refused(self, request: _Request) -> None:
        now = time.monotonic()
        if now - self._failed_logged_at >= FAILED_LOG_EVERY_S:
            self._failed_logged_at = now
            log.warning("spans not exported; batches left pending",
                        spans=request.outgoing.count, batches=request.batches)

    async def flush(self) -> None:
        """Send what is open now and wait for every request queued (a worker stopping)."""
        if self._open is not None:
            self._close(self._open)
        if self._sending is not None:
            await asyncio.shield(self._sending)

    # -- recovery ---------------------------------------------------------------------

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
        self.sender.shutdown()


def _root(event: ScopedExecutionEvent) -> str:
    return event.rootExecutionId or event.executionId.split(".", 1)[0]


__all__ = ["TRACING_GROUP", "TracingProjection"]
