"""Instructions per execution: the worker's CPU work, counted, not timed.

    python -m bench.instructions [--executions 1000] [--scenarios baseline,bench-3,http-3]

This VM's CPU speed moves up to 2x within minutes, so microseconds of CPU compare only
within one round (bench.stream_bench reports them as multiples of the same round's bare
loop). Instructions do not move: valgrind's callgrind counts every instruction the worker
process executes, whatever else the machine is doing (the same figure to well under 1 % run
after run). Each scenario starts one worker (or bench.baseline's bare loop) under callgrind,
warms it up, zeroes the counters (``callgrind_control -z``), drives ``--executions``
executions with 64 in flight, waits until every consumer group has drained (the execution-log
projection included), and dumps the counters (``callgrind_control -d``). The figure is the
dump's total over the executions; children (the V8 sandbox's processes) are not counted.

``NAME+trace`` and ``NAME+trace1`` (``bench.stream_bench``'s: tracing on at 100 % and 1 %, the
spans sent over OTLP/HTTP to a loopback receiver in the driver) count the worker with its
tracing projection; ``NAME+trace-apart`` counts the worker alone, its spans exported by a
``chatflow projections run`` process that is not counted.

Under callgrind the worker runs about 60 times slower: a thousand executions take tens of
seconds. Needs valgrind (Debian's package).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import uuid
from typing import Any

import bench.stream_bench as stream_bench
from bench.stream_bench import (
    BENCH_3,
    BENCH_CHILD,
    SCENARIOS,
    Driver,
    drained,
    http_3,
    spawn_exporter,
    start_echo_server,
    tracing_env,
)
from chatflow.handlers.operations.embedded import EmbeddedServer
from chatflow.handlers.redis_client import make_client

WINDOW = 64  # in flight: a full intake batch, as the stream bench's 512 gives one worker


def _callgrind(out_dir: str, cmd: list[str]) -> list[str]:
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_dir}/cg.%p",
            "--dump-instr=no", "--collect-jumps=no", *cmd]


def _total(dump: str) -> int:
    """The instruction total of one callgrind dump (its ``summary:`` or ``totals:`` line)."""
    with open(dump) as fh:
        text = fh.read()
    found = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.MULTILINE)
    if not found:
        raise RuntimeError(f"no totals in {dump}")
    return int(found.group(1))


def _control(flag: str, pid: int) -> None:
    subprocess.run(["callgrind_control", flag, str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def prefill(driver: Driver, pt: str, executions: int, pid: int) -> None:
    """Publish every command while the worker is stopped (SIGSTOP), then let it go: it reads
    full batches whatever else runs on the machine, so the count depends on the code alone.
    With a window of commands in flight instead, the batch sizes follow the relative speed
    of the driver and the worker under callgrind, and a loaded machine moves the count by up
    to a tenth."""
    os.kill(pid, signal.SIGSTOP)
    try:
        for start in range(0, executions, 500):
            async with driver.client.pipeline(transaction=False) as pipe:
                for i in range(start, min(start + 500, executions)):
                    pipe.xadd(driver.commands, driver.payload(pt, f"p{i}-{uuid.uuid4().hex[:8]}"))
                await pipe.execute()
    finally:
        os.kill(pid, signal.SIGCONT)


async def one(url: str, name: str, executions: int, tools: list[dict[str, Any]],
              full_batches: bool = False) -> int:
    """Instructions the worker executed for ``executions`` executions of scenario ``name``."""
    prefix = f"instr{uuid.uuid4().hex[:6]}:"
    baseline = name == "baseline"
    client = make_client(url)
    for t in tools:
        await client.set(f"{prefix}tool:{t['id']}", json.dumps(t))
    if baseline:
        await client.xgroup_create(f"{prefix}steps", "g", id="0", mkstream=True)
        cmd = [sys.executable, "-m", "bench.baseline", url, prefix, "c0", str(WINDOW)]
    else:
        cmd = [sys.executable, "-c", "from chatflow.handlers.cli import main; main(['worker'])"]
    env = {**os.environ, "REDIS_URL": url, "CHATFLOW_PREFIX": prefix,
           "CHATFLOW_LOG_LEVEL": "WARNING", "CHATFLOW_METRICS_PORT": "0", **tracing_env(name)}
    out_dir = tempfile.mkdtemp(prefix="callgrind-")
    proc = subprocess.Popen(_callgrind(out_dir, cmd), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    exporter = spawn_exporter(url, prefix, name)  # -apart: not counted
    driver = Driver(url, prefix, baseline)
    pt = "" if baseline else SCENARIOS[name.split("+")[0]][0]
    try:
        await driver.run(pt, 200, WINDOW)  # warm: definitions cached, code paths taken
        await drained(client, prefix, timeout_s=300)
        _control("-z", proc.pid)
        if full_batches:
            await prefill(driver, pt, executions, proc.pid)
        else:
            await driver.run(pt, executions, WINDOW)
        await drained(client, prefix, timeout_s=300)
        _control("-d", proc.pid)
        dumps = sorted(glob.glob(f"{out_dir}/cg.{proc.pid}.*"))
        if not dumps:
            raise RuntimeError("callgrind wrote no dump")
        return _total(dumps[-1])
    finally:
        for p in [proc] + ([exporter] if exporter else []):
            p.terminate()
            p.wait()
        await client.aclose()
        await driver.client.aclose()
        for f in glob.glob(f"{out_dir}/*"):
            os.unlink(f)
        os.rmdir(out_dir)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executions", type=int, default=1000)
    parser.add_argument("--scenarios", default="baseline,bench-3,http-3")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--prefill", action="store_true",
                        help="publish every command before the worker reads (full batches): "
                             "the count the machine's load does not move, for A/B")
    args = parser.parse_args()
    server = EmbeddedServer().start()
    echo: subprocess.Popen[bytes] | None = None
    receiver = contextlib.ExitStack()
    try:
        tools = [BENCH_CHILD, BENCH_3]
        names = args.scenarios.split(",")
        if any("+trace" in name for name in names):
            from tests.support.otlp import otlp_receiver

            stream_bench.TRACES_ENDPOINT = receiver.enter_context(otlp_receiver()).endpoint
        if any(name.startswith("http-3") for name in names):
            echo, base = start_echo_server()
            tools.append(http_3(base))
        figures: dict[str, float] = {}
        for name in names:
            figures[name] = await one(server.url, name, args.executions, tools,
                                      args.prefill) / args.executions
            if not args.json:
                ratio = (f"  ({figures[name] / figures['baseline']:.2f}x the bare loop's)"
                         if "baseline" in figures and name != "baseline" else "")
                off = name.split("+")[0]
                if off != name and off in figures:  # tracing on against the same, off
                    ratio += f"  ({figures[name] / figures[off]:.2f}x {off}'s)"
                print(f"{name:<10} {figures[name] / 1000:8.1f} k instructions per execution"
                      f"{ratio}", flush=True)
        if args.json:
            print(json.dumps({"executions": args.executions,
                              "instructions_per_execution": figures}, indent=2))
    finally:
        receiver.close()
        if echo is not None:
            echo.terminate()
            echo.wait()
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
