"""One hardened V8 context (mini-racer), created, used and freed on one thread.

mini-racer contexts are not thread-safe, and freeing one while the isolate may still
deliver the answer of a cancelled eval is a use-after-free (the late answer frees its
value handle through the freed context: the segfault this module's lifecycle prevents).
So:

* an engine is started, run, cancelled and closed only from the thread that created it
  (a lane thread in process, the worker process's main thread otherwise), and it is
  synchronous: that thread posts an eval to the isolate and blocks until the answer or
  the time limit, then cancels the eval itself. No asyncio loop and no other thread
  touches the context; mini-racer's isolate thread only queues answers (``_Inbox``);
* after any eval that did not return normally (timeout, termination, memory kill), the
  engine is *fenced* before it is freed: a trivial eval is run to completion, which
  proves the isolate has finished the cancelled task and delivered its answer;
* an engine that cannot be fenced is never freed; it is parked until process exit;
* V8 itself is initialised once per process by ``init_v8`` from the thread that creates
  the first lane (the main thread in practice): initialised from a lane thread, a second
  lane's first context crashes inside mini-racer. Creating and freeing contexts is also
  serialised process-wide.

The engine drives mini-racer 0.14's ``Context`` below its asyncio API (``mr_eval``,
``mr_cancel_task``): that API needs a running event loop and answers through
``call_soon_threadsafe``, i.e. a loop wake-up and a task per eval, which cost about twice
the eval itself for the small batches the runtime sends.
"""

from __future__ import annotations

import itertools
import json
import queue
import secrets
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, cast

from py_mini_racer import JSEvalException, JSOOMException
from py_mini_racer._context import Context
from py_mini_racer._dll import init_mini_racer
from py_mini_racer._mini_racer import _make_context
from py_mini_racer._set_timeout import INSTALL_SET_TIMEOUT
from py_mini_racer._value_handle import ValueHandle

from ..errors import ChatflowError
from ._codec import CompileCache, Progress, decode_progress, js_string
from ._prelude import prelude

FailureKind = Literal["timeout", "memory", "error"]

PROGRESS_TIMEOUT_S = 0.5
# A script whose time ran out while its live heap held this share of the memory limit or
# more is reported as out of memory (V8Engine.ran_out_of_memory, docs/sandbox.md).
PRESSED_SHARE = 0.75
FENCE_TIMEOUT_S = 1.0
FENCE_ATTEMPTS = 3

_LIFECYCLE = threading.Lock()  # held briefly, only while a context is created or freed

# Engines whose isolate never became quiet after a cancel: freeing them could crash the
# process, so they are kept (and counted) instead. Expected to stay empty in practice.
_PARKED: list[V8Engine] = []

_WAKE = None  # put in an inbox by ``interrupt``: not an answer


def init_v8() -> None:
    """Initialise V8 for this process (idempotent); call from a long-lived thread."""
    with _LIFECYCLE:
        init_mini_racer(ignore_duplicate_init=True)


def parked_engines() -> int:
    """How many engines could not be freed safely in this process."""
    return len(_PARKED)


@dataclass
class EngineFailure(ChatflowError):
    """Raised when a batch eval did not return normally."""

    kind: FailureKind
    message: str


class EngineInterrupted(ChatflowError):
    """Raised when the lane is closing: the running eval was cancelled (the engine must be closed)."""


class _Inbox:
    """Stands in for the event loop mini-racer hands V8's answers to.

    mini-racer's isolate thread calls ``call_soon_threadsafe(handler, callback_id,
    value_handle)`` for each answer; the inbox only queues ``(callback_id, value_handle)``
    and the engine's own thread takes them, so value handles are converted and freed on
    that thread, while the context is alive.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[int, ValueHandle] | None] = queue.SimpleQueue()

    def call_soon_threadsafe(self, _handler: object, callback_id: int, handle: ValueHandle) -> None:
        self._queue.put((callback_id, handle))

    def wake(self) -> None:
        self._queue.put(_WAKE)

    def get(self, timeout_s: float) -> tuple[int, ValueHandle] | None:
        """The next answer (or wake-up); raises ``queue.Empty`` after ``timeout_s``."""
        return self._queue.get(timeout=max(timeout_s, 0.0))


class V8Engine:
    """A hardened context plus the bookkeeping of what it has compiled."""

    def __init__(
        self, maker: AbstractContextManager[Context], ctx: Context, inbox: _Inbox, runner: str
    ) -> None:
        self._maker: AbstractContextManager[Context] | None = maker
        self._ctx = ctx
        self._dll: Any = ctx._dll
        self._raw_ctx = ctx._ctx
        self._inbox = inbox
        self._runner = runner
        self._ids = itertools.count(1)  # 0 is mini-racer's "uncancelable task" id
        self._dirty = False  # an eval was cancelled or failed: fence before freeing
        self._stuck = False  # busy with deferred work no cancel can stop: never free
        self._interrupted = False
        self._owner = threading.get_ident()  # the only thread that may touch the context
        self.cache = CompileCache()
        self.seq = 0  # number of the latest batch sent to the runner

    @classmethod
    def start(cls, max_memory_bytes: int) -> V8Engine:
        """Create and harden a context owned by the calling thread."""
        inbox = _Inbox()
        # mini-racer only calls call_soon_threadsafe on the loop it is given.
        maker = _make_context(cast(Any, inbox))
        with _LIFECYCLE:
            ctx = maker.__enter__()
        engine = cls(maker, ctx, inbox, "__cf_" + secrets.token_hex(16))
        try:
            ctx.set_hard_memory_limit(max_memory_bytes)
            # What mini-racer's MiniRacer wrapper installs first: the prelude then removes
            # its setTimeout, so scripts see the same globals as before.
            engine._eval(INSTALL_SET_TIMEOUT, None)
            engine._eval(prelude(engine._runner), None)
        except BaseException:
            engine.close()
            raise
        return engine

    def interrupt(self) -> None:
        """From any thread: make the running (or next) eval give up with EngineInterrupted."""
        self._interrupted = True
        self._inbox.wake()

    def _check_thread(self) -> None:
        # Cheap, and the rule it guards is otherwise only visible as a rare segfault.
        if threading.get_ident() != self._owner:
            raise RuntimeError("a V8 engine is used only on the thread that created it")

    def _post(self, code: str) -> tuple[int, int]:
        """Start an eval on the isolate; returns (callback id, task id)."""
        self._check_thread()
        callback_id = next(self._ids)
        code_handle = self._ctx._python_to_value_handle(code)
        # The task keeps its own reference to the code value (mini-racer's Context::Eval
        # captures the value's shared pointer), so this handle may be freed on return.
        task_id = self._dll.mr_eval(self._raw_ctx, code_handle.raw, callback_id)
        return callback_id, task_id

    def _answer(
        self, posted: tuple[int, int], timeout_s: float | None, interruptible: bool = True
    ) -> object:
        """Wait for a posted eval's answer; on timeout (or interrupt) cancel it and raise."""
        callback_id, task_id = posted
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while True:
                if interruptible and self._interrupted:
                    raise EngineInterrupted()
                left = 3600.0 if deadline is None else deadline - time.monotonic()
                try:
                    item = self._inbox.get(left)
                except queue.Empty:
                    raise TimeoutError() from None
                # Anything else is the late answer of an eval given up earlier: dropping it
                # frees its value here, on the owning thread, while the context lives.
                if item is not None and item[0] == callback_id:
                    return self._ctx._value_handle_to_python(item[1])
        except BaseException:
            self._dirty = True
            # Ignored by mini-racer if the task is already done; on this thread, as ever.
            self._dll.mr_cancel_task(self._raw_ctx, task_id)
            raise

    def _eval(self, code: str, timeout_s: float | None, interruptible: bool = True) -> object:
        return self._answer(self._post(code), timeout_s, interruptible)

    def run(self, payload: str, budget_s: float, min_settle_s: float) -> str | None:
        """Run one batch payload, then wait for the deferred work it queued.

        Raise EngineFailure if the batch does not complete. Return None if it completed
        but deferred work (promise callbacks) ran past the rest of ``budget_s`` (at least
        ``min_settle_s``): mini-racer runs those callbacks after the batch's eval has
        answered, so without this wait they would run unaccounted, holding up the next
        batch. The wait is a trivial eval posted right behind the batch's rather than after
        its answer: the isolate runs both without going idle in between (measured in
        process: 20-35 % less CPU per batch of one than posting it after the answer).
        """
        self.seq += 1
        started = time.monotonic()
        batch = self._post(f"{self._runner}.run({self.seq}, {js_string(payload)})")
        settle = self._post("0")
        try:
            result = self._answer(batch, budget_s)
        except TimeoutError as exc:
            raise EngineFailure("timeout", "batch exceeded its time budget") from exc
        except JSOOMException as exc:
            raise EngineFailure("memory", str(exc)) from exc
        except JSEvalException as exc:
            kind: FailureKind = "memory" if self._memory_exceeded() else "error"
            raise EngineFailure(kind, str(exc)) from exc
        if not isinstance(result, str):
            raise EngineFailure("error", f"unexpected batch result type {type(result)}")
        left = budget_s - (time.monotonic() - started)
        try:
            self._answer(settle, max(left, min_settle_s))
        except TimeoutError:
            # The callback runs outside any eval, so no cancel can terminate it: this
            # context can never be fenced. It is parked on close (in the worker process,
            # which then retires itself; see _worker.py).
            self._stuck = True
            return None
        except JSEvalException:
            pass  # an error answer still proves the isolate is idle
        return result

    def progress(self) -> Progress | None:
        """After a failed batch: outcomes finished so far, or None if unreadable."""
        try:
            text = self._eval(f"{self._runner}.progress()", PROGRESS_TIMEOUT_S)
            return decode_progress(str(text))
        except Exception:
            return None

    def ran_out_of_memory(self, max_memory_bytes: int) -> bool:
        """After a batch cut off by time, its progress read (so the isolate answers): whether
        memory ran out first in all but name. The hard limit is checked after a garbage
        collection only, so a heap that passed it since the last one, or a script slowed down
        by growing one (a dictionary rehashing ever more small entries), reaches its time
        limit first. The limit reached, or a heap still holding ``PRESSED_SHARE`` of it or
        more (as the script left it: no collection first, which would find it all garbage
        now that the script is gone), is reported as memory."""
        if self._memory_exceeded():
            return True
        try:
            used = json.loads(self._ctx.heap_stats())["used_heap_size"]
        except Exception:  # an isolate that cannot say: the timeout stands
            return False
        return bool(used >= PRESSED_SHARE * max_memory_bytes)

    def _memory_exceeded(self) -> bool:
        try:
            return self._ctx.was_hard_memory_limit_reached()
        except Exception:
            return False

    def _fence(self) -> bool:
        """True once a trivial eval completes: no cancelled task is still in flight.

        Answers the isolate posted before the fence's are ahead of it in the inbox, so
        they have been taken (and their values freed) by the time it returns."""
        for _ in range(FENCE_ATTEMPTS):
            try:
                self._eval("0", FENCE_TIMEOUT_S, interruptible=False)
            except TimeoutError:
                continue
            except JSEvalException:  # an error answer also proves the isolate is idle
                pass
            return True
        return False

    def close(self) -> None:
        """Free the context (on its own thread), fencing first after a failed eval."""
        self._check_thread()
        maker, self._maker = self._maker, None
        if maker is None:
            return
        if self._stuck or (self._dirty and not self._fence()):
            self._maker = maker
            _PARKED.append(self)
            return
        with _LIFECYCLE:
            maker.__exit__(None, None, None)
