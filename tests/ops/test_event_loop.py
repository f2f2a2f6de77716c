"""The event loop worker processes run on: uvloop by default, asyncio's own on request
(``CHATFLOW_EVENT_LOOP``), and a clear refusal when uvloop is asked for but missing.

The in-process suite runs on asyncio's loop; ``.ci/run`` runs the data-plane suites again
with ``CHATFLOW_TEST_EVENT_LOOP=uvloop`` (tests/conftest.py). These tests check the
processes themselves: the loop their start-up line names, and a tool that makes an HTTP
request and runs a script answered through it.
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading

import pytest

from chatflow.handlers.operations.loop import loop_factory, run_service, running_loop_name
from chatflow.runtime.errors import ConfigurationError
from tests.core.tools import http, ret, script, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer
from tests.support.processes import kill, start_worker


def _started_line(proc: subprocess.Popen[bytes]) -> dict[str, object]:
    """The worker's ``worker started`` log record (JSON), read from its stderr."""
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr or []],
                     daemon=True).start()
    seen: list[bytes] = []
    while True:
        try:
            line = lines.get(timeout=90)
        except queue.Empty:
            pytest.fail(f"no 'worker started' within 90 s: {b''.join(seen[-10:])!r}")
        seen.append(line)
        if b'"worker started"' in line:
            record: dict[str, object] = json.loads(line)
            return record


def _http_then_script(base: str) -> dict[str, object]:
    return tool("h", http("h", base + "/n", to("s"), responseBodyVariable="resp"),
                script("s", "return Number(n) * 2", "s", to("r"), inputs={"n": "{{resp.n}}"}),
                ret("r", "{{s}}"))


@pytest.mark.parametrize(("setting", "expected"), [(None, "uvloop"), ("asyncio", "asyncio")])
async def test_a_worker_process_names_its_loop_and_answers_a_tool_on_it(
        redis_url: str, prefix: str, http_server: LoopbackServer, setting: str | None,
        expected: str) -> None:
    http_server.route("GET", "/n", {"n": 21})
    env = {"CHATFLOW_LOG_LEVEL": "INFO", "CHATFLOW_LOG_FORMAT": "json"}
    if setting:
        env["CHATFLOW_EVENT_LOOP"] = setting
    proc = start_worker(redis_url, prefix, env=env, stderr=subprocess.PIPE)
    h = Harness(redis_url, prefix)
    try:
        assert _started_line(proc)["loop"] == expected
        await h.put_tool("doubled", _http_then_script(http_server.base))
        results = await asyncio.gather(*(h.run("doubled") for _ in range(5)))
        assert [(r.ok, r.result) for r in results] == [(True, "42")] * 5, results[0]
        assert len(http_server.requests) == 5
    finally:
        kill(proc)
        await h.close()


def test_auto_falls_back_to_asyncio_without_uvloop_and_uvloop_asked_for_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert loop_factory("auto") == ("asyncio", asyncio.new_event_loop)
    with pytest.raises(ConfigurationError, match=r"CHATFLOW_EVENT_LOOP=uvloop, but uvloop is "
                                                 r"not installed.*CHATFLOW_EVENT_LOOP=asyncio"):
        loop_factory("uvloop")


def test_run_service_runs_the_coroutine_on_the_chosen_loop() -> None:
    async def name() -> str:
        return running_loop_name()

    assert run_service(name(), "uvloop") == "uvloop"
    assert run_service(name(), "asyncio") == "asyncio"
    assert run_service(name(), "auto") == "uvloop"  # installed with the package
