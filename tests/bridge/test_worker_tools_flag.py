"""``chatflow worker --tools MODULE``: a worker process serves a module's tools to agents."""

from __future__ import annotations

import pytest

from chatflow.handlers.cli.main import main
from chatflow_agent.runtime_tools import NativeToolProxy, RuntimeConnection
from tests.bridge.native_tools import update_sentiment
from tests.support.processes import start_worker, stop


async def test_a_worker_started_with_tools_answers_an_agent_s_native_calls(
    redis_url: str, prefix: str
) -> None:
    proc = start_worker(redis_url, prefix, "--tools", "tests.bridge.native_tools")
    connection = RuntimeConnection(redis_url, prefix=prefix, timeout_s=60)
    try:
        # The call may be published before the worker is up: its group starts at id 0.
        proxy = NativeToolProxy.from_tool(update_sentiment, connection)
        answer = await proxy.execute_async(sentiment="negative", score=3)
        assert answer == {"saved": True, "sentiment": "negative", "score": 3}
        assert proc.poll() is None
    finally:
        stop(proc)
        await connection.aclose()


def test_a_tools_module_that_does_not_import_stops_the_worker_before_it_starts(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", "--redis-url", redis_url, "--tools", "no_such_tools_module"]) == 2
    assert "--tools no_such_tools_module: cannot import it" in capsys.readouterr().err


def test_a_module_without_tools_is_refused(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "--redis-url", redis_url, "--tools", "tests.bridge"]) == 2
    assert "defines no chatflow_agent tools" in capsys.readouterr().err
