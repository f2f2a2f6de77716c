"""When the tree's remaining deadline is what cut a block short, the answer is the tree's
timeout error, whatever the block's own timeout and onError say."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.core.tools import http, ret, to, tool
from tests.harness import Harness


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/silent"
    finally:
        listener.close()


@pytest.mark.parametrize("on_error", ["blocking", "continue"])
async def test_an_http_call_cut_short_by_the_tool_deadline_answers_the_tool_timeout(
        redis_url: str, prefix: str, silent_url: str, on_error: str) -> None:
    # The reaper would answer with the same error; keep it out, so the step's own answer counts.
    h = Harness(redis_url, prefix, tool_timeout_ms=1500, reaper_interval_ms=600_000)
    try:
        await h.start_worker()
        await h.put_tool("pt-race", tool(
            "h", http("h", silent_url, to("r"), timeoutMs=60_000, on_error=on_error),
            ret("r", "too late")))
        result = await h.run("pt-race", timeout_s=15)
        assert result.error is not None
        assert (result.error.code, result.error.message) == (
            "tool_timeout", "tool timeout (>1s): publishedToolId=pt-race")
    finally:
        await h.close()
