"""What the Studio shows of running tools: live debug from a real worker, executions in flight
(with cancel), an execution's replayed log, and the seven-day chart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from playwright.async_api import expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from chatflow.handlers.interfaces.client import publish as publish_command
from chatflow.handlers.interfaces.client import wait_results
from tests.studio.support import Studio
from tests.support.http import serve_asgi

HTML = "<img src=x onerror=alert(1)><b>bold</b>"


def returning(value: str) -> dict[str, Any]:
    return {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r", "value": value}}}


def calling(published_tool_id: str, callee: str) -> dict[str, Any]:
    return {"onboardingBlockId": "c", "blocks": {
        "c": {"type": "callTool", "id": "c", "toolId": callee, "publishedToolId": published_tool_id,
              "outputVariable": "x", "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "got {{x}}"}}}


async def publish(studio: Studio, tool_id: str, definition: dict[str, Any], name: str = "") -> str:
    await studio.ok("POST", "/tools", 201, json={"id": tool_id, "name": name or tool_id,
                                                 "definition": definition})
    published = await studio.ok("POST", f"/tools/{tool_id}/publish")
    return str(published["publishedToolId"])


async def test_live_debug_shows_a_real_runs_events_and_resumes_without_duplicates(studio: Studio) -> None:
    page = studio.page
    callee = await publish(studio, "t-inner", returning(HTML), "Inner")
    outer = await publish(studio, "t-outer", calling(callee, "t-inner"), "Outer")
    dialogs: list[str] = []
    page.on("dialog", lambda d: dialogs.append(d.message))
    await studio.sign_in()
    await page.get_by_role("link", name="Live debug").click()
    await page.get_by_label("Contact id").fill("5511988887777")
    await page.get_by_role("button", name="Open").click()
    await page.get_by_label("Debug on for this contact").check()
    flag = studio.harness.keys.debug_flag("5511988887777")
    await expect(page.get_by_role("status")).to_have_text("Debug on for 5511988887777")
    assert await studio.harness.client.exists(flag)
    await expect(page.locator(".badge")).to_have_text("live")

    result = await studio.harness.run(outer, contact="5511988887777")
    assert result.ok
    events = page.get_by_role("list", name="Debug events of 5511988887777")
    stream = studio.harness.keys.debug("5511988887777")
    first_batch = await studio.harness.client.xlen(stream)
    assert first_batch > 0
    await expect(events.get_by_role("listitem")).to_have_count(first_batch)
    await expect(events.locator("li.depth-1")).not_to_have_count(0)  # the nested tool, indented
    await expect(events).to_contain_text("<img src=x onerror=alert(1)>")
    await studio.shot("live-debug")

    # Paused, the page misses nothing: resuming sends Last-Event-ID and gets the rest once.
    await page.get_by_role("button", name="Pause").click()
    await expect(page.locator(".badge")).to_have_text("paused")
    assert (await studio.harness.run(outer, contact="5511988887777")).ok
    await page.get_by_role("button", name="Resume").click()
    total = await studio.harness.client.xlen(stream)
    assert total > first_batch
    await expect(events.get_by_role("listitem")).to_have_count(total)
    ids = await events.get_by_role("listitem").evaluate_all("els => els.map(e => e.dataset.id)")
    stored = [i.decode() for i, _ in await studio.harness.client.xrange(stream)]
    assert ids == stored
    assert await page.locator("img").count() == 0 and dialogs == []

    await page.get_by_label("Debug on for this contact").uncheck()
    await expect(page.get_by_role("status")).to_have_text("Debug off for 5511988887777")
    assert not await studio.harness.client.exists(flag)


async def test_an_executions_page_shows_its_replayed_log_with_the_nested_tool_indented(
        studio: Studio) -> None:
    page = studio.page
    callee = await publish(studio, "t-inner", returning("inner"))
    outer = await publish(studio, "t-outer", calling(callee, "t-inner"))
    result = await studio.harness.run(outer)
    assert result.ok and result.executionId
    await studio.sign_in()
    await page.goto(f"{studio.url}#/executions/{result.executionId}")
    log = page.get_by_role("list", name="Event log")
    await expect(log).to_contain_text("c [callTool]")
    await expect(log.locator("li.depth-1")).to_contain_text(["started"])
    await expect(page.get_by_text("every transition matches the record.")).to_be_visible()
    await studio.shot("execution")
    async with studio.as_other_workspace() as other:
        missing = await other.get(f"/executions/{result.executionId}/events")
        assert missing.status_code == 404


@asynccontextmanager
async def stalled_upstream() -> AsyncIterator[tuple[str, asyncio.Event, asyncio.Event]]:
    """An API that holds every request until released; ``arrived`` is set by the first one."""
    arrived, release = asyncio.Event(), asyncio.Event()

    async def hold(_request: Request) -> JSONResponse:
        arrived.set()
        await release.wait()
        return JSONResponse({"late": True})

    async with serve_asgi(Starlette(routes=[Route("/slow", hold)])) as url:
        try:
            yield url, arrived, release
        finally:
            release.set()


async def test_an_execution_in_flight_is_listed_and_cancelled(studio: Studio) -> None:
    paths = (await studio.ok("GET", "/openapi.json"))["paths"]
    if "/api/executions/{executionId}/cancel" not in paths:
        pytest.skip("the API has no POST /api/executions/{executionId}/cancel yet (built by ops)")
    page = studio.page
    async with stalled_upstream() as (url, arrived, _release):
        slow = {"onboardingBlockId": "wait", "blocks": {
            "wait": {"type": "httpCall", "id": "wait", "url": url + "/slow", "method": "GET",
                     "timeoutMs": 20000, "defaultOutput": {"type": "block", "blockId": "r"}},
            "r": {"type": "return", "id": "r", "value": "done"}}}
        pt = await publish(studio, "t-slow", slow, "Slow")
        command = studio.harness.command(pt, toolId="t-slow")
        after = b"0-0"
        await publish_command(studio.harness.client, studio.harness.keys, command)
        await asyncio.wait_for(arrived.wait(), 20)
        (row,) = await studio.ok("GET", "/executions")
        assert row["block"] == "wait"
        async with studio.as_other_workspace() as other:
            assert (await other.get("/executions")).json() == []
        await studio.sign_in()
        await page.get_by_role("link", name="Executions").click()
        table = page.get_by_role("table", name="Executions in flight")
        await expect(table.get_by_role("cell", name="wait", exact=True)).to_be_visible()
        await expect(table.get_by_role("cell", name=f"Slow ({pt})")).to_be_visible()
        await studio.shot("executions")
        await page.get_by_role("button", name=f"Cancel {row['executionId']}").click()
        dialog = page.get_by_role("dialog", name=f"Cancel {row['executionId']}?")
        await dialog.get_by_label("Reason (the caller receives it)").fill("stuck upstream")
        await dialog.get_by_role("button", name="Cancel execution").click()
        await expect(page.get_by_text(f"Cancelled {row['executionId']}.")).to_be_visible()
        found = await wait_results(studio.harness.client, studio.harness.keys.results,
                                   {command.commandId}, after=after, timeout_s=20)
        ((result,),) = found.values()  # exactly one result: the cancellation
        assert not result.ok and result.error is not None
        assert result.error.code == "execution_cancelled"
        assert "stuck upstream" in result.error.message
        await expect(page.get_by_text("No executions in flight.")).to_be_visible()


async def test_a_tool_page_charts_its_seven_days_from_the_projection(studio: Studio) -> None:
    page = studio.page
    pt = await publish(studio, "t-chart", returning("ok"), "Charted")
    for _ in range(3):
        assert (await studio.harness.run(pt)).ok
    await studio.harness.workers[0].projection.wait_caught_up()
    days = (await studio.ok("GET", "/tools/t-chart/daily"))["days"]
    assert days[-1]["runs"] == 3 and len(days) == 7 and days[-1]["successRate"] == 1.0
    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-chart")
    chart = page.get_by_role("img", name="Runs per day (bars) and average duration (line), last seven days")
    await expect(chart).to_be_visible()  # the page is drawn: a click before could be lost
    table = page.get_by_role("table", name="Last seven days")

    # A page drawn again (the sign-in's own route finishing late) closes the details: open
    # them again, a few times at most, each time waiting on the table itself.
    for attempt in range(5):
        if not await table.is_visible():
            await page.get_by_text("The numbers").click()
        try:
            await expect(table.get_by_role("row").last).to_contain_text("3", timeout=3000)
            break
        except AssertionError:
            if attempt == 4:
                raise
