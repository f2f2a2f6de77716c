"""A lane: one V8 context owned by one dedicated thread for its whole life.

mini-racer contexts are not thread-safe. A lane thread runs its own asyncio loop; the
BatchExecutor, its engine, every eval, every cancel (timeouts) and every close happen on
that loop and thread only. Callers on other loops submit batches and await the answer;
cancelling the caller does not cancel the lane's eval (it is bounded by its own time
budget), so no cancel ever crosses threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import threading
from collections.abc import Sequence

from ._codec import PreparedJob
from ._engine import init_v8
from ._executor import BatchExecutor
from ._types import ScriptLimits, ScriptOutcome

JOIN_TIMEOUT_S = 10.0
_numbers = itertools.count(1)


class ThreadLane:
    """Runs batches on a BatchExecutor that lives on this lane's own thread."""

    def __init__(self, limits: ScriptLimits) -> None:
        init_v8()  # on the creating (long-lived) thread, never first on a lane thread
        self._executor = BatchExecutor(limits)
        self._ready: concurrent.futures.Future[asyncio.AbstractEventLoop] = (
            concurrent.futures.Future()
        )
        self._finished: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._closing = False
        self._thread = threading.Thread(
            target=self._main, name=f"chatflow-v8-lane-{next(_numbers)}", daemon=True
        )
        self._thread.start()
        self._loop = self._ready.result()
        self._lock = asyncio.Lock()  # used only on the lane loop
        self._current: asyncio.Task[object] | None = None

    @property
    def contexts_created(self) -> int:
        return self._executor.contexts_created

    @property
    def evals(self) -> int:
        return self._executor.evals

    @property
    def startup_s(self) -> float:
        return 0.0  # the context is created inside a batch's own time budget

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._ready.set_result(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()
            self._finished.set_result(None)

    async def _execute_here(self, jobs: Sequence[PreparedJob]) -> list[ScriptOutcome | None]:
        async with self._lock:
            if self._closing:
                raise RuntimeError("ScriptSandbox is closed")
            self._current = asyncio.current_task()
            try:
                return await self._executor.execute(jobs)
            finally:
                self._current = None

    async def execute(self, jobs: Sequence[PreparedJob]) -> list[ScriptOutcome | None]:
        """Run a batch on the lane thread (callable from any event loop)."""
        if self._closing:
            raise RuntimeError("ScriptSandbox is closed")
        done = asyncio.run_coroutine_threadsafe(self._execute_here(jobs), self._loop)
        # shield: a cancelled caller must not cancel the eval from this thread.
        return await asyncio.shield(asyncio.wrap_future(done))

    async def _shutdown_here(self) -> None:
        current = self._current
        if current is not None:
            current.cancel()  # same thread as the eval: a safe, ordinary cancel
        async with self._lock:
            await self._executor.aclose()
        asyncio.get_running_loop().stop()

    def close(self) -> None:
        """Stop the lane: cancel its batch, free its context on its thread, end the thread."""
        if self._closing:
            return
        self._closing = True
        with contextlib.suppress(RuntimeError):  # loop already closed
            self._loop.call_soon_threadsafe(self._loop.create_task, self._shutdown_here())

    def join(self, timeout_s: float = JOIN_TIMEOUT_S) -> None:
        with contextlib.suppress(concurrent.futures.TimeoutError):
            self._finished.result(timeout_s)

    async def aclose(self) -> None:
        self.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.wrap_future(self._finished), JOIN_TIMEOUT_S)
