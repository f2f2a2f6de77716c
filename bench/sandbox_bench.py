"""Per-script cost of the ways to run executeScript JavaScript, measured in one run.

    .venv/bin/python bench/sandbox_bench.py [--seconds 1.0]

Prints µs/script and the ratio to a single synchronous mini-racer call for:
mini-racer called directly (sync, through a thread, on our own loop), the ScriptSandbox
(in-process and worker-process, batch sizes 1, 8, 64, 128), and, if the ``quickjs``
package is installed, QuickJS inline, through a thread and with a fresh context per script.

Then the CPU per script of the process-isolated ScriptSandbox for batches of 1, 4 and 64
one-line scripts (``return Number(n) + 1``, as in the stream bench's http-3 scenario): user
plus system time of this process and of the sandbox worker processes, read from psutil
before and after the same run, so a change of the VM's clock speed between runs does not
enter the comparison. ``--cpu-only`` prints just these rows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import psutil
from py_mini_racer import MiniRacer, mini_racer

from chatflow.runtime.sandbox import ScriptJob, ScriptSandbox

SOURCE = "return {total: items.reduce((a, b) => a + b, 0), name: name.toUpperCase()}"
INPUTS = {"items": list(range(10)), "name": "chatflow"}
FN = f"(function (input, items, name) {{ 'use strict'; {SOURCE} }})"


def timed(fn: Callable[[], int], seconds: float) -> float:
    """µs per script: repeat fn (which runs some scripts and returns how many) for ~seconds."""
    fn()  # warm up
    scripts, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        scripts += fn()
    return (time.perf_counter() - start) / scripts * 1e6


async def atimed(fn: Callable[[], Awaitable[int]], seconds: float) -> float:
    await fn()
    scripts, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        scripts += await fn()
    return (time.perf_counter() - start) / scripts * 1e6


def direct_call(racer: MiniRacer) -> int:
    racer.eval(f"JSON.stringify(f(JSON.parse({json.dumps(json.dumps(INPUTS))})))")
    return 1


async def bench_mini_racer(seconds: float, rows: dict[str, float]) -> None:
    racer = MiniRacer()
    racer.eval(f"var f = (i) => {FN}(i, i.items, i.name)")
    rows["mini-racer eval, sync (library loop thread)"] = timed(lambda: direct_call(racer), seconds)

    async def via_thread() -> int:
        return await asyncio.to_thread(direct_call, racer)

    rows["mini-racer eval via asyncio.to_thread"] = await atimed(via_thread, seconds)
    racer.close()
    with mini_racer(asyncio.get_running_loop()) as own:
        await own.eval_cancelable(f"var f = (i) => {FN}(i, i.items, i.name)")
        code = f"JSON.stringify(f(JSON.parse({json.dumps(json.dumps(INPUTS))})))"

        async def own_loop() -> int:
            await own.eval_cancelable(code)
            return 1

        rows["mini-racer eval_cancelable on caller's loop"] = await atimed(own_loop, seconds)


async def bench_sandbox(isolation: str, seconds: float, rows: dict[str, float]) -> None:
    box = ScriptSandbox(isolation=isolation)  # type: ignore[arg-type]
    job = ScriptJob(SOURCE, INPUTS)
    try:
        for size in (1, 8, 64, 128):
            jobs = [job] * size

            async def batch(jobs: list[ScriptJob] = jobs) -> int:
                outcomes = await box.run_many(jobs)
                assert outcomes[0].ok, outcomes[0]
                return len(jobs)

            rows[f"ScriptSandbox {isolation}, batch {size}"] = await atimed(batch, seconds)

        async def concurrent_runs() -> int:
            await asyncio.gather(*(box.run(job) for _ in range(64)))
            return 64

        rows[f"ScriptSandbox {isolation}, 64 concurrent run()"] = await atimed(
            concurrent_runs, seconds
        )
    finally:
        box.close()


CPU_SOURCE = "return Number(n) + 1"
CPU_BATCHES = (1, 4, 64)


def _cpu_seconds(pids: list[int]) -> list[float]:
    """User + system CPU time of each process (all its threads) so far."""
    times = [psutil.Process(pid).cpu_times() for pid in pids]
    return [t.user + t.system for t in times]


async def bench_cpu(scripts: int, rows: dict[str, tuple[float, float, float]]) -> None:
    """CPU µs per script (parent, sandbox workers, total) for each batch size."""
    box = ScriptSandbox(lanes=1)  # one worker process: the parent waits on one lane
    job = ScriptJob(CPU_SOURCE, {"n": "41"})
    try:
        await box.run_many([job] * 8)  # start the worker and compile the script
        pids = [psutil.Process().pid, *box.worker_pids]
        for size in CPU_BATCHES:
            jobs = [job] * size
            rounds = max(1, scripts // size)
            for _ in range(max(1, rounds // 20)):  # warm up
                await box.run_many(jobs)
            before = _cpu_seconds(pids)
            for _ in range(rounds):
                outcomes = await box.run_many(jobs)
            after = _cpu_seconds(pids)
            assert outcomes[0].value == 42, outcomes[0]
            spent = [(b - a) / (rounds * size) * 1e6 for a, b in zip(before, after, strict=True)]
            rows[f"process, batch {size}"] = (spent[0], sum(spent[1:]), sum(spent))
    finally:
        await box.aclose()


def print_cpu(rows: dict[str, tuple[float, float, float]]) -> None:
    print(f"\nCPU per script, {CPU_SOURCE!r} (µs, user+system):")
    print(f"{'ScriptSandbox':<24} {'parent':>8} {'workers':>8} {'total':>8}")
    for name, (parent, workers, total) in rows.items():
        print(f"{name:<24} {parent:>8.1f} {workers:>8.1f} {total:>8.1f}")


async def bench_quickjs(seconds: float, rows: dict[str, float]) -> None:
    try:
        import quickjs  # type: ignore[import-not-found]
    except ImportError:
        print("quickjs not installed: skipping (pip install quickjs)")
        return
    context = quickjs.Context()
    wrapper = f"const i = JSON.parse(s); return JSON.stringify({FN}(i, i.items, i.name));"
    context.eval(f"var f = (s) => {{ {wrapper} }}")
    fn = context.get("f")
    payload = json.dumps(INPUTS)

    def inline() -> int:
        fn(payload)
        return 1

    rows["QuickJS inline (one shared context, not isolated)"] = timed(inline, seconds)

    def in_thread() -> None:
        fn(payload)  # quickjs objects are not thread-safe; this loop only has one in flight

    async def via_thread() -> int:
        await asyncio.to_thread(in_thread)
        return 1

    rows["QuickJS via asyncio.to_thread"] = await atimed(via_thread, seconds)

    def fresh_context() -> int:
        ctx = quickjs.Context()
        ctx.eval(f"var f = (i) => JSON.stringify({FN}(i, i.items, i.name))")
        ctx.eval(f"f({payload})")
        return 1

    rows["QuickJS fresh Context per script (isolated)"] = timed(fresh_context, seconds)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument(
        "--cpu-scripts", type=int, default=20_000, help="scripts per CPU row (psutil counts in 10 ms ticks)"
    )
    parser.add_argument("--cpu-only", action="store_true", help="only the CPU per script rows")
    args = parser.parse_args()
    cpu_rows: dict[str, tuple[float, float, float]] = {}
    await bench_cpu(args.cpu_scripts, cpu_rows)
    if args.cpu_only:
        print_cpu(cpu_rows)
        return
    rows: dict[str, float] = {}
    await bench_mini_racer(args.seconds, rows)
    await bench_sandbox("in_process", args.seconds, rows)
    await bench_sandbox("process", args.seconds, rows)
    await bench_quickjs(args.seconds, rows)
    base = rows["mini-racer eval, sync (library loop thread)"]
    print(f"{'variant':<52} {'µs/script':>10} {'vs single':>10}")
    for name, micros in rows.items():
        print(f"{name:<52} {micros:>10.1f} {base / micros:>9.1f}x")
    print_cpu(cpu_rows)


if __name__ == "__main__":
    asyncio.run(main())
