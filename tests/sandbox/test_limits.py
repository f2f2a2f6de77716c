"""Time, memory and stack limits: contained, reported, and the sandbox keeps working."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psutil
import pytest

from chatflow.runtime.sandbox import ScriptJob, ScriptLimits, ScriptSandbox
from tests.sandbox.sandbox_helpers import MEMORY_BOMBS, ROOMY_LIMITS, RUNAWAY, TEST_LIMITS, run


async def test_an_infinite_loop_times_out_and_the_sandbox_still_works(
    sandbox: ScriptSandbox,
) -> None:
    outcome = await run(sandbox, RUNAWAY)
    assert outcome.code == "script_timeout"
    assert outcome.error == f"script timeout (>{TEST_LIMITS.timeout_ms}ms)"
    assert (await run(sandbox, "return x + 1", x=1)).value == 2


async def test_a_job_timeout_is_capped_by_the_sandbox_limit(sandbox: ScriptSandbox) -> None:
    outcome = await sandbox.run(ScriptJob(RUNAWAY, {}, timeout_ms=60_000))
    assert outcome.error == f"script timeout (>{TEST_LIMITS.timeout_ms}ms)"


async def test_a_job_may_ask_for_less_time_than_the_limit(sandbox: ScriptSandbox) -> None:
    outcome = await sandbox.run(ScriptJob(RUNAWAY, {}, timeout_ms=30))
    assert outcome.error == "script timeout (>30ms)"


async def test_a_job_with_no_time_left_times_out_without_running(
    sandbox: ScriptSandbox,
) -> None:
    outcome = await sandbox.run(ScriptJob("return 1", {}, timeout_ms=0))
    assert outcome.code == "script_timeout"
    assert sandbox.evals == 0


RUNAWAY_CALLBACK = "Promise.resolve().then(() => { for (;;) {} }); return 'done'"


# A promise callback runs after its eval has answered, where no cancel can stop it: the
# worker process that holds it is replaced. (In process, its V8 thread would spin on.)
@pytest.fixture
async def process_sandbox() -> AsyncIterator[ScriptSandbox]:
    box = ScriptSandbox(TEST_LIMITS, isolation="process", lanes=1)
    yield box
    await box.aclose()


async def test_a_runaway_promise_callback_times_out_its_own_script(
    process_sandbox: ScriptSandbox,
) -> None:
    sandbox = process_sandbox
    outcome = await run(sandbox, RUNAWAY_CALLBACK)
    assert outcome.code == "script_timeout"
    assert (await run(sandbox, "return 2")).value == 2
    assert (await run(sandbox, RUNAWAY_CALLBACK)).code == "script_timeout"
    assert (await run(sandbox, "return 3")).value == 3


async def test_a_runaway_promise_callback_in_a_batch_fails_only_its_own_job(
    process_sandbox: ScriptSandbox,
) -> None:
    sandbox = process_sandbox
    jobs = [ScriptJob("return n", {"n": n}) for n in range(4)]
    jobs.insert(2, ScriptJob(RUNAWAY_CALLBACK, {}))
    outcomes = await sandbox.run_many(jobs)
    assert [o.code for o in outcomes] == [None, None, "script_timeout", None, None]
    assert [o.value for i, o in enumerate(outcomes) if i != 2] == [0, 1, 2, 3]


async def test_a_promise_callback_that_finishes_does_not_change_the_result(
    sandbox: ScriptSandbox,
) -> None:
    outcome = await run(sandbox, "let n = 1; Promise.resolve().then(() => { n = 2; }); return n")
    assert (outcome.ok, outcome.value) == (True, 1)


@pytest.mark.parametrize("bomb", sorted(MEMORY_BOMBS))
async def test_a_memory_bomb_is_contained_and_the_sandbox_still_works(
    roomy_sandbox: ScriptSandbox, bomb: str
) -> None:
    outcome = await run(roomy_sandbox, MEMORY_BOMBS[bomb])
    assert outcome.code == "script_memory"
    assert outcome.error == "script memory limit exceeded (64 MiB)"
    assert (await run(roomy_sandbox, "return [1, 2].map((v) => v * 3)")).value == [3, 6]


# The heap filled to ~52 MiB of the 64 at once (a fifth of a second idle), then ever more small
# objects, slowly: the script's time runs out before a collection finds the heap over the
# limit (a dictionary growing one small entry at a time does the same, at a pace that depends
# on the machine's load; this one does not).
SLOW_MEMORY_BOMB = """
const keep = [];
for (let i = 0; i < 50; i++) keep.push(new Array(1 << 17).fill(i + 0.5));
let o = null;
for (let i = 0; ; i++) { o = { i, next: o }; for (let j = 0; j < 100000; j++) {} }
"""


async def test_a_memory_bomb_cut_off_by_its_time_is_reported_as_memory(
    isolation: str,
) -> None:
    # Time enough for the first loop even on a loaded machine (25 times its idle time): the
    # second never ends.
    limits = ScriptLimits(timeout_ms=5000, max_memory_bytes=64 * 1024 * 1024)
    box = ScriptSandbox(limits, isolation=isolation, lanes=1)  # type: ignore[arg-type]
    try:
        outcome = await run(box, SLOW_MEMORY_BOMB)
        assert (outcome.code, outcome.error) == (
            "script_memory", "script memory limit exceeded (64 MiB)")
        # A runaway that holds little is still a timeout, on the fresh context.
        assert (await box.run(ScriptJob(RUNAWAY, {}, timeout_ms=100))).code == "script_timeout"
        assert (await run(box, "return 'alive'")).value == "alive"
    finally:
        await box.aclose()


async def test_a_huge_array_buffer_is_refused(roomy_sandbox: ScriptSandbox) -> None:
    source = "const a = []; for (;;) a.push(new Uint8Array(1 << 24));"
    outcome = await run(roomy_sandbox, source)
    assert outcome.code == "script_memory"
    assert outcome.error == "RangeError: Array buffer allocation failed"
    assert (await run(roomy_sandbox, "return new Uint8Array(4).length")).value == 4


async def test_an_allocation_that_aborts_v8_only_fails_its_own_job() -> None:
    box = ScriptSandbox(ROOMY_LIMITS, isolation="process")
    try:
        jobs = [ScriptJob("return n", {"n": n}) for n in range(3)]
        jobs.insert(1, ScriptJob("return 'x'.repeat(2 ** 29 - 30).split('').length", {}))
        outcomes = await box.run_many(jobs)
        assert outcomes[1].code == "script_memory"
        assert [o.value for i, o in enumerate(outcomes) if i != 1] == [0, 1, 2]
        assert (await run(box, "return 'alive'")).value == "alive"
    finally:
        box.close()


async def test_the_memory_limit_is_configurable(isolation: str) -> None:
    limits = ScriptLimits(timeout_ms=5000, max_memory_bytes=16 * 1024 * 1024)
    box = ScriptSandbox(limits, isolation=isolation)  # type: ignore[arg-type]
    try:
        big = "return new Array(4 * 1024 * 1024).fill(1.5).length"
        assert (await run(box, big)).code == "script_memory"
        assert (await run(box, "return new Array(1000).fill(1).length")).value == 1000
    finally:
        box.close()


@pytest.mark.parametrize(
    "source",
    ["let s = 'x'; for (;;) s = s + s;", "return new ArrayBuffer(2 ** 40).byteLength",
     "return new Array(2 ** 32)"],
)
async def test_allocations_past_v8_size_limits_are_memory_errors(
    sandbox: ScriptSandbox, source: str
) -> None:
    assert (await run(sandbox, source)).code == "script_memory"


async def test_deep_recursion_gives_a_clear_error(sandbox: ScriptSandbox) -> None:
    outcome = await run(sandbox, "function f(n) { return f(n + 1) + 1; } return f(0);")
    assert outcome.code == "script_error"
    assert outcome.error == "RangeError: Maximum call stack size exceeded"
    assert (await run(sandbox, "return 'still fine'")).value == "still fine"


async def test_a_runaway_job_in_a_batch_does_not_fail_the_others(
    sandbox: ScriptSandbox,
) -> None:
    jobs = [ScriptJob("return n * 10", {"n": n}) for n in range(6)]
    jobs.insert(3, ScriptJob(RUNAWAY, {}))
    outcomes = await sandbox.run_many(jobs)
    assert outcomes[3].code == "script_timeout"
    values = [o.value for i, o in enumerate(outcomes) if i != 3]
    assert values == [0, 10, 20, 30, 40, 50]
    assert all(o.ok for i, o in enumerate(outcomes) if i != 3)


async def test_two_runaway_jobs_in_a_batch_both_time_out(sandbox: ScriptSandbox) -> None:
    jobs = [
        ScriptJob(RUNAWAY, {}),
        ScriptJob("return 1", {}),
        ScriptJob(RUNAWAY, {}, timeout_ms=50),
        ScriptJob("return 2", {}),
    ]
    outcomes = await sandbox.run_many(jobs)
    assert [o.code for o in outcomes] == ["script_timeout", None, "script_timeout", None]
    assert [outcomes[1].value, outcomes[3].value] == [1, 2]


async def test_a_memory_bomb_in_a_batch_does_not_fail_the_others(
    roomy_sandbox: ScriptSandbox,
) -> None:
    jobs = [ScriptJob("return n", {"n": n}) for n in range(5)]
    jobs.insert(2, ScriptJob(MEMORY_BOMBS["arrays"], {}))
    outcomes = await roomy_sandbox.run_many(jobs)
    assert outcomes[2].code == "script_memory"
    assert [o.value for i, o in enumerate(outcomes) if i != 2] == [0, 1, 2, 3, 4]


async def test_a_slow_but_legal_job_behind_others_is_not_blamed(
    sandbox: ScriptSandbox,
) -> None:
    # The batch budget is shared; a job cut short by it before its own timeout is rerun.
    busy = "const end = Date.now() + ms; while (Date.now() < end) {} return ms;"
    jobs = [
        ScriptJob(busy, {"ms": 150}),
        ScriptJob(busy, {"ms": 150}),
        ScriptJob("return 'last'", {}),
    ]
    outcomes = await sandbox.run_many(jobs)
    assert [o.value for o in outcomes] == [150, 150, "last"]


async def test_a_worker_holding_a_runaway_callback_is_replaced(
    process_sandbox: ScriptSandbox,
) -> None:
    # The spinning context cannot be freed, so it is parked and the worker asks to retire:
    # the next batch runs in a new process and the old one is gone.
    sandbox = process_sandbox
    assert (await run(sandbox, "return 1")).value == 1
    (first,) = sandbox.worker_pids
    assert (await run(sandbox, RUNAWAY_CALLBACK)).code == "script_timeout"
    assert (await run(sandbox, "return 2")).value == 2
    (second,) = sandbox.worker_pids
    assert second != first
    await sandbox.aclose()
    assert not psutil.pid_exists(first) or psutil.Process(first).status() == "zombie"
