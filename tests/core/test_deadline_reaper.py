"""The deadline reaper answers a command whose worker died, with the seed's timeout error."""

from __future__ import annotations

import asyncio
import socket

from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.processes import kill, start_worker


async def _accepted(sock: socket.socket, timeout_s: float = 30.0) -> socket.socket:
    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    conn, _ = await asyncio.wait_for(loop.sock_accept(sock), timeout_s)
    return conn


async def test_reaper_answers_when_the_worker_holding_the_step_is_dead(
        redis_url: str, prefix: str) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/hang"
    # A long claim idle: nobody reclaims the dead worker's step; only the reaper can answer.
    h = Harness(redis_url, prefix, tool_timeout_ms=1500, claim_idle_ms=600_000)
    doomed = start_worker(redis_url, prefix, tool_timeout_ms="1500", claim_idle_ms="600000")
    try:
        await h.put_tool("pt-hang", tool("h", http("h", url, to("r"), timeoutMs=60_000), ret("r", "x")))
        command = h.command("pt-hang")
        after = await h.mark()
        await h.send(command)
        conn = await _accepted(listener)  # the doomed worker's httpCall is in flight
        kill(doomed)
        conn.close()
        await h.start_worker()
        found = await h.results_after(after, {command.commandId})
        (result,) = found[command.commandId]
        assert result.error is not None
        assert (result.error.code, result.error.message) == (
            "tool_timeout", "tool timeout (>1s): publishedToolId=pt-hang")
        assert result.next == "handoff"
    finally:
        kill(doomed)
        await h.close()
        listener.close()
