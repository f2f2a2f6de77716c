"""The event loop long-running processes run on: uvloop where it is installed.

Measured with ``python -m bench.instructions --prefill`` (docs/scale.md, "The event loop"):
a worker on uvloop executes 9 % fewer instructions per http-3 execution than on asyncio's
own loop (1,467k against 1,614k) and 4 % fewer per bench-3 execution (518k against 538k),
the same code otherwise. Every hop is socket reads and writes, callbacks and timers, which
uvloop runs in C (libuv); an httpCall adds its own socket, and a script its sandbox's pipe.

``CHATFLOW_EVENT_LOOP`` chooses: ``auto`` (the default: uvloop when importable, asyncio's
loop otherwise, e.g. on Windows, which uvloop does not support), ``uvloop`` (fail at start
if it is missing) or ``asyncio``.

Only the long-running services use it: the workers, the API, the projections. One-shot
commands (``chatflow exec``, ``keys``...) keep ``asyncio.run``: they would not notice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from chatflow.runtime.errors import ConfigurationError

from ..settings import EventLoopChoice

T = TypeVar("T")
LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def loop_factory(choice: EventLoopChoice) -> tuple[str, LoopFactory]:
    """The loop's name and its factory, for ``CHATFLOW_EVENT_LOOP=choice``."""
    if choice == "asyncio":
        return "asyncio", asyncio.new_event_loop
    try:
        import uvloop
    except ImportError as exc:
        if choice == "uvloop":
            raise ConfigurationError(
                "CHATFLOW_EVENT_LOOP=uvloop, but uvloop is not installed: install it "
                "(`pip install uvloop`; it does not support Windows) or set "
                "CHATFLOW_EVENT_LOOP=asyncio") from exc
        return "asyncio", asyncio.new_event_loop
    return "uvloop", uvloop.new_event_loop


def run_service(main: Coroutine[Any, Any, T], choice: EventLoopChoice) -> T:
    """``asyncio.run(main)`` on the chosen loop."""
    _, factory = loop_factory(choice)
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def running_loop_name() -> str:
    """``uvloop`` or ``asyncio``: what the worker's start-up line reports."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.startswith("uvloop") else "asyncio"
