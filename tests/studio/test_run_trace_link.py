"""The run page shows the run's OpenTelemetry trace id, linked through CHATFLOW_TRACE_URL: a
run whose command carried a traceparent links to the producer's trace. A real worker
exporting to a loopback OTLP receiver, a real run history (SQLite), Debian's Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.studio.support import Studio, running_studio
from tests.studio.test_live import publish
from tests.support.otlp import otlp_receiver

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
VIEWER = "http://localhost:16686/trace/{traceId}"


@pytest.fixture
async def traced_studio(redis_url: str, prefix: str, browser: Any,
                        tmp_path: Path) -> AsyncIterator[Studio]:
    with otlp_receiver() as otlp:
        async with running_studio(redis_url, prefix, browser,
                                  history_url=f"sqlite:///{tmp_path / 'history.db'}",
                                  history_auto_migrate=True, trace_url=VIEWER,
                                  otel_traces_endpoint=otlp.endpoint) as s:
            yield s


async def test_the_run_page_links_the_runs_trace_in_the_trace_viewer(traced_studio: Studio) -> None:
    from playwright.async_api import expect

    studio = traced_studio
    pt = await publish(studio, "t-hi", {"onboardingBlockId": "r", "blocks": {
        "r": {"type": "return", "id": "r", "value": "hi"}}}, "Hi")
    command = studio.harness.command(pt, toolId="t-hi")
    command = msgspec.structs.replace(command, traceparent=f"00-{TRACE}-00f067aa0ba902b7-01")
    result = await studio.harness.run_command(command)
    assert result.ok
    history = studio.harness.workers[0].history
    assert history is not None
    await history.wait_caught_up()
    run = await studio.ok("GET", f"/executions/{result.executionId}/history")
    assert run["traceId"] == TRACE and run["traceUrl"] == VIEWER.replace("{traceId}", TRACE)

    await studio.sign_in()
    await studio.page.goto(f"{studio.url}#/runs/{result.executionId}")
    link = studio.page.get_by_role("link", name=TRACE)
    await expect(link).to_have_attribute("href", f"http://localhost:16686/trace/{TRACE}")
