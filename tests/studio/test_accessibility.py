"""axe-core on every Studio page, in the states a user reaches them: sign-in, the tools list, a
builder with a block open and a test result, the trash, servers and a server, executions, the
runs list, a run page with a block and the fork form open, live debug on a contact. Any
critical or serious violation fails, `label-content-name-mismatch` included (an experimental
rule, so turned on by name: it is what keeps accessible names containing the visible text,
which voice control and tests that select by text rely on).

axe-core comes from the pinned axe-playwright-python package, injected through Playwright (so
the page's CSP, which allows no inline script, does not apply to it)."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import expect

from tests.studio.support import Studio
from tests.studio.test_live import publish
from tests.studio.test_runs_links import caught_up, failing, greeting

OPTIONS = {"resultTypes": ["violations"], "rules": {"label-content-name-mismatch": {"enabled": True}}}
BLOCKING = {"critical", "serious"}
# Moderate in axe, but a skipped heading level breaks the outline a screen reader navigates by.
ALSO = {"heading-order"}


class Audit:
    """Runs axe on the page as it is and keeps what it found, by the state's name."""

    def __init__(self, page: Any) -> None:
        from axe_playwright_python.async_playwright import Axe

        self.axe = Axe()
        self.page = page
        self.found: dict[str, list[str]] = {}
        self.rules_run = 0

    async def check(self, state: str) -> None:
        results = await self.axe.run(self.page, options=OPTIONS)
        self.rules_run += 1
        self.found[state] = [
            f"{v['id']} ({v['impact']}): {n['target']}: {n.get('failureSummary', '')}"
            for v in results.response["violations"] if v["impact"] in BLOCKING or v["id"] in ALSO
            for n in v["nodes"]]


async def test_no_studio_page_has_a_serious_accessibility_violation(history_studio: Studio) -> None:
    studio = history_studio
    page = studio.page
    audit = Audit(page)
    pt = await publish(studio, "t-greet", greeting(), "Greeter")
    broken = await publish(studio, "t-broken", failing(), "Broken")
    await studio.harness.run(pt, contact="5511900000001", toolId="t-greet", variables={"who": "Ana"})
    failed = await studio.harness.run(broken, contact="5511900000001", toolId="t-broken")
    await studio.ok("POST", "/integration-servers", 201, json={"name": "Shop", "baseUrl": "https://shop.example"})
    await caught_up(studio)

    await page.goto(studio.url)
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await audit.check("sign-in")
    await studio.sign_in()
    await expect(page.get_by_role("table", name="Custom tools")).to_contain_text("Greeter")
    await audit.check("tools")

    await page.get_by_role("link", name="Greeter").click()
    flow = page.get_by_role("group", name="Flow canvas")
    await flow.get_by_role("button", name=re.compile(r"block s ")).click()
    await expect(page.get_by_role("region", name="Block s")).to_be_visible()
    await page.get_by_label("Inputs (JSON)").fill('{"who": "Ana"}')
    await page.get_by_role("button", name="Run flow").click()
    await expect(page.get_by_role("list", name="Test trace")).to_be_visible()
    ran = page.get_by_role("group", name="Test run on the flow")
    await expect(ran.locator("[data-block]")).to_have_count(2)
    await audit.check("builder with a block open and a test result")

    await page.get_by_role("link", name="Trash").click()
    await expect(page.get_by_role("heading", name="Trash")).to_be_visible()
    await audit.check("trash")
    await page.get_by_role("link", name="Servers").click()
    await expect(page.get_by_role("table", name="Integration servers")).to_contain_text("Shop")
    await audit.check("servers")
    await page.get_by_role("link", name="Shop").click()
    await expect(page.get_by_role("heading", name="Shop")).to_be_visible()
    await audit.check("a server")
    await page.get_by_role("link", name="Executions").click()
    await expect(page.get_by_role("heading", name="Executions")).to_be_visible()
    await audit.check("executions")

    await page.get_by_role("link", name="Runs").click()
    await expect(page.get_by_role("table", name="Runs, newest first")).to_contain_text(failed.executionId)
    await audit.check("runs")
    await page.get_by_role("link", name=failed.executionId).click()
    drawing = page.get_by_role("group", name="The definition as it ran")
    await drawing.get_by_role("button", name=re.compile(r"block s ")).click()
    block = page.get_by_role("region", name="Block s")
    await block.get_by_text("Run from here").click()
    await expect(block.get_by_role("button", name="Run from s")).to_be_visible()
    await audit.check("a run with a block and the fork form open")

    await page.get_by_role("link", name="Live debug").click()
    await page.get_by_label("Contact id").fill("5511900000001")
    await page.get_by_role("button", name="Open").click()
    await expect(page.get_by_label("Debug on for this contact")).to_be_visible()
    await audit.check("live debug on a contact")

    assert audit.rules_run == 10
    bad = [f"{state}: {v}" for state, found in audit.found.items() for v in found]
    assert bad == [], "\n".join(bad)
