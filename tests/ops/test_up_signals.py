"""`chatflow up` never leaves its embedded Valkey behind: not on SIGHUP (a closed terminal),
and not when the parent itself is killed with SIGKILL (Linux parent-death signal)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chatflow.handlers.operations.embedded import free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc and relies on PR_SET_PDEATHSIG (Linux)")


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting for whoever adopted it to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def gone(pid: int, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)  # polling the pid: a foreign process has no exit event
    return False


async def started_up(tmp_path: Path, *extra: str
                     ) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(CHATFLOW_METRICS_PORT="0", CHATFLOW_LOG_FORMAT="json")
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("chatflow")), "up", "--no-examples", *extra,
        "--port", str(free_port()), "--data-dir", str(tmp_path / "valkey"),
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    try:
        while True:
            line = await asyncio.wait_for(proc.stderr.readline(), timeout=60)
            assert line, "chatflow up exited before it was ready"
            # the workers' loop owns the stop signals once they run (a signal that comes
            # earlier unwinds start-up instead: covered by the exit code 129 below)
            if b'"worker started"' in line:
                break
        (valkey,) = [c for c in children(proc.pid) if b"-server" in
                     Path(f"/proc/{c}/cmdline").read_bytes().split(b"\0")[0]]
        yield proc, valkey
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.fixture(params=["workers only", "with the API"])
async def up(request: pytest.FixtureRequest, tmp_path: Path
             ) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    extra = ("--no-api",) if request.param == "workers only" else (
        "--api-port", str(free_port()))
    async for pair in started_up(tmp_path, *extra):
        yield pair


async def test_sighup_stops_chatflow_up_and_its_embedded_valkey(
        up: tuple[asyncio.subprocess.Process, int]) -> None:
    proc, valkey = up
    assert alive(valkey)
    proc.send_signal(signal.SIGHUP)
    # 0 once the workers run, 129 (128 + SIGHUP) if it came during start-up; never killed by it
    assert await asyncio.wait_for(proc.wait(), timeout=30) in (0, 128 + signal.SIGHUP)
    assert await gone(valkey)


async def test_the_embedded_valkey_exits_when_chatflow_up_is_killed_outright(
        up: tuple[asyncio.subprocess.Process, int]) -> None:
    proc, valkey = up
    assert alive(valkey)
    proc.kill()
    await proc.wait()
    assert await gone(valkey), "the embedded Valkey outlived its killed parent"
