"""A lane: one V8 context owned by one dedicated thread for its whole life.

mini-racer contexts are not thread-safe. A lane thread takes batches from its queue and
runs them on its BatchExecutor, synchronously: the executor's engine is created, used
(every eval, every cancel on a timeout) and freed on that thread only. Callers on any
event loop submit a batch and await a future the thread completes through their loop;
cancelling the caller does not cancel the lane's eval (it is bounded by its own time
budget), so no cancel ever crosses threads. Closing the lane only *asks* the thread to stop
(``BatchExecutor.interrupt``): the thread cancels its own eval and frees its own context.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import queue
import threading
from collections.abc import Sequence

from ._codec import PreparedJob
from ._engine import init_v8
from ._executor import BatchExecutor
from ._types import ScriptLimits, ScriptOutcome

JOIN_TIMEOUT_S = 10.0
_numbers = itertools.count(1)

_Outcomes = list[ScriptOutcome | None]
_Request = tuple[Sequence[PreparedJob], asyncio.AbstractEventLoop, "asyncio.Future[_Outcomes]"]


class ThreadLane:
    """Runs batches on a BatchExecutor that lives on this lane's own thread."""

    def __init__(self, limits: ScriptLimits) -> None:
        init_v8()  # on the creating (long-lived) thread, never first on a lane thread
        self._executor = BatchExecutor(limits)
        self._requests: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._finished: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._closing = False
        self._thread = threading.Thread(
            target=self._main, name=f"chatflow-v8-lane-{next(_numbers)}", daemon=True
        )
        self._thread.start()

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
        try:
            while (request := self._requests.get()) is not None:
                jobs, loop, future = request
                if self._closing:
                    _deliver(loop, future, RuntimeError("ScriptSandbox is closed"))
                    continue
                try:
                    outcomes: _Outcomes | BaseException = self._executor.execute(jobs)
                except Exception as exc:  # EngineInterrupted (closing) or an engine bug
                    outcomes = RuntimeError("ScriptSandbox is closed") if self._closing else exc
                _deliver(loop, future, outcomes)
        finally:
            try:
                self._executor.close()  # frees the context on the thread that made it
            finally:
                self._finished.set_result(None)

    async def execute(self, jobs: Sequence[PreparedJob]) -> _Outcomes:
        """Run a batch on the lane thread (callable from any event loop)."""
        if self._closing:
            raise RuntimeError("ScriptSandbox is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_Outcomes] = loop.create_future()
        self._requests.put((jobs, loop, future))
        return await future

    def close(self) -> None:
        """Stop the lane: its thread cancels its batch, frees its context and ends."""
        if self._closing:
            return
        self._closing = True
        self._executor.interrupt()
        self._requests.put(None)

    def join(self, timeout_s: float = JOIN_TIMEOUT_S) -> None:
        with contextlib.suppress(concurrent.futures.TimeoutError):
            self._finished.result(timeout_s)

    async def aclose(self) -> None:
        self.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.wrap_future(self._finished), JOIN_TIMEOUT_S)


def _deliver(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[_Outcomes],
    result: _Outcomes | BaseException,
) -> None:
    """Complete a caller's future on its own loop (unless it gave up or its loop ended)."""

    def complete() -> None:
        if future.done():  # the caller was cancelled
            return
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the caller's loop is closed
        loop.call_soon_threadsafe(complete)
