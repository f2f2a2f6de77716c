"""One hardened V8 context (mini-racer) bound to the caller's asyncio loop.

mini-racer is given the *caller's* event loop, so ``eval_cancelable`` posts the batch to
the isolate's own thread and the result comes back through ``call_soon_threadsafe``: one
cross-thread round trip per batch, and the loop is never blocked while JavaScript runs.
Timeouts cancel the eval, which terminates V8 execution.
"""

from __future__ import annotations

import asyncio
import secrets
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal

from py_mini_racer import JSEvalException, JSOOMException, MiniRacer, mini_racer

from ._codec import CompileCache, Progress, decode_progress, js_string
from ._prelude import prelude

FailureKind = Literal["timeout", "memory", "error"]

PROGRESS_TIMEOUT_S = 0.5


@dataclass
class EngineFailure(Exception):
    """The batch eval did not return normally."""

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
        self.loop = asyncio.get_running_loop()
        self.cache = CompileCache()
        self.seq = 0  # number of the latest batch sent to the runner

    @classmethod
    async def start(cls, max_memory_bytes: int) -> V8Engine:
        """Create a context off-loop (isolate start-up takes milliseconds) and harden it."""
        loop = asyncio.get_running_loop()

        def make() -> tuple[AbstractContextManager[MiniRacer], MiniRacer]:
            maker = mini_racer(loop)
            return maker, maker.__enter__()

        maker, racer = await asyncio.to_thread(make)
        runner = "__cf_" + secrets.token_hex(16)
        engine = cls(maker, racer, runner)
        try:
            racer.set_hard_memory_limit(max_memory_bytes)
            await racer.eval_cancelable(prelude(runner))
        except BaseException:
            engine.close()
            raise
        return engine

    async def run(self, payload: str, budget_s: float) -> str:
        """Run one batch payload; raise EngineFailure if it does not complete."""
        self.seq += 1
        code = f"{self._runner}.run({self.seq}, {js_string(payload)})"
        try:
            async with asyncio.timeout(budget_s):  # no extra task, unlike wait_for
                result = await self._racer.eval_cancelable(code)
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

    async def progress(self) -> Progress | None:
        """After a failed batch: outcomes finished so far, or None if unreadable."""
        try:
            text = await asyncio.wait_for(
                self._racer.eval_cancelable(f"{self._runner}.progress()"), PROGRESS_TIMEOUT_S
            )
            return decode_progress(str(text))
        except Exception:
            return None

    def _memory_exceeded(self) -> bool:
        try:
            return self._racer.was_hard_memory_limit_reached()
        except Exception:
            return False

    def close(self) -> None:
        maker, self._maker = self._maker, None
        if maker is not None:
            maker.__exit__(None, None, None)
