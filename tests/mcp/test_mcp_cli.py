"""``chatflow mcp --http``: the command itself, in a subprocess; and its answers to bad input."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from chatflow.handlers.cli import main
from tests.harness import Harness
from tests.mcp.support import SHOP_TOOLS, STDIO_MAIN, Runtime, http_session, make_runtime

ANNOUNCE = "MCP (streamable HTTP) for workspace 'shop' on "


@pytest.fixture
async def runtime(harness: Harness) -> Runtime:
    return await make_runtime(harness)


@pytest.fixture
async def http_command(runtime: Runtime) -> AsyncIterator[str]:
    """``chatflow mcp --workspace shop --http 127.0.0.1:0``; yields the URL it announces."""
    h = runtime.harness
    env = {**os.environ, "REDIS_URL": h.url, "CHATFLOW_PREFIX": h.keys.prefix,
           "CHATFLOW_LOG_LEVEL": "WARNING"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", STDIO_MAIN, "mcp", "--workspace", "shop", "--http", "127.0.0.1:0",
        env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    try:
        while True:  # the socket listens before the line is printed
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
            assert line, f"chatflow mcp exited ({await proc.wait()}) before listening"
            if line.startswith(ANNOUNCE):
                yield line[len(ANNOUNCE):].strip()
                break
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


async def test_the_http_command_serves_the_workspace_to_a_key_of_it(
    runtime: Runtime, http_command: str
) -> None:
    assert http_command.startswith("http://127.0.0.1:") and http_command.endswith("/mcp")
    async with http_session(http_command, runtime.tokens["shop-editor"]) as session:
        assert {t.name for t in (await session.list_tools()).tools} == SHOP_TOOLS
        done = await session.call_tool("order_status", {"orderId": "C-3", "express": False})
    assert not done.is_error
    assert [c.text for c in done.content if c.type == "text"] == ["order C-3: shipped (express=false)"]


@pytest.mark.parametrize(("args", "message"), [
    (["--workspace", "nope"], "--workspace 'nope': no such workspace"),
    (["--workspace", "Not A Workspace"], "must match [a-z0-9-]{1,40}"),
    (["--workspace", "default", "--http", "localhost"], "expected HOST:PORT"),
    (["--workspace", "default", "--http", "127.0.0.1:99999"], "expected HOST:PORT"),
    (["--workspace", "default", "--redis-url", "redis://127.0.0.1:1/0"],
     "cannot reach Valkey/Redis (REDIS_URL)"),
])
def test_bad_arguments_are_named_in_a_clear_error(
    redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    args: list[str], message: str,
) -> None:
    monkeypatch.setenv("CHATFLOW_PREFIX", prefix)
    assert main(["mcp", "--redis-url", redis_url, *args]) == 2  # a later --redis-url wins
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_command_line_does_not_import_the_mcp_sdk_until_chatflow_mcp_runs() -> None:
    code = ("import sys; from chatflow.handlers.cli.main import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stdout.strip() == "[]"
