"""Where tool code runs: a bounded thread pool for sync tools, a side thread for sync callers.

The bounded pool serves the outermost event loops only. A sync tool may itself run an
agent (``Runner(inner).run(...)``), which starts a loop on the tool's own thread; that
inner loop's sync tools go to the inner loop's own executor (``asyncio.to_thread``), so
an agent used as a tool never waits for a pool thread that its own callers hold.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from ..settings import tool_threads

P = ParamSpec("P")
T = TypeVar("T")

_DEFAULT_WORKERS = min(32, (os.cpu_count() or 1) + 4)
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size: int | None = None  # None: CHATFLOW_AGENT_TOOL_THREADS, read at the first use
_inside_tool = threading.local()


def _mark_tool_thread() -> None:
    _inside_tool.active = True


def in_tool_thread() -> bool:
    """True on a thread of the bounded tool pool (a sync tool is running here)."""
    return bool(getattr(_inside_tool, "active", False))


def configure_tool_threads(max_workers: int) -> None:
    """Set how many sync tools may run at once; later calls use a fresh pool.

    The default matches ``asyncio.to_thread`` (min(32, cpus + 4)) and can also be
    set with the ``CHATFLOW_AGENT_TOOL_THREADS`` environment variable.
    """
    global _pool, _pool_size
    if max_workers < 1:
        raise ValueError("max_workers must be at least 1")
    with _lock:
        old, _pool, _pool_size = _pool, None, max_workers
    if old is not None:
        old.shutdown(wait=False)


def tool_thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            size = _pool_size or tool_threads(_DEFAULT_WORKERS)
            _pool = ThreadPoolExecutor(
                size, thread_name_prefix="chatflow-tool", initializer=_mark_tool_thread
            )
        return _pool


async def run_in_tool_thread(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``asyncio.to_thread`` on the bounded tool pool: context variables travel along.

    Called from a loop that itself runs on a tool thread (a tool running an agent),
    the call goes to that loop's own executor: taking a slot of the shared pool
    could wait forever on threads held by the very calls waiting for this one.
    """
    if in_tool_thread():
        return await asyncio.to_thread(func, *args, **kwargs)
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    call = functools.partial(context.run, func, *args, **kwargs)
    return await loop.run_in_executor(tool_thread_pool(), call)


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from synchronous code.

    Outside an event loop this is ``asyncio.run``. Inside one (a notebook, a sync
    callback of an async app) ``asyncio.run`` would refuse, so the coroutine gets
    its own loop on a side thread while the caller waits, as a sync call must.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(1, thread_name_prefix="chatflow-sync") as side:
        return side.submit(context.run, asyncio.run, coroutine).result()
