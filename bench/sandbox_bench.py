"""Per-script cost of the ways to run executeScript JavaScript, measured in one run.

    .venv/bin/python bench/sandbox_bench.py [--seconds 1.0]

Prints µs/script and the ratio to a single synchronous mini-racer call for:
mini-racer called directly (sync, through a thread, on our own loop), the ScriptSandbox
(in-process and worker-process, batch sizes 1, 8, 64, 128), and, if the ``quickjs``
package is installed, QuickJS inline, through a thread and with a fresh context per script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable

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
    args = parser.parse_args()
    rows: dict[str, float] = {}
    await bench_mini_racer(args.seconds, rows)
    await bench_sandbox("in_process", args.seconds, rows)
    await bench_sandbox("process", args.seconds, rows)
    await bench_quickjs(args.seconds, rows)
    base = rows["mini-racer eval, sync (library loop thread)"]
    print(f"{'variant':<52} {'µs/script':>10} {'vs single':>10}")
    for name, micros in rows.items():
        print(f"{name:<52} {micros:>10.1f} {base / micros:>9.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
