"""Links to runs and the runs' list: the Runs page's filters and "Load more", a tool's recent
runs, a live debug event's link, and the builder's test trace drawn on a canvas. A real worker,
a real run history (SQLite), Debian's Chromium."""

from __future__ import annotations

import re
from typing import Any

from tests.studio.support import Studio
from tests.studio.test_live import publish


def greeting() -> dict[str, Any]:
    return {"onboardingBlockId": "s", "blocks": {
        "s": {"type": "executeScript", "id": "s", "source": "return 'hi ' + who",
              "outputVariable": "g", "inputVariables": [{"name": "who", "value": "{{who}}"}],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{g}}"}}}


def failing() -> dict[str, Any]:
    return {"onboardingBlockId": "s", "blocks": {
        "s": {"type": "executeScript", "id": "s", "source": "throw new Error('boom')",
              "outputVariable": "g", "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{g}}"}}}


async def caught_up(studio: Studio) -> None:
    history = studio.harness.workers[0].history
    assert history is not None
    await history.wait_caught_up()


async def test_the_runs_page_filters_by_tool_status_and_error_code_and_loads_more_newest_first(
        history_studio: Studio) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    greet = await publish(studio, "t-greet", greeting(), "Greeter")
    broken = await publish(studio, "t-broken", failing(), "Broken")
    ids = [(await studio.harness.run(greet, toolId="t-greet", variables={"who": str(i)})).executionId
           for i in range(21)]
    bad = await studio.harness.run(broken, toolId="t-broken")
    assert not bad.ok and bad.error is not None
    await caught_up(studio)

    await studio.sign_in()
    await page.get_by_role("link", name="Runs").click()
    await page.get_by_label("Tool").select_option(label="Greeter")
    await page.get_by_role("button", name="Find runs").click()
    runs = page.get_by_role("table", name="Runs, newest first")
    await expect(runs.get_by_role("row")).to_have_count(21)  # a header and a page of 20
    await expect(runs.get_by_role("row").nth(1)).to_contain_text(str(ids[-1]))
    await page.get_by_role("button", name="Load more").click()
    await expect(runs.get_by_role("row")).to_have_count(22)
    await expect(runs.get_by_role("row").last).to_contain_text(str(ids[0]))
    await expect(page.get_by_role("button", name="Load more")).to_have_count(0)
    await expect(runs).not_to_contain_text("Broken")

    await page.get_by_label("Tool").select_option(label="any")
    await page.get_by_label("Status").select_option("error")
    await page.get_by_label("Error code").fill(bad.error.code)
    await page.get_by_role("button", name="Find runs").click()
    await expect(runs.get_by_role("row")).to_have_count(2)
    await expect(runs.get_by_role("link", name=str(bad.executionId))).to_be_visible()
    await page.get_by_label("Error code").fill("no_such_code")
    await page.get_by_role("button", name="Find runs").click()
    await expect(page.get_by_text("No run matches.")).to_be_visible()


async def test_a_tools_page_lists_its_recent_runs_and_each_opens_its_run_page(
        history_studio: Studio) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    greet = await publish(studio, "t-greet", greeting(), "Greeter")
    other = await publish(studio, "t-other", greeting(), "Other")
    first = await studio.harness.run(greet, toolId="t-greet", variables={"who": "Ana"})
    second = await studio.harness.run(greet, toolId="t-greet", variables={"who": "Bia"})
    elsewhere = await studio.harness.run(other, toolId="t-other", variables={"who": "Cid"})
    await caught_up(studio)

    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-greet")
    recent = page.get_by_role("table", name="Recent runs of this tool")
    await expect(recent.get_by_role("row")).to_have_count(3)
    await expect(recent.get_by_role("row").nth(1)).to_contain_text(str(second.executionId))
    await expect(recent).not_to_contain_text(str(elsewhere.executionId))
    await recent.get_by_role("link", name=str(first.executionId)).click()
    await expect(page.get_by_role("heading", name=f"Run {first.executionId}")).to_be_visible()
    drawing = page.get_by_role("group", name="The definition as it ran")
    await expect(drawing.locator('.drawflow-node.status-ok[data-block="s"]')).to_have_count(1)


async def test_a_live_debug_event_links_to_its_run_page(history_studio: Studio) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    greet = await publish(studio, "t-greet", greeting(), "Greeter")
    await studio.ok("PUT", "/debug/5511933330000")
    await studio.sign_in()
    await page.get_by_role("link", name="Live debug").click()
    await page.get_by_label("Contact id").fill("5511933330000")
    await page.get_by_role("button", name="Open").click()
    await expect(page.locator(".badge")).to_have_text("live")
    result = await studio.harness.run(greet, toolId="t-greet", contact="5511933330000",
                                      variables={"who": "Ana"})
    await caught_up(studio)
    events = page.get_by_role("list", name="Debug events of 5511933330000")
    link = events.get_by_role("link", name=f"run {result.executionId}").first
    await link.click()
    await expect(page.get_by_role("heading", name=f"Run {result.executionId}")).to_be_visible()


async def test_the_test_panel_draws_the_trace_on_the_canvas_and_names_the_inputs_given(
        history_studio: Studio) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    await studio.ok("POST", "/tools", 201, json={"id": "t-greet", "name": "Greeter",
                                                 "definition": greeting()})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-greet")
    await page.get_by_label("Inputs (JSON)").fill('{"who": "Ana"}')
    await page.get_by_role("button", name="Run flow").click()
    drawing = page.get_by_role("group", name="Test run on the flow")
    await expect(drawing.locator('.drawflow-node.status-ok[data-block="s"]')).to_have_count(1)
    await expect(drawing.locator('.drawflow-node.status-ok[data-block="r"]')).to_have_count(1)
    await expect(drawing.locator('svg.connection.on-path[data-from="s"][data-to="r"]')).to_have_count(1)
    node = drawing.get_by_role("button", name=re.compile(r"block s \(executeScript\), ok, \d+ ms$"))
    await expect(node).to_be_visible()
    await expect(page.locator(".test-head")).to_have_text('Test run from s · inputs {"who":"Ana"}')
    await expect(page.get_by_role("list", name="Test trace")).not_to_contain_text("inputs{}")
    await expect(page.locator("output")).to_have_text('"hi Ana"')
    # The test run is kept in the run history: its page draws the same run.
    await page.get_by_role("link", name="Open its run page").click()
    await expect(page.get_by_role("heading", name=re.compile(r"^Run 0-test"))).to_be_visible()
    ran = page.get_by_role("group", name="The definition as it ran")
    await expect(ran.locator('.drawflow-node.status-ok[data-block="r"]')).to_have_count(1)
