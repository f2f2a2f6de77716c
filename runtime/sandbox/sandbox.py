"""ScriptSandbox: coalesces concurrent ``run`` calls into batches for one V8 context."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from typing import Literal, Protocol

from ._codec import PreparedJob, prepare
from ._executor import BatchExecutor
from ._process import ProcessExecutor
from ._types import ScriptJob, ScriptLimits, ScriptOutcome

DEFAULT_MAX_BATCH = 128
DEFAULT_LIMITS = ScriptLimits()

_Pending = tuple[PreparedJob, "asyncio.Future[ScriptOutcome]"]
Isolation = Literal["process", "in_process"]


class _Executor(Protocol):
    @property
    def contexts_created(self) -> int: ...

    @property
    def evals(self) -> int: ...

    async def execute(self, jobs: Sequence[PreparedJob]) -> list[ScriptOutcome]: ...

    def close(self) -> None: ...


class ScriptSandbox:
    """Runs user JavaScript in a hardened V8 context, many jobs per engine round trip.

    ``run`` and ``run_many`` only enqueue; a single drainer task per sandbox takes whatever
    has accumulated (up to ``max_batch`` jobs) and runs it in one eval, so concurrent callers
    on one event loop share round trips. The event loop is never blocked while JavaScript
    runs: V8 executes on its own thread and the result comes back as a loop callback.

    ``isolation="process"`` (the default) keeps V8 in a worker process, restarted if V8
    aborts; ``"in_process"`` saves the pipe round trip but a V8 abort (possible on some
    oversized allocations) would end the calling process.
    """

    def __init__(
        self,
        limits: ScriptLimits = DEFAULT_LIMITS,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        isolation: Isolation = "process",
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._limits = limits
        self._max_batch = max_batch
        self._executor: _Executor = (
            ProcessExecutor(limits) if isolation == "process" else BatchExecutor(limits)
        )
        self._pending: deque[_Pending] = deque()
        self._drainer: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def limits(self) -> ScriptLimits:
        return self._limits

    @property
    def contexts_created(self) -> int:
        """How many V8 contexts this sandbox has started (a new one after each kill)."""
        return self._executor.contexts_created

    @property
    def evals(self) -> int:
        """How many batch evals (engine round trips) this sandbox has made."""
        return self._executor.evals

    async def run(self, job: ScriptJob) -> ScriptOutcome:
        """Run one script; concurrent calls are batched together."""
        return (await self.run_many([job]))[0]

    async def run_many(self, jobs: Sequence[ScriptJob]) -> list[ScriptOutcome]:
        """Run scripts (in as few engine round trips as possible); order is preserved."""
        if self._closed:
            raise RuntimeError("ScriptSandbox is closed")
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[ScriptOutcome]] = []
        for job in jobs:
            future: asyncio.Future[ScriptOutcome] = loop.create_future()
            prepared = prepare(job, self._limits)
            if isinstance(prepared, ScriptOutcome):
                future.set_result(prepared)
            else:
                self._pending.append((prepared, future))
            futures.append(future)
        if self._pending:
            self._ensure_drainer(loop)
        return list(await asyncio.gather(*futures))

    def close(self) -> None:
        """Stop the drainer, fail queued jobs and free the V8 context."""
        if self._closed:
            return
        self._closed = True
        self._fail_pending(RuntimeError("ScriptSandbox is closed"))
        drainer = self._drainer
        if drainer is not None and not drainer.done() and not drainer.get_loop().is_closed():
            drainer.cancel()  # the drainer frees the context once its eval has unwound
        else:
            self._executor.close()

    async def aclose(self) -> None:
        """``close``, then wait until the engine's worker process is gone."""
        drainer = self._drainer
        self.close()
        if drainer is not None and not drainer.done():
            with contextlib.suppress(asyncio.CancelledError):
                await drainer
        aclose = getattr(self._executor, "aclose", None)
        if aclose is not None:
            await aclose()

    def _ensure_drainer(self, loop: asyncio.AbstractEventLoop) -> None:
        drainer = self._drainer
        if drainer is None or drainer.done() or drainer.get_loop() is not loop:
            self._drainer = loop.create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._pending and not self._closed:
                batch = self._take_batch()
                if batch:
                    await self._run_batch(batch)
        finally:
            if self._closed:
                self._executor.close()

    def _take_batch(self) -> list[_Pending]:
        batch: list[_Pending] = []
        while self._pending and len(batch) < self._max_batch:
            item = self._pending.popleft()
            if not item[1].done():  # skip callers that were cancelled while queued
                batch.append(item)
        return batch

    async def _run_batch(self, batch: list[_Pending]) -> None:
        try:
            outcomes = await self._executor.execute([job for job, _ in batch])
        except BaseException as exc:
            error = exc if isinstance(exc, Exception) else RuntimeError("ScriptSandbox closed")
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if not future.done():
                future.set_result(outcome)

    def _fail_pending(self, error: Exception) -> None:
        while self._pending:
            _, future = self._pending.popleft()
            if not future.done():
                future.set_exception(error)
