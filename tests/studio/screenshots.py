"""The Studio's screenshots in docs/img, taken from the running Studio (real API, Valkey, worker
and Chromium, as the browser tests run it). Not part of the test run (the name does not start
with ``test_``): ``make screenshots`` runs this file alone and overwrites docs/img/studio-*.png.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Page, expect

from tests.api.support import Upstream
from tests.studio.support import Studio
from tests.studio.upstreams import SECRET, answering
from tests.support.http import LoopbackServer

__all__ = ["answering"]  # the fixture

IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


def greeter(base: str) -> dict[str, Any]:
    """The four-block sample: httpCall → executeScript (a condition) → two returns; no positions,
    so the builder's Layout places it."""
    return {"onboardingBlockId": "fetch", "inputs": [{"name": "who", "type": "string"}], "blocks": {
        "fetch": {"type": "httpCall", "id": "fetch", "title": "Ping", "method": "GET",
                  "url": f"{base}/ping?who={{{{who}}}}", "responseBodyVariable": "resp",
                  "defaultOutput": {"type": "block", "blockId": "greet"}},
        "greet": {"type": "executeScript", "id": "greet", "title": "Greet",
                  "source": "// the upstream echoed the query\nreturn 'hello ' + input.who;",
                  "inputVariables": [{"name": "who", "value": "{{resp.query.who}}"}],
                  "outputVariable": "greeting",
                  "outputConditions": [{
                      "id": "greeted", "logic": "and", "target": {"type": "block", "blockId": "answer"},
                      "rules": [{"variable": "greeting", "operator": "startsWith", "value": "hello"}]}],
                  "defaultOutput": {"type": "block", "blockId": "nobody"}},
        "answer": {"type": "return", "id": "answer", "value": "{{greeting}}"},
        "nobody": {"type": "return", "id": "nobody", "value": "nobody"}}}


async def shot(page: Page, name: str, *, full: bool = False) -> None:
    await page.screenshot(path=str(IMG / f"studio-{name}.png"), full_page=full)


async def to_top(page: Page, selector: str) -> None:
    await page.locator(selector).evaluate(
        "e => window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - 12)")


async def open_laid_out(studio: Studio, tool_id: str) -> Page:
    page = studio.page
    await page.goto(f"{studio.url}#/tools/{tool_id}")
    await page.get_by_role("button", name="Layout").click()
    await page.get_by_role("button", name="Save draft").click()
    await expect(page.get_by_role("status").filter(has_text="Draft saved.")).to_be_visible()
    return page


async def test_screenshot_the_builder_with_the_sample_tool_and_a_run(
        studio: Studio, upstream: Upstream) -> None:
    await studio.ok("POST", "/tools", 201, json={"id": "t-greeter", "name": "Greeter",
                                                 "description": "Greets whoever the upstream names",
                                                 "definition": greeter(upstream.url)})
    await studio.sign_in()
    page = await open_laid_out(studio, "t-greeter")
    await page.get_by_role("group", name="Flow canvas").locator('[data-block="greet"]').click()
    await to_top(page, ".workbench")
    await shot(page, "builder")
    await page.get_by_label("Input who", exact=True).fill("Ana")
    await page.get_by_role("button", name="Run flow").click()
    await expect(page.locator("output")).to_have_text('"hello Ana"', timeout=60_000)
    await to_top(page, ".test-out")
    await shot(page, "builder-run")


async def test_screenshot_variable_completion(studio: Studio) -> None:
    await studio.ok("POST", "/tools", 201, json={"id": "t-greeter", "name": "Greeter",
                                                 "definition": greeter("https://api.example.com")})
    await studio.sign_in()
    page = await open_laid_out(studio, "t-greeter")
    await page.get_by_role("group", name="Flow canvas").locator('[data-block="answer"]').click()
    value = page.get_by_role("region", name="Block answer").locator("[name=value]")
    await value.fill("Answer: ")
    await value.press_sequentially("{{")
    await expect(page.get_by_role("listbox", name="Variables for value")).to_be_visible()
    await to_top(page, ".workbench")
    await shot(page, "builder-completion")


async def test_screenshot_problems_as_badges(studio: Studio) -> None:
    broken = greeter("https://api.example.com")
    broken["blocks"]["greet"]["defaultOutput"] = {"type": "block", "blockId": "ghost"}
    del broken["blocks"]["fetch"]["url"]
    broken["blocks"]["lost"] = {"type": "return", "id": "lost", "value": "{{nobody_writes_this}}"}
    await studio.ok("POST", "/tools", 201, json={"id": "t-broken", "name": "Broken", "definition": broken})
    await studio.sign_in()
    page = await open_laid_out(studio, "t-broken")
    await page.get_by_role("group", name="Flow canvas").locator('[data-block="fetch"]').click()
    await expect(page.get_by_role("region", name="Block fetch").locator("[name=url]")).to_have_attribute(
        "aria-invalid", "true")
    await to_top(page, ".workbench")
    await shot(page, "builder-problems")


async def test_screenshot_the_viewer_and_the_tools_list(studio: Studio, upstream: Upstream) -> None:
    await studio.ok("POST", "/tools", 201, json={"id": "t-greeter", "name": "Greeter",
                                                 "definition": greeter(upstream.url)})
    await studio.ok("POST", "/tools", 201, json={"id": "t-xss", "name": "<img src=x onerror=alert(1)>"})
    await studio.sign_in()
    await open_laid_out(studio, "t-greeter")
    await studio.ok("POST", "/tools/t-greeter/publish")
    await studio.page.get_by_role("button", name="Sign out").click()
    await studio.sign_in(studio.viewer_key)
    page = studio.page
    await shot(page, "tools")
    await page.get_by_role("link", name="Greeter").click()
    answer = page.get_by_role("group", name="Flow canvas").locator('[data-block="answer"]')
    await expect(answer).to_be_visible()
    await shot(page, "viewer")


async def test_screenshot_the_trash_confirmation(studio: Studio) -> None:
    callee = {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r", "value": "hi"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-callee", "name": "Callee", "definition": callee})
    published = await studio.ok("POST", "/tools/t-callee/publish")
    caller = {"onboardingBlockId": "c", "blocks": {
        "c": {"type": "callTool", "id": "c", "toolId": "t-callee",
              "publishedToolId": published["publishedToolId"],
              "outputVariable": "x", "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{x}}"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-caller", "name": "Caller", "definition": caller})
    await studio.ok("POST", "/tools/t-caller/publish")
    await studio.sign_in()
    page = studio.page
    await page.get_by_role("link", name="Callee").click()
    await page.get_by_role("button", name="Move to trash").click()
    await expect(page.get_by_role("dialog").get_by_role("list", name="Callers")).to_be_visible()
    await shot(page, "trash-confirm")
    await page.get_by_role("dialog").get_by_role("button", name="Move to trash").click()
    await page.get_by_role("button", name="Delete Callee permanently").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete permanently").click()
    await expect(page.get_by_role("alert").get_by_role("list", name="Callers")).to_be_visible()
    await shot(page, "trash-409")


async def test_screenshot_an_endpoint_test(studio: Studio, answering: LoopbackServer) -> None:
    await studio.ok("POST", "/integration-servers", 201, json={
        "id": "srv-h", "name": "Shop", "baseUrl": answering.base,
        "headers": [{"name": "Authorization", "value": SECRET, "secret": True}]})
    await studio.ok("POST", "/integration-servers/srv-h/endpoints", 201, json={
        "id": "ep-o", "name": "listOrders", "path": "/orders", "method": "GET",
        "params": [{"name": "status", "in": "query", "description": "open or closed"}]})
    await studio.sign_in()
    page = studio.page
    await page.goto(f"{studio.url}#/servers/srv-h")
    await page.get_by_role("button", name="Test listOrders").click()
    test = page.get_by_role("region", name="Test of listOrders")
    await test.get_by_label("status (query)").fill("open")
    await test.get_by_role("button", name="Run test").click()
    await expect(test.get_by_role("table", name="Response headers")).to_be_visible()
    await shot(page, "server-test", full=True)


async def test_screenshot_live_debug_and_an_executions_log(studio: Studio) -> None:
    from tests.studio.test_live import HTML, calling, publish, returning

    page = studio.page
    callee = await publish(studio, "t-inner", returning(HTML), "Inner")
    outer = await publish(studio, "t-outer", calling(callee, "t-inner"), "Outer")
    await studio.sign_in()
    await page.get_by_role("link", name="Live debug").click()
    await page.get_by_label("Contact id").fill("5511988887777")
    await page.get_by_role("button", name="Open").click()
    await page.get_by_label("Debug on for this contact").check()
    await expect(page.locator(".badge")).to_have_text("live")
    result = await studio.harness.run(outer, contact="5511988887777")
    assert result.ok and result.executionId
    events = page.get_by_role("list", name="Debug events of 5511988887777")
    count = await studio.harness.client.xlen(studio.harness.keys.debug("5511988887777"))
    await expect(events.get_by_role("listitem")).to_have_count(count)
    await shot(page, "live-debug", full=True)

    await page.goto(f"{studio.url}#/executions/{result.executionId}")
    await expect(page.get_by_text("every transition matches the record.")).to_be_visible()
    await shot(page, "execution", full=True)
