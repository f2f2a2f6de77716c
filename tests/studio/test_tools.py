"""Tools in the Studio: the list, the builder and its drawing, validation, publish, the test
panel, the trash; all against the real API, a real Valkey and a real worker."""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.async_api import expect

from tests.api.support import Upstream
from tests.studio.support import Studio

XSS = "<img src=x onerror=alert(1)>"


def checked_fetch(url: str) -> dict[str, Any]:
    return {"onboardingBlockId": "fetch", "inputs": [{"name": "who", "type": "string"}], "blocks": {
        "fetch": {"type": "httpCall", "id": "fetch", "title": "Ping", "url": url + "/ping?who={{who}}",
                  "method": "GET", "responseStatusVariable": "st", "responseBodyVariable": "resp",
                  "onError": "continue",
                  "outputConditions": [{"id": "answered", "rules": [
                      {"variable": "st", "operator": "equals", "value": "200"}],
                      "target": {"type": "block", "blockId": "done"}}],
                  "defaultOutput": {"type": "block", "blockId": "sorry"}},
        "done": {"type": "return", "id": "done", "value": "hello {{who}}"},
        "sorry": {"type": "return", "id": "sorry", "value": "no answer"}}}


async def open_new_tool(studio: Studio) -> None:
    page = studio.page
    await studio.sign_in()
    await page.get_by_role("button", name="New tool").click()
    await page.get_by_role("dialog", name="New tool").get_by_label("Tool name").fill("New tool")
    await page.get_by_role("button", name="Create").click()
    await expect(page.get_by_role("heading", name="New tool", exact=True)).to_be_visible()


async def test_a_new_tool_is_built_drawn_checked_published_and_tested(
        studio: Studio, upstream: Upstream) -> None:
    page = studio.page
    await open_new_tool(studio)
    await page.get_by_label("Name", exact=True).fill("Greeter")
    await page.get_by_label("Description", exact=True).fill("Says hello")
    doc = page.get_by_label("Definition (JSON)")
    definition = checked_fetch(upstream.url)
    await doc.fill(json.dumps(definition, indent=2))
    drawing = page.get_by_role("group", name="Flow canvas")
    await expect(drawing.locator("[data-block]")).to_have_count(3)
    # The node's name holds what it shows, its title included (issue 32: names contain the text).
    await expect(drawing.locator('[data-block="fetch"]')).to_have_attribute(
        "aria-label", "start: block fetch (httpCall) Ping")
    edge = drawing.locator('.connection[data-from="fetch"][data-to="done"]')
    await expect(edge).to_contain_text("answered")
    await expect(page.get_by_role("list", name="Problems")).to_contain_text("No problems found.")

    # The drawing follows the document: a new block, and a target outside the tree as an exit.
    definition["blocks"]["sorry"] = {**definition["blocks"]["fetch"], "id": "sorry", "type": "httpCall",
                                     "outputConditions": [], "defaultOutput": {"type": "endAttendance"}}
    definition["blocks"]["late"] = {"type": "return", "id": "late", "value": "late"}
    await doc.fill(json.dumps(definition, indent=2))
    await expect(drawing.locator("[data-block]")).to_have_count(4)
    await expect(drawing.locator('[data-exit="endAttendance"]')).to_have_count(1)

    # A validation problem is shown with the path it names, and the block is marked.
    del definition["blocks"]["sorry"]["url"]
    await doc.fill(json.dumps(definition, indent=2))
    problems = page.get_by_role("list", name="Problems")
    await expect(problems).to_contain_text("definition.blocks.sorry.url")
    await expect(drawing.locator('[data-block="sorry"]')).to_have_class(re.compile(r"\bproblem\b"))
    await studio.shot("builder-problem")
    definition = checked_fetch(upstream.url)
    await doc.fill(json.dumps(definition, indent=2))
    await expect(problems).to_contain_text("No problems found.")

    # The agents configuration appears only with enabledForAI on, and edits the document.
    await expect(page.get_by_role("group", name="Agents configuration")).to_have_count(0)
    await page.get_by_label("Enabled for AI agents").check()
    await page.get_by_label("Slug").fill("greeter")
    await page.get_by_label("Description of input who").fill("who to greet")
    saved_doc = json.loads(await doc.input_value())
    assert saved_doc["enabledForAI"] is True and saved_doc["slug"] == "greeter"
    assert saved_doc["inputs"][0]["description"] == "who to greet"

    await page.get_by_role("button", name="Publish").click()
    await expect(page.get_by_role("status").filter(has_text="Published as")).to_be_visible()
    (tool,) = [t for t in await studio.ok("GET", "/tools") if t["name"] == "Greeter"]
    assert tool["status"] == "published" and tool["enabledForAI"] and tool["slug"] == "greeter"

    # The test panel runs the draft and shows the trace as a timeline.
    await page.get_by_label("Inputs (JSON)").fill('{"who": "Ana"}')
    await page.get_by_role("button", name="Run flow").click()
    trace = page.get_by_role("list", name="Test trace")
    await expect(trace).to_contain_text("fetch [httpCall]")
    await expect(trace).to_contain_text(f"GET {upstream.url}/ping?who=Ana → 200")
    await expect(trace).to_contain_text("answered")
    await expect(page.locator("output")).to_have_text('"hello Ana"')
    await page.get_by_label("Block to test").select_option("fetch")
    await page.get_by_role("button", name="Test block").click()
    await expect(trace).to_contain_text("fetch [httpCall]")
    await studio.shot("builder")


async def test_publish_lists_every_refusal_reason(studio: Studio) -> None:
    page = studio.page
    await open_new_tool(studio)
    broken = {"onboardingBlockId": "call", "blocks": {
        "call": {"type": "callTool", "id": "call", "toolId": "t-ghost", "publishedToolId": "pt-ghost",
                 "outputVariable": "x", "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "callAI", "id": "r", "llmCredentialId": "cred-ghost", "capability": "generateText",
              "model": "m", "userPrompt": "hi", "outputVariable": "y",
              "defaultOutput": {"type": "block", "blockId": "end"}},
        "end": {"type": "return", "id": "end", "value": "x"}}}
    await page.get_by_label("Definition (JSON)").fill(json.dumps(broken))
    await page.get_by_role("button", name="Publish").click()
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("cannot be published")
    refusals = alert.get_by_role("list", name="Problems").get_by_role("listitem")
    await expect(refusals).to_have_count(2)
    await expect(alert).to_contain_text("definition.blocks.call")
    await expect(alert).to_contain_text("definition.blocks.r")


async def test_the_list_shows_metrics_and_searches_and_escapes_names(studio: Studio) -> None:
    page = studio.page
    await studio.ok("POST", "/tools", 201, json={"name": XSS, "description": "<b>bold</b>"})
    await studio.ok("POST", "/tools", 201, json={"name": "Weather"})
    dialogs: list[str] = []
    page.on("dialog", lambda d: dialogs.append(d.message))
    await studio.sign_in()
    table = page.get_by_role("table", name="Custom tools")
    for header in ("Name", "Status", "Runs (7d)", "Avg ms", "Success rate", "AI", "Last change"):
        await expect(table.get_by_role("columnheader", name=header)).to_be_visible()
    await expect(table.get_by_role("link", name=XSS)).to_be_visible()
    assert await page.locator("img").count() == 0
    await page.get_by_label("Search tools").fill("weath")
    await expect(table.get_by_role("link", name="Weather")).to_be_visible()
    await expect(table.get_by_role("link", name=XSS)).to_be_hidden()
    await page.get_by_label("Search tools").fill("")
    await studio.shot("tools")
    await table.get_by_role("link", name=XSS).click()
    await expect(page.get_by_role("heading", name=XSS)).to_be_visible()
    assert await page.locator("img").count() == 0
    assert dialogs == []


async def test_trash_restores_and_shows_the_409_naming_the_callers(studio: Studio) -> None:
    page = studio.page
    callee = {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r", "value": "hi"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-callee", "name": "Callee", "definition": callee})
    published = await studio.ok("POST", "/tools/t-callee/publish")
    caller = {"onboardingBlockId": "c", "blocks": {
        "c": {"type": "callTool", "id": "c", "toolId": "t-callee",
              "publishedToolId": published["publishedToolId"], "outputVariable": "x",
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{x}}"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-caller", "name": "Caller", "definition": caller})
    await studio.ok("POST", "/tools/t-caller/publish")

    await studio.sign_in()
    await page.get_by_role("link", name="Callee").click()
    await page.get_by_role("button", name="Move to trash").click()
    await page.get_by_role("dialog").get_by_role("button", name="Move to trash").click()
    await expect(page.get_by_role("heading", name="Trash")).to_be_visible()
    await page.get_by_role("button", name="Delete Callee permanently").click()
    confirm = page.get_by_role("dialog", name="Delete Callee permanently?")
    await expect(confirm).to_contain_text("cannot be undone")
    await confirm.get_by_role("button", name="Cancel").click()
    await expect(confirm).to_have_count(0)
    await expect(page.get_by_role("alert")).to_have_count(0)  # nothing was asked of the server
    await page.get_by_role("button", name="Delete Callee permanently").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete permanently").click()
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("409")
    await expect(alert.get_by_role("list", name="Callers")).to_contain_text("Caller (t-caller)")
    await studio.shot("trash-409")
    await page.get_by_role("button", name="Restore Callee").click()
    await expect(page.get_by_role("heading", name="Callee")).to_be_visible()
    await page.get_by_role("link", name="Tools").click()
    listed = page.get_by_role("table", name="Custom tools").get_by_role("link", name="Callee")
    await expect(listed).to_be_visible()


async def test_a_tool_nobody_calls_is_deleted_permanently_after_the_confirmation(
        studio: Studio) -> None:
    page = studio.page
    lonely = {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r", "value": "hi"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-lonely", "name": "Lonely", "definition": lonely})
    await studio.ok("POST", "/tools/t-lonely/publish")

    await studio.sign_in()
    await page.get_by_role("link", name="Lonely").click()
    await page.get_by_role("button", name="Move to trash").click()
    await page.get_by_role("dialog").get_by_role("button", name="Move to trash").click()
    await expect(page.get_by_role("heading", name="Trash")).to_be_visible()
    await page.get_by_role("button", name="Delete Lonely permanently").click()
    await page.get_by_role("dialog", name="Delete Lonely permanently?").get_by_role(
        "button", name="Delete permanently").click()
    await expect(page.get_by_role("status")).to_contain_text("Deleted Lonely for good")
    await expect(page.get_by_role("table", name="Custom tools").get_by_role(
        "link", name="Lonely")).to_have_count(0)
    response = await studio.http.get("/tools/t-lonely")
    assert response.status_code == 404, response.text
    await page.goto(f"{studio.url}#/trash")
    await expect(page.get_by_role("heading", name="Trash")).to_be_visible()
    await expect(page.get_by_role("button", name="Delete Lonely permanently")).to_have_count(0)
