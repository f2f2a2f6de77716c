"""The run page (pages/run.js): a finished run found by contact, its path on the definition
as it ran, a node's data, the callTool's child opened in place, and "Run from here"."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.studio.support import Studio, running_studio
from tests.studio.test_live import calling, publish


@pytest.fixture
async def history_studio(redis_url: str, prefix: str, browser: Any,
                         tmp_path: Path) -> AsyncIterator[Studio]:
    url = f"sqlite:///{tmp_path / 'history.db'}"
    async with running_studio(redis_url, prefix, browser, history_url=url,
                              history_auto_migrate=True) as s:
        yield s


async def test_a_run_found_by_contact_shows_its_path_its_child_and_forks_from_a_node(
        history_studio: Studio) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    inner = await publish(studio, "t-inner", {"onboardingBlockId": "s", "blocks": {
        "s": {"type": "executeScript", "id": "s", "source": "return 'hi ' + who",
              "outputVariable": "g", "inputVariables": [{"name": "who", "value": "{{who}}"}],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{g}}"}}})
    outer = await publish(studio, "t-outer", calling(inner, "t-inner"))
    result = await studio.harness.run(outer, contact="5511955554444", variables={"who": "Ana"})
    assert result.ok and result.result == "got hi Ana"
    history = studio.harness.workers[0].history
    assert history is not None
    await history.wait_caught_up()

    await studio.sign_in()
    await page.goto(f"{studio.url}#/runs")
    await page.get_by_label("Contact id").fill("5511955554444")
    await page.get_by_role("button", name="Find runs").click()
    await page.get_by_role("link", name=result.executionId).click()
    await expect(page.get_by_role("heading", name=f"Run {result.executionId}")).to_be_visible()
    drawing = page.get_by_role("group", name="The definition as it ran")
    await expect(drawing.locator('g.ran-ok[data-block="c"]')).to_have_count(1)
    await expect(drawing.locator("g.edge.taken")).not_to_have_count(0)

    await drawing.locator('g[data-block="c"]').click()
    await page.get_by_role("button", name="Open child run").click()
    child = page.locator(".child-run")
    await expect(child.locator('g.ran-ok[data-block="s"]')).to_have_count(1)
    await child.locator('g[data-block="s"]').click()
    await expect(child.get_by_role("region", name="Block s")).to_contain_text("hi Ana")

    detail = page.get_by_role("region", name="Block c").first
    await detail.get_by_label("Variables to change (JSON)").last.fill('{"who": "Bia"}')
    await detail.get_by_role("button", name="Run from here").last.click()
    await expect(detail).to_contain_text("got hi Bia")
    await expect(detail.get_by_role("link").last).to_have_text(re.compile(r"^\d+-"))
    await studio.shot("run-page")
