"""mini-racer's rule: each V8 context is created, used and closed on one thread."""

from __future__ import annotations

import threading
from collections.abc import Callable

from chatflow.runtime.sandbox._codec import PreparedJob, prepare
from chatflow.runtime.sandbox._engine import V8Engine, init_v8
from chatflow.runtime.sandbox._types import ScriptJob, ScriptLimits


def _error_on_another_thread(action: Callable[[], object]) -> BaseException | None:
    caught: list[BaseException] = []

    def attempt() -> None:
        try:
            action()
        except BaseException as exc:
            caught.append(exc)

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    return caught[0] if caught else None


def test_an_engine_refuses_to_be_used_or_closed_from_another_thread() -> None:
    # Lanes and the worker process keep to the rule by construction; the engine checks it
    # too, since breaking it shows only as a rare crash.
    init_v8()
    limits = ScriptLimits()
    job = prepare(ScriptJob("return 41 + 1", {}), limits)
    assert isinstance(job, PreparedJob)
    engine = V8Engine.start(limits.max_memory_bytes)
    try:
        payload = engine.cache.payload([job])
        used = _error_on_another_thread(lambda: engine.run(payload, 1.0, 0.01))
        closed = _error_on_another_thread(engine.close)
        assert isinstance(used, RuntimeError) and isinstance(closed, RuntimeError)
        # Untouched, it still works on its own thread.
        assert engine.run(payload, 1.0, 0.01) == "[[0,42]]"
    finally:
        engine.close()
