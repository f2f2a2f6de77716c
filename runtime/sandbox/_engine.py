"""One hardened V8 context (mini-racer), created, used and freed on one lane thread.

mini-racer contexts are not thread-safe, and freeing one while the isolate may still
deliver the callback of a cancelled eval is a use-after-free (the late callback frees
its value handle through the freed context: the segfault this module's lifecycle
prevents). So:

* an engine is started, run and closed only from the event loop of its lane thread
  (``_lane.py``), which is also the loop mini-racer delivers callbacks to;
* after any eval that did not return normally (timeout, termination, memory kill), the
  engine is *fenced* before it is freed: a trivial eval is run to completion, which
  proves the isolate has finished the cancelled task and delivered its callback;
* an engine that cannot be fenced is never freed; it is parked until process exit;
* V8 itself is initialised once per process by ``init_v8`` from the thread that creates
  the first lane (the main thread in practice): initialised from a lane thread, a second
  lane's first context crashes inside mini-racer. Creating and freeing contexts is also
  serialised process-wide.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal

from py_mini_racer import JSEvalException, JSOOMException, MiniRacer, mini_racer
from py_mini_racer._dll import init_mini_racer

from ._codec import CompileCache, Progress, decode_progress, js_string
from ._prelude import prelude

FailureKind = Literal["timeout", "memory", "error"]

PROGRESS_TIMEOUT_S = 0.5
FENCE_TIMEOUT_S = 1.0
FENCE_ATTEMPTS = 3

_LIFECYCLE = threading.Lock()  # held briefly, only while a context is created or freed

# Engines whose isolate never became quiet after a cancel: freeing them could crash the
# process, so they are kept (and counted) instead. Expected to stay empty in practice.
_PARKED: list[V8Engine] = []


def init_v8() -> None:
    """Initialise V8 for this process (idempotent); call from a long-lived thread."""
    with _LIFECYCLE:
        init_mini_racer(ignore_duplicate_init=True)


def parked_engines() -> int:
    """How many engines could not be freed safely in this process."""
    return len(_PARKED)


@dataclass
class EngineFailure(Exception):
    """Raised when a batch eval did not return normally."""

    kind: FailureKind
    message: str


class V8Engine:
    """A hardened context plus the bookkeeping of what it has compiled."""

    def __init__(
        self, maker: AbstractContextManager[MiniRacer], racer: MiniRacer, runner: str
    ) -> None:
        self._maker: AbstractContextManager[MiniRacer] | None = maker
        self._racer = racer
        self._runner = runner
        self._dirty = False  # an eval was cancelled or failed: fence before freeing
        self._stuck = False  # busy with deferred work no cancel can stop: never free
        self.loop = asyncio.get_running_loop()
        self.cache = CompileCache()
        self.seq = 0  # number of the latest batch sent to the runner

    @classmethod
    async def start(cls, max_memory_bytes: int) -> V8Engine:
        """Create and harden a context bound to the running (lane) loop and thread."""
        maker = mini_racer(asyncio.get_running_loop())
        with _LIFECYCLE:
            racer = maker.__enter__()
        engine = cls(maker, racer, "__cf_" + secrets.token_hex(16))
        try:
            racer.set_hard_memory_limit(max_memory_bytes)
            await engine._eval(prelude(engine._runner), None)
        except BaseException:
            await engine.close()
            raise
        return engine

    async def _eval(self, code: str, timeout_s: float | None) -> object:
        try:
            async with asyncio.timeout(timeout_s):
                return await self._racer.eval_cancelable(code)
        except BaseException:
            self._dirty = True
            raise

    async def run(self, payload: str, budget_s: float) -> str:
        """Run one batch payload; raise EngineFailure if it does not complete."""
        self.seq += 1
        code = f"{self._runner}.run({self.seq}, {js_string(payload)})"
        try:
            result = await self._eval(code, budget_s)
        except TimeoutError as exc:
            raise EngineFailure("timeout", "batch exceeded its time budget") from exc
        except JSOOMException as exc:
            raise EngineFailure("memory", str(exc)) from exc
        except JSEvalException as exc:
            kind: FailureKind = "memory" if self._memory_exceeded() else "error"
            raise EngineFailure(kind, str(exc)) from exc
        if not isinstance(result, str):
            raise EngineFailure("error", f"unexpected batch result type {type(result)}")
        return result

    async def settle(self, timeout_s: float) -> bool:
        """Wait for deferred work (promise callbacks) the last batch queued; False if it ran
        past ``timeout_s``. mini-racer runs those callbacks after the batch's eval has
        answered, so without this they would run unaccounted, holding up the next batch."""
        try:
            await self._eval("0", timeout_s)
        except TimeoutError:
            # The callback runs outside any eval, so no cancel can terminate it: this
            # context can never be fenced. It is parked on close (in the worker process,
            # which then retires itself; see _worker.py).
            self._stuck = True
            return False
        except Exception:
            return True  # an error answer still proves the isolate is idle
        return True

    async def progress(self) -> Progress | None:
        """After a failed batch: outcomes finished so far, or None if unreadable."""
        try:
            text = await self._eval(f"{self._runner}.progress()", PROGRESS_TIMEOUT_S)
            return decode_progress(str(text))
        except Exception:
            return None

    def _memory_exceeded(self) -> bool:
        try:
            return self._racer.was_hard_memory_limit_reached()
        except Exception:
            return False

    async def _fence(self) -> bool:
        """True once a trivial eval completes: no cancelled task is still in flight."""
        for _ in range(FENCE_ATTEMPTS):
            try:
                async with asyncio.timeout(FENCE_TIMEOUT_S):
                    await self._racer.eval_cancelable("0")
            except TimeoutError:
                continue
            except Exception:  # an error answer also proves the isolate is idle again
                pass
            # Callbacks the isolate posted before the fence's answer are already queued on
            # this loop ahead of it; one more turn lets them run against a live context.
            await asyncio.sleep(0)
            return True
        return False

    async def close(self) -> None:
        """Free the context (on its own lane loop), fencing first after a failed eval."""
        maker, self._maker = self._maker, None
        if maker is None:
            return
        if self._stuck or (self._dirty and not await self._fence()):
            self._maker = maker
            _PARKED.append(self)
            return
        with _LIFECYCLE:
            maker.__exit__(None, None, None)
