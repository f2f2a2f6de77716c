"""The worker: batch readers on the command, step and outbox streams, and the recovery loops.

One process reads every partition's step and outbox streams and the command stream, one
blocking XREADGROUP per consumer group over all of its streams (handlers/dataplane/batches.py), and
runs the recovery loops. All of them are stateless: any worker, on any machine, can take any
entry. Acks are manual, because a step's ack is part of its atomic commit (handlers/dataplane/store.py).
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog
from redis.exceptions import RedisError

from chatflow.runtime.blocks.ai import register_media_and_ai
from chatflow.runtime.blocks.endpoint import CallEndpointExecutor
from chatflow.runtime.blocks.runner import BlockRunner
from chatflow.runtime.definitions import DefinitionCache
from chatflow.runtime.edge import Edge
from chatflow.runtime.machine import Machine
from chatflow.runtime.sandbox import ScriptLimits, ScriptSandbox

from ..keys import (
    COMMANDS_GROUP,
    HISTORY_GROUP,
    NATIVE_GROUP,
    PROJECTION_GROUP,
    RELAY_GROUP,
    STEPS_GROUP,
    TRACING_GROUP,
    Keys,
)
from ..operations import metrics as prom
from ..operations.health import HealthServer, memory_trouble
from ..operations.logging import use_tracing
from ..operations.loop import running_loop_name
from ..projections.execlog import ExecutionLog, trim_source
from ..redaction import SecretIndex
from ..redis_client import Client, Entry, ensure_group, is_connection_lost, make_client
from ..settings import Settings
from .batches import GroupReader, by_slot
from .delayed import DelayedSteps
from .edge import SharedGate
from .intake import Intake
from .leases import Leases
from .native import NativeToolServer
from .recovery import Recovery
from .relay import Relay
from .steps import StepProcessor
from .store import Store, Targets

if TYPE_CHECKING:  # imported when a history is configured: SQLAlchemy costs a second at start
    from ..history.runner import HistoryProjection
    from ..operations.tracing import Tracing
    from ..projections.tracing import TracingProjection

log = structlog.get_logger("chatflow.worker")
Process = Callable[[list[Entry]], Awaitable[None]]
LOST_LOG_EVERY_S = 30.0  # at most one "connection lost" line per worker in this span
OUTAGE_PROBE_MS = 2_000  # while Redis is down, every recovery loop retries at least this often
TRACING_READ_FACTOR = 8  # the tracing group reads this many batch sizes at a time


class Sub(NamedTuple):
    """One stream the worker reads: its group, partition (-1: none), processor, kind."""

    stream: str
    group: str
    partition: int
    process: Process
    kind: str


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


async def ensure_groups(client: Client, keys: Keys) -> None:
    """Create every consumer group at id 0 (FastStream would create them at ``$``,
    silently skipping whatever was published before the first worker started)."""
    pairs = [(keys.commands, COMMANDS_GROUP), (keys.executions, PROJECTION_GROUP)]
    for n in range(keys.partitions):
        pairs += [(keys.steps(n), STEPS_GROUP), (keys.outbox(n), RELAY_GROUP)]
    for stream, group in pairs:
        await ensure_group(client, stream, group)


@dataclass
class Worker:
    settings: Settings
    url: str
    consumer: str = field(default_factory=consumer_name)
    extra_executors: dict[str, Any] = field(default_factory=dict)
    native_tools: dict[str, Any] = field(default_factory=dict)  # name -> Tool (handlers/dataplane/native.py)

    def __post_init__(self) -> None:
        s = self.settings
        s.check()  # contradicting settings are refused here, naming both
        self.keys = Keys(s.prefix, s.partitions)
        self.client = make_client(self.url, cluster=s.redis_cluster)
        # The readers' own client: each holds a connection in XREADGROUP BLOCK for up to
        # read_block_ms, longer than redis-py's default socket timeout allows; a dead server
        # still fails the read a few seconds after the block would have ended.
        # On a cluster there is one reader (one held connection) per partition stream.
        self.read_client = make_client(self.url, cluster=s.redis_cluster,
                                       max_connections=max(256, 2 * s.partitions + 16
                                                           + len(self.native_tools)),
                                       read_timeout_s=s.read_block_ms / 1000 + 5)
        self.store = Store(self.client, self.keys, state_ttl_s=s.state_ttl_s,
                           dedup_ttl_s=s.dedup_ttl_s, marker_ttl_s=s.marker_ttl_s,
                           direct=not s.redis_cluster,
                           targets=Targets(self.keys, s.results_maxlen, s.executions_maxlen,
                                           s.debug_maxlen, s.llm_usage_maxlen, s.debug_ttl_s),
                           log_value_max_bytes=s.log_value_max_bytes)
        self.store.secrets = SecretIndex(self.client, self.keys)
        self.definitions = DefinitionCache()
        self.machine = Machine(s.limits())
        # None while tracing is off (no OTLP endpoint): then nothing below does tracing work,
        # and OpenTelemetry is not even imported.
        self.tracing: Tracing | None = None
        if s.traces_endpoint():
            from ..operations.tracing import Tracing
            self.tracing = Tracing.from_settings(s)
        self.http = s.outbound()
        self.sandbox = ScriptSandbox(ScriptLimits(timeout_ms=s.script_timeout_ms,
                                                  max_memory_bytes=s.script_max_memory_mb << 20),
                                     lanes=s.script_lanes or None, child_env=s.sandbox_env())
        # Limits and circuit breakers of integration servers and origins (runtime/edge.py).
        self.gate = SharedGate(self.client, self.keys, lease_ms=s.claim_idle_ms)
        self.runner = BlockRunner(http=self.http, sandbox=self.sandbox, tools=self.store,
                                  definitions=self.definitions, limits=self.machine.limits,
                                  script_timeout_ms=s.script_timeout_ms,
                                  edge=Edge(self.gate, s.origins()))
        register_media_and_ai(self.runner, self.store, s.media_config(), s.ai_config())
        self.runner.register("callEndpoint", CallEndpointExecutor(
            self.http, self.store, self.machine.limits, self.gate))
        for kind, executor in self.extra_executors.items():
            self.runner.register(kind, executor)
        self.delayed = DelayedSteps(self.store)
        self.steps = StepProcessor(self.store, self.machine, self.runner, self.definitions,
                                   run_ahead_budget_ms=min(500, s.claim_idle_ms // 4),
                                   tracing=self.tracing, on_delayed=self.delayed.note)
        self.intake = Intake(self.store, self.machine, self.definitions,
                             run_ahead=self.steps.run_ahead, tracing=self.tracing)
        self.intake.results_maxlen = s.results_maxlen
        self.intake.reply_allowed = s.reply_allowed()
        self.intake.dead_letters_maxlen = s.dead_letters_maxlen
        self.relay = Relay(self.store, s)
        self.leases = Leases(self.store, self.consumer,
                             max_hold_ms=s.tool_timeout_ms + s.claim_idle_ms)
        self.recovery = Recovery(self.store, self.machine, s, self.consumer, self.leases)
        self.native = NativeToolServer(self.client, self.keys, self.native_tools, s.results_maxlen,
                                       tracing=self.tracing)
        self.projection = ExecutionLog(self.client, self.keys,
                                       log_retention_ms=s.projection_log_retention_s * 1000)
        # Run history in SQL (handlers/history): only when CHATFLOW_HISTORY_URL is set.
        self.history: HistoryProjection | None = None
        if s.history_url:
            from ..history.runner import HistoryProjection
            self.history = HistoryProjection.from_settings(self.client, self.keys, s,
                                                           self.consumer)
        # The spans of finished executions (handlers/projections/tracing.py), while tracing is on.
        self.spans: TracingProjection | None = None
        if self.tracing is not None and s.tracing_projection:
            from ..projections.tracing import TracingProjection
            self.spans = TracingProjection(self.client, self.keys, self.tracing, self.consumer,
                                           claim_idle_ms=s.claim_idle_ms, batch_size=s.batch_size)
        prom.configure(s.metrics_max_tools)
        self.health: HealthServer | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(s.inflight_batches * (2 * s.partitions + 1))
        self._loops: list[asyncio.Task[None]] = []
        self._reading: list[asyncio.Task[None]] = []
        self._lost_logged_at = -LOST_LOG_EVERY_S
        self._lost_suppressed = 0
        # OOM rejections seen by the last readiness probe, and by the last scrape: each
        # compares with its own previous look, so a scrape never hides one from the probe.
        self._oom_seen: int | None = None
        self._oom_seen_scrape: int | None = None
        self.readers = self._make_readers()

    # -- wiring ----------------------------------------------------------------

    def _subscriptions(self) -> list[Sub]:
        """Every stream this worker reads; all but the native calls (answered at most once)
        are watched by recovery too."""
        k = self.keys
        subs = [Sub(k.commands, COMMANDS_GROUP, -1, self.intake.process, "commands")]
        for n in range(k.partitions):
            subs.append(Sub(k.steps(n), STEPS_GROUP, n, _bind(self.steps.process, n), "steps"))
            subs.append(Sub(k.outbox(n), RELAY_GROUP, n, _bind(self.relay.process, n), "outbox"))
        if self.settings.projections_enabled:
            subs.append(Sub(k.executions, PROJECTION_GROUP, -1, self.projection.process,
                            "projection"))
        if self.history is not None:
            subs.append(Sub(k.executions, HISTORY_GROUP, -1, self.history.process, "history"))
        if self.spans is not None:
            subs.append(Sub(k.executions, TRACING_GROUP, -1, self.spans.process, "tracing"))
        for name in self.native.tools:
            subs.append(Sub(k.native_calls(name), NATIVE_GROUP, -1,
                            _bind_native(self.native.process, name), "native"))
        return subs

    def _make_readers(self) -> list[GroupReader]:
        s = self.settings
        groups: dict[str, dict[str, Process]] = {}
        for sub in self._subscriptions():
            groups.setdefault(sub.group, {})[sub.stream] = sub.process
        readers = []
        for group, processes in groups.items():
            # The tracing projection's batches share OTLP requests: larger reads, fewer of
            # them, fewer requests (handlers/projections/tracing.py).
            count = s.batch_size * (TRACING_READ_FACTOR if group == TRACING_GROUP else 1)
            for streams in by_slot(list(processes), s.redis_cluster):
                readers.append(GroupReader(
                    self.read_client, group, self.consumer, {x: processes[x] for x in streams},
                    self._take, self._heal, count=count, block_ms=s.read_block_ms,
                    on_change=self._reader_changed))
        return readers

    def _reader_changed(self) -> None:
        """chatflow_worker_up follows the readers: 0 while any of them cannot read."""
        if self._reading:
            prom.UP.set(int(all(r.reading for r in self.readers)))

    async def _heal(self) -> None:
        """Recreate what a server that lost its data (no persistence, FLUSHALL, failover to an
        empty replica) no longer has: every consumer group, and the scripts."""
        await ensure_groups(self.client, self.keys)
        if self.history is not None:
            await self.history.ensure_group()
        if self.spans is not None:
            await self.spans.ensure_group()
        await self.native.start()
        await self.store.load_scripts()
        await self.gate.load_scripts()

    async def _take(self, stream: str, group: str, process: Process,
                    entries: list[Entry]) -> None:
        """Start a batch under the worker's concurrency limit, fresh or reclaimed alike; its
        entries stay leased to this worker (handlers/dataplane/leases.py) until it ends."""
        release = self.leases.hold(stream, group, [entry_id for entry_id, _ in entries])
        try:
            await self._slots.acquire()
        except BaseException:
            release()
            raise
        task = asyncio.create_task(self._guarded(process, entries))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        task.add_done_callback(lambda _t: release())

    def _dispatch(self, stream: str, group: str, process: Process) -> Process:
        async def take(entries: list[Entry]) -> None:
            await self._take(stream, group, process, entries)

        return take

    async def _guarded(self, process: Process, entries: list[Entry]) -> None:
        try:
            # Shielded: once a batch is taken, cancellation (shutdown) must not cut its
            # commit in half; what is not committed stays pending and is reclaimed.
            await asyncio.shield(process(entries))
        except Exception as exc:
            self._batch_failed(exc)
        finally:
            self._slots.release()

    def _batch_failed(self, exc: Exception) -> None:
        if is_connection_lost(exc):
            # An outage fails every in-flight batch at once: one line per outage, not per batch.
            now = time.monotonic()
            if now - self._lost_logged_at >= LOST_LOG_EVERY_S:
                log.warning("Redis connection lost; batches left pending for reclaim",
                            error=str(exc), suppressed=self._lost_suppressed)
                self._lost_logged_at, self._lost_suppressed = now, 0
            else:
                self._lost_suppressed += 1
        elif isinstance(exc, RedisError):
            log.warning("batch left pending after a Redis error", error=str(exc))
        else:
            log.exception("batch failed; left pending for reclaim")  # called in its except

    # -- recovery loops ----------------------------------------------------------

    async def _every(self, interval_ms: int, tick: Callable[[], Awaitable[Any]]) -> None:
        failing = False
        delay_ms = interval_ms
        name = getattr(tick, "__name__", "tick").strip("_")
        while True:
            try:
                if failing:  # a restarted server may have lost groups (AOF window) and scripts
                    await self._heal()
                await tick()
                if failing:
                    log.info("recovery loop reconnected", loop=name)
                failing = False
                delay_ms = interval_ms
            except Exception as exc:
                if isinstance(exc, RedisError) or is_connection_lost(exc):
                    if not failing:  # log the outage once, not once per tick
                        log.warning("recovery loop cannot reach Redis; retrying", loop=name,
                                    error=str(exc))
                    failing = True
                    # Back off while down, but probe at least every OUTAGE_PROBE_MS: a loop with
                    # a long interval (the 60 s trim) must not wait that long to come back.
                    delay_ms = min(delay_ms * 2, OUTAGE_PROBE_MS)
                else:
                    log.exception("recovery loop tick failed", loop=name)
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # A tick can swallow stop()'s cancellation (seen in redis-py I/O); honour it.
                raise asyncio.CancelledError
            await asyncio.sleep(delay_ms / 1000)

    async def _reclaim_all(self) -> None:
        """One probe reads every stream's pending count; only streams with pending entries
        are looked at further. Reclaimed entries go through ``_take`` like fresh ones: same
        processors, same concurrency limit, and this loop goes on to the next stream at once."""
        # Native calls are answered at most once; the history and the tracing projection
        # reclaim their own (their entries wait out an outage of the database or the
        # collector instead of going to the dead letters).
        items = [sub for sub in self._subscriptions()
                 if sub.kind not in ("native", "history", "tracing")]
        counts = await self.recovery.pending_counts([(x.stream, x.group) for x in items])
        missing = [x.stream for x, c in zip(items, counts, strict=True) if c < 0]
        if missing:
            log.error("consumer groups missing (Valkey restarted empty, was flushed or failed "
                      "over to an empty replica); recreating them", streams=missing[:5],
                      count=len(missing))
            await self._heal()
        for x, count in zip(items, counts, strict=True):
            if count > 0:
                await self.recovery.reclaim(x.stream, x.group, x.partition,
                                            self._dispatch(x.stream, x.group, x.process), x.kind)
        await self.recovery.forget_idle_consumers([(x.stream, x.group) for x in items])
        if self.history is not None:
            await self.history.tick(self._dispatch(self.keys.executions, HISTORY_GROUP,
                                                   self.history.process),
                                    self.leases.holds(self.keys.executions, HISTORY_GROUP))
        if self.spans is not None:
            await self.spans.reclaim(self._dispatch(self.keys.executions, TRACING_GROUP,
                                                    self.spans.process),
                                     self.leases.holds(self.keys.executions, TRACING_GROUP))

    async def _renew(self) -> None:
        """The leases of what this worker holds: stream entries, and slots under limits."""
        await self.leases.renew()
        await self.gate.renew()

    async def _reap_all(self) -> None:
        due, delayed = await self.recovery.due_work()
        for n in due:
            await self.recovery.reap_deadlines(n)
        for n in delayed:  # another worker's retries (it may have died during the wait)
            await self.delayed.promote(n)

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            # Half-started subscribers would keep reading with nobody to stop them.
            await self.stop()
            raise

    async def _start(self) -> None:
        await ensure_groups(self.client, self.keys)
        await self.store.load_scripts()
        await self.gate.load_scripts()
        if self.history is not None:  # a database behind the migrations stops the start here
            await self.history.start(migrate=self.settings.history_auto_migrate)
        if self.spans is not None:
            await self.spans.ensure_group()
        if self.tracing is not None:  # trace and span ids on the log lines of a sampled tree
            use_tracing(self.tracing)
        await self.native.start()
        s = self.settings
        self._reading = [asyncio.create_task(r.run()) for r in self.readers]
        self._loops = [
            asyncio.create_task(self._every(s.claim_interval_ms, self._reclaim_all)),
            asyncio.create_task(self._every(s.lease_renew_every_ms, self._renew)),
            asyncio.create_task(self._every(s.reaper_interval_ms, self._reap_all)),
            asyncio.create_task(self._every(60_000, self._trim_executions)),
            asyncio.create_task(self.delayed.run()),
        ]
        if s.metrics_port:
            self.health = await HealthServer(s.metrics_host or s.api_host, s.metrics_port,
                                             self.ready,
                                             self._refresh_gauges, live=self.live).start()
        prom.UP.set(1)
        self._reader_changed()
        log.info("worker started", consumer=self.consumer, partitions=s.partitions,
                 loop=running_loop_name())

    async def _trim_executions(self) -> None:
        await trim_source(self.client, self.keys,
                          retention_ms=self.settings.executions_retention_s * 1000,
                          unread_max_ms=self.settings.executions_unread_max_s * 1000)

    async def _refresh_gauges(self) -> None:
        # chatflow_worker_ready: what /health/ready would answer, for the
        # ChatflowWorkersNotReady alert (a worker up but not ready for 5 minutes).
        ok, _why, self._oom_seen_scrape = await self._readiness(self._oom_seen_scrape)
        prom.READY.set(int(ok))
        await prom.refresh_streams(self.client, self.keys)
        await self.gate.refresh()

    async def ready(self) -> tuple[bool, str]:
        """Ready: Redis answers and accepts writes, and every reader reads."""
        ok, why, self._oom_seen = await self._readiness(self._oom_seen)
        return ok, why

    async def _readiness(self, oom_seen: int | None) -> tuple[bool, str, int | None]:
        try:
            await self.client.ping()
        except RedisError as exc:
            return False, f"redis unreachable: {exc}", oom_seen
        trouble, oom_seen = await memory_trouble(self.client, oom_seen)
        return (False, trouble, oom_seen) if trouble else (*self._readers_ready(), oom_seen)

    def _readers_ready(self) -> tuple[bool, str]:
        subs = len(self.readers)
        stopped = [r for r in self.readers if not r.reading]
        if not self._reading or not self._loops:
            return False, f"{subs} of {subs} subscribers not running (worker not started)"
        if stopped:
            return False, (f"{len(stopped)} of {subs} subscribers not running: "
                           f"{stopped[0].last_error}")
        return True, f"ready: {subs} subscribers"

    async def live(self) -> tuple[bool, str]:
        """Live unless a reader died or has failed for a claim window for a reason a restart
        could fix (not merely an unreachable server): then the supervisor should restart us."""
        if not self._reading:
            return True, "live (starting)"
        dead = [t for t in self._reading if t.done()]
        if dead:
            return False, f"{len(dead)} of {len(self._reading)} subscribers ended"
        now = time.monotonic()
        grace_s = self.settings.claim_idle_ms / 1000
        stalled = [r for r in self.readers if r.stalled_for(now) >= grace_s]
        if stalled:
            return False, (f"{len(stalled)} subscribers cannot resume for {grace_s:g} s or more: "
                           f"{stalled[0].last_error}")
        return True, "live"

    async def stop(self) -> None:
        prom.UP.set(0)
        if self.health is not None:
            await self.health.stop()
        await cancel_until_done(self._loops)
        await cancel_until_done(self._reading)
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)
        await self.http.aclose()
        await self.sandbox.aclose()
        if self.history is not None:
            await self.history.aclose()
        if self.spans is not None:
            await self.spans.flush()  # spans the last batches are waiting on
            await asyncio.to_thread(self.spans.shutdown)
        await asyncio.to_thread(self.native.shutdown)  # flushes the native calls' spans
        await self.client.aclose()
        await self.read_client.aclose()
        log.info("worker stopped", consumer=self.consumer)


async def cancel_until_done(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel tasks and wait for them, cancelling again while any survives: on Python 3.11,
    ``asyncio.wait_for`` (used inside redis-py) loses a cancellation that races with its
    inner future, and a recovery loop would then run on and hang ``stop()``."""
    while pending := [t for t in tasks if not t.done()]:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=0.05)
    await asyncio.gather(*tasks, return_exceptions=True)


def _bind(fn: Callable[[int, list[Entry]], Awaitable[None]], n: int) -> Process:
    async def bound(entries: list[Entry]) -> None:
        await fn(n, entries)

    return bound


def _bind_native(fn: Callable[[str, list[Entry]], Awaitable[None]], name: str) -> Process:
    async def bound(entries: list[Entry]) -> None:
        await fn(name, entries)

    return bound
