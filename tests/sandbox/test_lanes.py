"""Lanes: each V8 context lives on one thread; lanes are shared fairly between tools."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from chatflow.handlers.settings import Settings
from chatflow.runtime.sandbox import ScriptJob, ScriptLimits, ScriptSandbox
from tests.sandbox.sandbox_helpers import RUNAWAY, run

BUSY = "const end = Date.now() + ms; while (Date.now() < end) {} return ms;"
FAIR_LIMITS = ScriptLimits(timeout_ms=1000, max_memory_bytes=64 * 1024 * 1024)
RUNAWAY_LIMITS = ScriptLimits(timeout_ms=240_000, max_memory_bytes=64 * 1024 * 1024)


async def _finish_order(box: ScriptSandbox, jobs: list[tuple[str, ScriptJob]]) -> list[str]:
    """Submit the jobs in order, each as its own caller; return their names as they finish."""
    order: list[str] = []

    async def one(name: str, job: ScriptJob) -> None:
        outcome = await box.run(job)
        assert outcome.ok, outcome
        order.append(name)

    await asyncio.gather(*(one(name, job) for name, job in jobs))
    return order


async def test_one_tools_slow_scripts_do_not_starve_another_tools_script(isolation: str) -> None:
    box = ScriptSandbox(FAIR_LIMITS, isolation=isolation, lanes=1)  # type: ignore[arg-type]
    try:
        slow = [(f"slow-{n}", ScriptJob(BUSY, {"ms": 120}, owner="tool-a")) for n in range(20)]
        quick = ("quick", ScriptJob("return 'hi'", {}, owner="tool-b"))
        order = await _finish_order(box, [*slow, quick])
        # Served round-robin: the other tool's script is not queued behind all 20.
        assert order.index("quick") < 5, order
    finally:
        await box.aclose()


async def test_a_free_lane_serves_another_tool_while_one_lane_is_busy(isolation: str) -> None:
    box = ScriptSandbox(FAIR_LIMITS, isolation=isolation, lanes=2)  # type: ignore[arg-type]
    try:
        # Both lanes started first (lanes start on demand, and starting a worker process on
        # a loaded machine can take longer than the slow script): what is compared is then
        # a free lane against a busy one, not a lane's start-up against a script.
        await _finish_order(box, [(f"warm-{n}", ScriptJob(BUSY, {"ms": 300}, owner=f"w{n}"))
                                  for n in range(2)])
        assert box.lanes == 2
        order = await _finish_order(box, [
            ("slow", ScriptJob(BUSY, {"ms": 900}, owner="tool-a")),  # under the 1 s limit
            ("quick", ScriptJob("return 1", {}, owner="tool-b")),
        ])
        assert order == ["quick", "slow"]
        assert box.lanes == 2
    finally:
        await box.aclose()


def test_the_number_of_lanes_defaults_to_the_cores() -> None:
    from chatflow.handlers.settings import Settings

    assert Settings().script_lanes == 0  # 0: one lane per core
    box = ScriptSandbox()
    assert box._max_lanes == (os.cpu_count() or 1)
    with pytest.raises(ValueError, match="lanes"):
        ScriptSandbox(lanes=0)


async def test_closing_right_after_a_runaway_script_is_cancelled_is_safe(isolation: str) -> None:
    # The old engine freed its context from another thread right after cancelling an eval;
    # the late callback then freed a value through the freed context (exit code 139).
    # The runaway's own limit is far beyond the test's steps: with a 1 s limit, on a loaded
    # machine, starting the second lane's worker for "return 1" took longer than that and
    # the runaway ended by its timeout before close() ("DID NOT RAISE").
    for _ in range(5):
        box = ScriptSandbox(RUNAWAY_LIMITS, isolation=isolation, lanes=2)  # type: ignore[arg-type]
        doomed = asyncio.ensure_future(box.run(ScriptJob(RUNAWAY, {})))
        assert (await run(box, "return 1")).value == 1
        box.close()
        with pytest.raises((RuntimeError, asyncio.CancelledError)):
            await doomed
        await box.aclose()


def _child_environment(box: ScriptSandbox) -> bytes:
    (pid,) = box.worker_pids
    return Path(f"/proc/{pid}/environ").read_bytes()


def _names(raw: bytes) -> set[str]:
    return {entry.split(b"=", 1)[0].decode() for entry in raw.split(b"\0") if entry}


async def test_the_sandbox_worker_process_gets_an_empty_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHATFLOW_ENCRYPTION_KEY", "not-for-scripts")
    monkeypatch.setenv("REDIS_URL", "redis://:secret@127.0.0.1:1/0")
    box = ScriptSandbox(isolation="process", lanes=1)
    try:
        assert (await run(box, "return 1")).value == 1
        raw = _child_environment(box)
        assert _names(raw) == set()  # the runtime passes on nothing it was not handed
        assert b"not-for-scripts" not in raw and b"secret" not in raw
    finally:
        await box.aclose()


async def test_the_service_hands_the_sandbox_only_pythonpath_from_its_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("CHATFLOW_ENCRYPTION_KEY", "not-for-scripts")
    monkeypatch.setenv("REDIS_URL", "redis://:secret@127.0.0.1:1/0")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    box = ScriptSandbox(isolation="process", lanes=1, child_env=Settings().sandbox_env())
    try:
        assert (await run(box, "return 1")).value == 1
        raw = _child_environment(box)
        assert _names(raw) == {"PYTHONPATH"}
        assert f"PYTHONPATH={tmp_path}".encode() in raw.split(b"\0")
        assert b"not-for-scripts" not in raw and b"secret" not in raw
    finally:
        await box.aclose()


def test_a_lane_keeps_working_from_one_event_loop_to_the_next() -> None:
    box = ScriptSandbox(FAIR_LIMITS, isolation="in_process", lanes=1)
    try:
        assert asyncio.run(run(box, "return 1")).value == 1
        assert asyncio.run(run(box, "return 2")).value == 2
    finally:
        box.close()


async def test_a_worker_that_starts_slowly_is_not_taken_for_a_crashed_script(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A loaded machine, made certain: the worker's interpreter spends 1.5 s before it even
    # imports the sandbox, three times the hang guard's slack. The first batch used to be
    # timed from the spawn and reported "script engine crashed".
    from chatflow.runtime.sandbox import _process

    monkeypatch.setattr(_process, "GUARD_SLACK_S", 0.5)
    (tmp_path / "sitecustomize.py").write_text("import time\ntime.sleep(1.5)\n")
    box = ScriptSandbox(FAIR_LIMITS, isolation="process", lanes=1,
                        child_env={"PYTHONPATH": str(tmp_path)})
    try:
        outcome = await run(box, "return 41 + 1")
        assert outcome.ok and outcome.value == 42, outcome
    finally:
        await box.aclose()
