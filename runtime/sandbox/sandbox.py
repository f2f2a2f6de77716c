"""ScriptSandbox: batches concurrent ``run`` calls onto N V8 lanes, shared fairly by owner."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from ._codec import PreparedJob, prepare
from ._fair import FairQueue
from ._lane import ThreadLane
from ._process import ProcessExecutor
from ._types import ScriptJob, ScriptLimits, ScriptOutcome

DEFAULT_MAX_BATCH = 128
SLOW_JOB_S = 0.05  # an owner whose scripts take longer gets batches of its own
MAX_SLOW_OWNERS = 4096
DEFAULT_LIMITS = ScriptLimits()

_Pending = tuple[PreparedJob, "asyncio.Future[ScriptOutcome]"]
Isolation = Literal["process", "in_process"]


def default_lanes() -> int:
    """One lane per core (``CHATFLOW_SCRIPT_LANES`` overrides it in the worker settings)."""
    return max(1, os.cpu_count() or 1)


class _Lane(Protocol):
    @property
    def contexts_created(self) -> int: ...

    @property
    def evals(self) -> int: ...

    @property
    def startup_s(self) -> float: ...

    async def execute(self, jobs: Sequence[PreparedJob]) -> list[ScriptOutcome | None]: ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...


class ScriptSandbox:
    """Runs user JavaScript in hardened V8 contexts, many jobs per engine round trip.

    ``run`` and ``run_many`` only enqueue, in one FIFO queue per ``ScriptJob.owner``. Up to
    ``lanes`` lanes (each one V8 context on its own thread, in its own worker process by
    default) are started as work arrives; a free lane takes a batch of up to ``max_batch``
    jobs, one per owner in round-robin turn (and no more than its share of the queue among
the free lanes), and runs it in one eval. Jobs a batch did not
    reach (it was cut short by a slow job) go back to the front of their owner's queue, so
    other owners are served next, and an owner whose scripts are slow (over 50 ms each, or
    cut short) gets batches of one on its turn: one tool's slow scripts cannot starve
    another's.

    ``isolation="process"`` (the default) keeps each lane's V8 in a worker process,
    restarted if V8 aborts; ``"in_process"`` saves the pipe round trip but a V8 abort
    (possible on some oversized allocations) would end the calling process.
    """

    def __init__(
        self,
        limits: ScriptLimits = DEFAULT_LIMITS,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        isolation: Isolation = "process",
        lanes: int | None = None,
        child_env: Mapping[str, str] | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        if lanes is not None and lanes < 1:
            raise ValueError("lanes must be at least 1")
        self._limits = limits
        # child_env is the worker processes' whole environment (empty by default): the
        # runtime reads no environment; the service passes Settings.sandbox_env(), so
        # secrets in its environment (CHATFLOW_ENCRYPTION_KEY, REDIS_URL...) never reach
        # the process that runs untrusted JavaScript.
        self._child_env = dict(child_env or {})
        self._max_batch = max_batch
        self._isolation = isolation
        self._max_lanes = lanes or default_lanes()
        self._lanes: list[_Lane] = []
        self._idle: list[_Lane] = []
        self._queue: FairQueue[_Pending] = FairQueue()
        self._drainers: set[asyncio.Task[None]] = set()
        self._busy = 0  # lanes running a batch right now
        self._slow: OrderedDict[str, bool] = OrderedDict()  # owners with slow scripts
        self._serving: dict[int, tuple[_Lane, asyncio.Task[None]]] = {}  # lanes with a drainer
        self._closed = False

    @property
    def limits(self) -> ScriptLimits:
        return self._limits

    @property
    def lanes(self) -> int:
        """How many lanes are running (started on demand, up to the configured number)."""
        return len(self._lanes)

    @property
    def contexts_created(self) -> int:
        """How many V8 contexts this sandbox has started (a new one after each kill)."""
        return sum(lane.contexts_created for lane in self._lanes)

    @property
    def evals(self) -> int:
        """How many batch evals (engine round trips) this sandbox has made."""
        return sum(lane.evals for lane in self._lanes)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the running lane worker processes (process isolation)."""
        return [
            pid
            for lane in self._lanes
            if isinstance(lane, ProcessExecutor) and (pid := lane.pid) is not None
        ]

    async def run(self, job: ScriptJob) -> ScriptOutcome:
        """Run one script; concurrent calls are batched together."""
        return (await self.run_many([job]))[0]

    async def run_many(self, jobs: Sequence[ScriptJob]) -> list[ScriptOutcome]:
        """Run scripts (in as few engine round trips as possible); order is preserved."""
        if self._closed:
            raise RuntimeError("ScriptSandbox is closed")
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[ScriptOutcome]] = []
        queued = False
        for job in jobs:
            future: asyncio.Future[ScriptOutcome] = loop.create_future()
            prepared = prepare(job, self._limits)
            if isinstance(prepared, ScriptOutcome):
                future.set_result(prepared)
            else:
                self._queue.push(job.owner, (prepared, future))
                queued = True
            futures.append(future)
        if queued:
            self._dispatch(loop)
        # Awaited in turn rather than gathered: a batch settles all its futures in one go,
        # so this suspends once, without gather's extra loop turn and callbacks per job.
        try:
            return [await future for future in futures]
        except BaseException:
            # The caller is gone (cancelled, or one job failed): its queued jobs are skipped,
            # and, as gather does, the other jobs' errors count as seen (each would otherwise
            # log "exception was never retrieved").
            for future in futures:
                if not future.cancel() and not future.cancelled():
                    future.exception()
            raise

    def close(self) -> None:
        """Fail queued jobs, stop the drainers and the lanes (each frees its own context)."""
        if self._closed:
            return
        self._closed = True
        self._fail(self._queue.drain(), RuntimeError("ScriptSandbox is closed"))
        for drainer in list(self._drainers):
            if not drainer.get_loop().is_closed():
                drainer.cancel()
        for lane in self._lanes:
            lane.close()

    async def aclose(self) -> None:
        """``close``, then wait until every lane's thread or worker process is gone."""
        drainers = [d for d in self._drainers if not d.done()]
        self.close()
        for drainer in drainers:
            with contextlib.suppress(asyncio.CancelledError):
                await drainer
        for lane in self._lanes:
            await lane.aclose()

    def _new_lane(self) -> _Lane:
        if self._isolation == "process":
            return ProcessExecutor(self._limits, self._child_env)
        return ThreadLane(self._limits)

    def _dispatch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Give queued work to idle lanes, starting new lanes up to the limit."""
        for key, (lane, drainer) in list(self._serving.items()):
            if drainer.get_loop().is_closed():  # its loop ended mid-batch: reuse the lane
                del self._serving[key]
                self._idle.append(lane)
        while self._queue and not self._closed:
            if self._idle:
                lane = self._idle.pop()
            elif len(self._lanes) < self._max_lanes:
                lane = self._new_lane()
                self._lanes.append(lane)
            else:
                return
            drainer = loop.create_task(self._drain(lane))
            self._drainers.add(drainer)
            drainer.add_done_callback(self._drainers.discard)
            self._serving[id(lane)] = (lane, drainer)

    async def _drain(self, lane: _Lane) -> None:
        try:
            while self._queue and not self._closed:
                batch = [
                    (owner, item)
                    for owner, item in self._queue.take(self._batch_size(), self._slow)
                    if not item[1].done()  # skip callers cancelled while queued
                ]
                if batch:
                    self._busy += 1
                    try:
                        await self._run_batch(lane, batch)
                    finally:
                        self._busy -= 1
        finally:
            entry = self._serving.get(id(lane))
            if entry is not None and entry[1] is asyncio.current_task():
                del self._serving[id(lane)]
                if not self._closed:
                    self._idle.append(lane)

    def _batch_size(self) -> int:
        """Share the queue between the lanes that are free, so none waits behind another."""
        free = max(1, self._max_lanes - self._busy)
        return min(self._max_batch, -(-len(self._queue) // free))

    def _learn(self, batch: list[tuple[str, _Pending]], seconds: float, cut: bool) -> None:
        """Mark owners whose scripts are slow (they then run in batches of their own)."""
        slow = cut or seconds / len(batch) > SLOW_JOB_S
        for owner in {owner for owner, _ in batch}:
            self._slow.pop(owner, None)
            if slow:
                self._slow[owner] = True
                if len(self._slow) > MAX_SLOW_OWNERS:
                    self._slow.popitem(last=False)

    async def _run_batch(self, lane: _Lane, batch: list[tuple[str, _Pending]]) -> None:
        started, startup_before = time.monotonic(), lane.startup_s
        try:
            outcomes = await lane.execute([job for _, (job, _) in batch])
        except BaseException as exc:
            error = exc if isinstance(exc, Exception) else RuntimeError("ScriptSandbox closed")
            self._fail([item for _, item in batch], error)
            if not isinstance(exc, Exception):
                raise
            return
        unrun: dict[str, list[_Pending]] = {}
        for (owner, (job, future)), outcome in zip(batch, outcomes, strict=True):
            if outcome is None:
                unrun.setdefault(owner, []).append((job, future))
            elif not future.done():
                future.set_result(outcome)
        for owner, items in unrun.items():
            self._queue.push_front(owner, items)
        # A worker's start-up is not the scripts' time: counted, it marked the first owner
        # on a fresh lane slow (batches of one) whenever the machine was loaded.
        spent = time.monotonic() - started - (lane.startup_s - startup_before)
        self._learn(batch, spent, bool(unrun))

    @staticmethod
    def _fail(items: list[_Pending], error: Exception) -> None:
        for _, future in items:
            if not future.done():
                future.set_exception(error)
