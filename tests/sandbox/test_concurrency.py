"""Many callers on one event loop: batching, ordering, cancellation, closing."""

from __future__ import annotations

import asyncio

import pytest

from chatflow.runtime.sandbox import ScriptJob, ScriptSandbox
from tests.sandbox.sandbox_helpers import RUNAWAY, run


async def test_many_concurrent_runs_each_get_their_own_result(sandbox: ScriptSandbox) -> None:
    sources = ["return n * 2", "return 'n' + n", "return {n}", "return [n, n]"]
    jobs = [ScriptJob(sources[n % 4], {"n": n}) for n in range(400)]
    outcomes = await asyncio.gather(*(sandbox.run(job) for job in jobs))
    expected = [[n * 2, f"n{n}", {"n": n}, [n, n]][n % 4] for n in range(400)]
    assert [o.value for o in outcomes] == expected


async def test_concurrent_runs_are_coalesced_into_few_batches(sandbox: ScriptSandbox) -> None:
    await run(sandbox, "return 0")  # starts the lane's worker
    before = sandbox.evals
    # A fresh owner: the warm-up's owner may have been judged slow (over 50 ms a job, easy
    # on a loaded machine), and a slow owner's jobs rightly run one per batch.
    jobs = [ScriptJob("return n", {"n": n}, owner="burst") for n in range(100)]
    await asyncio.gather(*(sandbox.run(job) for job in jobs))
    assert sandbox.evals - before <= 2


async def test_run_many_preserves_order_with_mixed_outcomes(sandbox: ScriptSandbox) -> None:
    jobs = [
        ScriptJob("return 1", {}),
        ScriptJob("throw new Error('two')", {}),
        ScriptJob("return (", {}),
        ScriptJob("return () => 4", {}),
        ScriptJob("return 5", {}, timeout_ms=0),
        ScriptJob("return 6", {}),
    ]
    outcomes = await sandbox.run_many(jobs)
    assert [o.code for o in outcomes] == [
        None,
        "script_error",
        "script_syntax",
        "script_result",
        "script_timeout",
        None,
    ]
    assert [outcomes[0].value, outcomes[5].value] == [1, 6]


async def test_run_many_with_no_jobs_returns_an_empty_list(sandbox: ScriptSandbox) -> None:
    assert await sandbox.run_many([]) == []


async def test_a_batch_larger_than_max_batch_is_split(isolation: str) -> None:
    box = ScriptSandbox(max_batch=8, isolation=isolation)  # type: ignore[arg-type]
    try:
        outcomes = await box.run_many([ScriptJob("return n", {"n": n}) for n in range(20)])
        assert [o.value for o in outcomes] == list(range(20))
        # At least ceil(20 / 8) round trips. Not exactly 3: on a loaded machine a batch can take
        # long enough per job that its owner is judged slow and runs in batches of its own.
        assert box.evals >= 3
    finally:
        box.close()


async def test_a_cancelled_run_does_not_disturb_other_runs(sandbox: ScriptSandbox) -> None:
    doomed = asyncio.ensure_future(sandbox.run(ScriptJob(RUNAWAY, {})))
    others = [asyncio.ensure_future(run(sandbox, "return n", n=n)) for n in range(5)]
    await asyncio.sleep(0)
    doomed.cancel()
    assert [o.value for o in await asyncio.gather(*others)] == list(range(5))
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert (await run(sandbox, "return 'after'")).value == "after"


async def test_the_event_loop_keeps_running_while_a_script_runs(
    sandbox: ScriptSandbox,
) -> None:
    await run(sandbox, "return 0")  # start the engine first
    slow = asyncio.ensure_future(sandbox.run(ScriptJob(RUNAWAY, {})))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not slow.done()  # the loop turned 20 times while the script was still running
    assert (await slow).code == "script_timeout"


async def test_a_closed_sandbox_refuses_new_jobs(isolation: str) -> None:
    box = ScriptSandbox(isolation=isolation)  # type: ignore[arg-type]
    assert (await run(box, "return 1")).value == 1
    box.close()
    box.close()
    with pytest.raises(RuntimeError, match="closed"):
        await run(box, "return 1")


async def test_closing_fails_queued_jobs(isolation: str) -> None:
    box = ScriptSandbox(isolation=isolation)  # type: ignore[arg-type]
    pending = asyncio.ensure_future(run(box, "return 1"))
    await asyncio.sleep(0)
    box.close()
    with pytest.raises((RuntimeError, asyncio.CancelledError)):
        await pending


async def test_a_failed_run_many_leaves_no_unretrieved_job_errors(isolation: str) -> None:
    # run_many awaits its jobs' futures in turn: when the first fails, the others' errors
    # must still count as seen, as with gather, or each logs "exception was never retrieved".
    import gc

    loop = asyncio.get_running_loop()
    unretrieved: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    try:
        box = ScriptSandbox(isolation=isolation)  # type: ignore[arg-type]
        pending = asyncio.ensure_future(box.run_many([ScriptJob("return 1", {})] * 3))
        await asyncio.sleep(0)
        box.close()
        with pytest.raises((RuntimeError, asyncio.CancelledError)):
            await pending
        await box.aclose()
        del pending
        gc.collect()
        assert unretrieved == []
    finally:
        loop.set_exception_handler(previous)
