"""The visual builder: a tool built from nothing on the canvas and in the forms (no JSON typed),
positions kept across a reload, the JSON and the canvas in sync both ways, problems as badges,
undo, the trash confirmation naming a caller, and the keyboard-only path. Real API, Valkey,
worker and Chromium; selected by role, label and field name."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from playwright.async_api import Locator, Page, expect

from tests.api.support import Upstream
from tests.studio.support import Studio


def canvas(page: Page) -> Locator:
    return page.get_by_role("group", name="Flow canvas")


def node(page: Page, block: str) -> Locator:
    return canvas(page).locator(f'[data-block="{block}"]')


def edge(page: Page, source: str, target: str) -> Locator:
    return canvas(page).locator(f'.connection[data-from="{source}"][data-to="{target}"]')


def form(page: Page, block: str) -> Locator:
    return page.get_by_role("region", name=f"Block {block}")


async def new_tool(studio: Studio, name: str) -> None:
    page = studio.page
    await studio.sign_in()
    await page.get_by_role("button", name="New tool").click()
    await page.get_by_role("dialog", name="New tool").get_by_label("Tool name").fill(name)
    await page.get_by_role("button", name="Create").click()
    await expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()


async def definition(page: Page) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(await page.get_by_label("Definition (JSON)").input_value())
    return doc


async def test_a_four_block_tool_is_built_on_the_canvas_saved_published_and_run(
        studio: Studio, upstream: Upstream) -> None:
    page = studio.page
    await new_tool(studio, "Greeter")
    assert [t for t in await studio.ok("GET", "/tools") if t["name"] == "Greeter"] == []

    await page.get_by_label("New input name").fill("who")
    await page.get_by_label("New input name").press("Enter")

    await page.get_by_role("button", name="Add httpCall block").click()
    http = form(page, "httpCall1")
    await http.locator("[name=title]").fill("Ping")
    await http.locator("[name=url]").fill(f"{upstream.url}/ping?who=")
    await http.get_by_label("Insert variable into url").select_option("who")
    await http.locator("[name=method]").select_option("GET")
    await http.locator("[name=responseBodyVariable]").fill("resp")
    # No next block yet: the node says so (defaultOutput is required).
    await expect(node(page, "httpCall1")).to_have_attribute(
        "aria-label", "start: block httpCall1 (httpCall), 1 problem(s)")

    # Added while httpCall1 is selected: the script becomes its next block.
    await page.get_by_role("button", name="Add executeScript block").click()
    script = form(page, "executeScript1")
    await script.locator("[name=source]").fill("return 'hello ' + input.who;")
    await script.get_by_role("button", name="Add input variable").click()
    await script.get_by_label("Name of mapping 1").fill("who")
    await script.get_by_label("Name of mapping 1").press("Tab")
    await script.get_by_label("Value of who").fill("{{resp.query.who}}")
    await script.locator("[name=outputVariable]").fill("greeting")

    await page.get_by_role("button", name="Add return block").click()
    await form(page, "return1").locator("[name=value]").fill("{{greeting}}")
    await node(page, "executeScript1").click()
    await page.get_by_role("button", name="Add return block").click()  # not connected: the script has a next
    await form(page, "return2").locator("[name=value]").fill("nobody")

    await node(page, "executeScript1").click()
    script = form(page, "executeScript1")
    await script.get_by_role("button", name="Add condition").click()
    await script.locator("[name=variable]").fill("greeting")
    await script.locator("[name=operator]").select_option("startsWith")
    await script.locator("[name=value]").last.fill("hello")
    await script.locator("[name=value]").last.press("Tab")
    await script.get_by_label("Then go to").select_option(label="Block return1")
    await script.get_by_label("Next block *").select_option(label="Block return2")

    await expect(edge(page, "executeScript1", "return1")).to_have_attribute("data-label", "condition1")
    await expect(edge(page, "executeScript1", "return2")).to_have_attribute("data-label", "default")
    await expect(edge(page, "httpCall1", "executeScript1")).to_have_count(1)
    await expect(page.get_by_role("list", name="Problems")).to_contain_text("No problems found.")
    await studio.shot("builder-canvas")

    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status").filter(has_text="Draft saved.")).to_be_visible()
    await page.get_by_role("button", name="Publish").click()
    await expect(page.get_by_role("status").filter(has_text="Published as")).to_be_visible()
    (tool,) = [t for t in await studio.ok("GET", "/tools") if t["name"] == "Greeter"]
    assert tool["status"] == "published"

    await page.get_by_label("Inputs (JSON)").fill('{"who": "Ana"}')
    await page.get_by_role("button", name="Run flow").click()
    # A bound, not a timing: the run calls the upstream and V8 on a machine that may be busy.
    await expect(page.get_by_role("list", name="Test trace")).to_contain_text("condition1", timeout=60_000)
    await expect(page.locator("output")).to_have_text('"hello Ana"')
    await studio.shot("builder-run")

    # Reload: the positions kept in meta.positions put every node where it was.
    saved = (await studio.ok("GET", f"/tools/{tool['id']}"))["definition"]
    positions = saved["meta"]["positions"]
    assert set(positions) == {"httpCall1", "executeScript1", "return1", "return2"}
    await page.reload()
    await expect(node(page, "return2")).to_be_visible()
    for block, at in positions.items():
        style = await node(page, block).evaluate("e => [e.style.left, e.style.top]")
        assert style == [f"{at['x']}px", f"{at['y']}px"], block


async def test_a_json_edit_shows_on_the_canvas_and_a_canvas_edit_in_the_json(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Sync")
    doc = page.get_by_label("Definition (JSON)")
    await doc.fill(json.dumps({"onboardingBlockId": "a", "blocks": {
        "a": {"type": "executeScript", "id": "a", "source": "return 1", "outputVariable": "x",
              "defaultOutput": {"type": "endAttendance"}},
        "b": {"type": "return", "id": "b", "value": "{{x}}"}}}))
    await expect(node(page, "b")).to_be_visible()
    await expect(canvas(page).locator('[data-exit="endAttendance"]')).to_have_count(1)

    # Drag from a's output onto b: a's defaultOutput becomes b, in the JSON too.
    await node(page, "a").locator(".output_1").drag_to(node(page, "b"))
    await expect(edge(page, "a", "b")).to_have_count(1)
    assert (await definition(page))["blocks"]["a"]["defaultOutput"] == {"type": "block", "blockId": "b"}

    # Drag a node: its new position is written to meta.positions.
    before = await doc.input_value()
    box = await node(page, "b").bounding_box()
    assert box is not None
    await page.mouse.move(box["x"] + 40, box["y"] + 20)
    await page.mouse.down()
    await page.mouse.move(box["x"] + 40, box["y"] + 160, steps=5)
    await page.mouse.up()
    await expect(doc).not_to_have_value(before)
    doc_after = await definition(page)
    assert doc_after["meta"]["positions"]["b"]["y"] > doc_after["meta"]["positions"]["a"]["y"]


async def test_a_broken_target_shows_a_badge_on_its_node_and_the_field_is_marked(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Broken")
    await page.get_by_label("Definition (JSON)").fill(json.dumps({"onboardingBlockId": "a", "blocks": {
        "a": {"type": "executeScript", "id": "a", "source": "return 1", "outputVariable": "x",
              "defaultOutput": {"type": "block", "blockId": "ghost"}},
        "lost": {"type": "return", "id": "lost", "value": "{{nobody}}"}}}))
    await expect(node(page, "a")).to_have_attribute("aria-label",
                                                    "start: block a (executeScript), 1 problem(s)")
    await expect(node(page, "a").locator(".node-badge")).to_have_text("1")
    await expect(canvas(page).locator('[data-exit="missing block ghost"]')).to_have_count(1)
    problems = page.get_by_role("list", name="Problems")
    await expect(problems).to_contain_text("definition.blocks.a.defaultOutput.blockId no block 'ghost'")
    await expect(problems).to_contain_text("definition.blocks.lost")
    await expect(page.get_by_role("list", name="Warnings")).to_contain_text("reads {{nobody}}")
    await node(page, "a").click()
    await expect(form(page, "a").locator("[name=defaultOutput]")).to_have_attribute("aria-invalid", "true")
    await studio.shot("builder-badge")


async def test_undo_restores_the_last_edit_and_redo_replays_it(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Undoable")
    await page.get_by_role("button", name="Add return block").click()
    await page.get_by_role("button", name="Add httpCall block").click()
    await expect(node(page, "httpCall1")).to_be_visible()
    await page.get_by_role("button", name="Undo").click()
    await expect(node(page, "httpCall1")).to_have_count(0)
    assert set((await definition(page))["blocks"]) == {"return1"}
    await canvas(page).click(position={"x": 5, "y": 5})
    await page.keyboard.press("Control+Shift+Z")
    await expect(node(page, "httpCall1")).to_be_visible()
    await page.keyboard.press("Control+Z")
    await expect(node(page, "httpCall1")).to_have_count(0)


async def test_trash_asks_first_and_names_the_published_tool_that_calls_it(studio: Studio) -> None:
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
    dialog = page.get_by_role("dialog", name="Move Callee to the trash?")
    await expect(dialog.get_by_role("list", name="Callers")).to_contain_text("Caller (t-caller)")
    await studio.shot("builder-trash-confirm")
    await dialog.get_by_role("button", name="Cancel").click()
    assert (await studio.ok("GET", "/tools/t-callee"))["id"] == "t-callee"  # still there
    await page.get_by_role("button", name="Move to trash").click()
    await page.get_by_role("dialog").get_by_role("button", name="Move to trash").click()
    await expect(page.get_by_role("heading", name="Trash")).to_be_visible()


async def test_the_keyboard_alone_adds_a_block_and_connects_it(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Keys")
    await page.get_by_role("button", name="Add return block").focus()
    await page.keyboard.press("Enter")
    await expect(form(page, "return1").locator("[name=id]")).to_be_focused()
    await page.get_by_role("button", name="Add executeScript block").focus()
    await page.keyboard.press("Enter")  # after a return block: nothing to connect yet
    await expect(canvas(page).locator(".connection")).to_have_count(1)  # the script's exit
    # Back to the script by keyboard: focus its node, Enter opens its form.
    await node(page, "executeScript1").focus()
    await page.keyboard.press("Enter")
    nxt = form(page, "executeScript1").get_by_label("Next block *")
    await nxt.focus()
    await page.keyboard.press("ArrowDown")  # "— choose —" → "Block return1"
    await expect(edge(page, "executeScript1", "return1")).to_have_count(1)
    await node(page, "return1").focus()
    await page.keyboard.press("Delete")
    await expect(node(page, "return1")).to_have_count(0)
    assert "return1" not in (await definition(page))["blocks"]


async def test_leaving_with_unsaved_changes_asks_first_and_a_new_tool_is_never_created_unsaved(
        studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Draft")
    await page.get_by_role("button", name="Add return block").click()
    questions: list[str] = []

    async def answer(dialog: Any, accept: bool) -> None:
        questions.append(dialog.message)
        await (dialog.accept() if accept else dialog.dismiss())

    page.once("dialog", lambda d: asyncio.ensure_future(answer(d, False)))
    await page.get_by_role("link", name="Tools").click()
    await expect(node(page, "return1")).to_be_visible()  # stayed, with the edit
    assert questions == ["Draft has unsaved changes. Leave and lose them?"]
    page.once("dialog", lambda d: asyncio.ensure_future(answer(d, True)))
    await page.get_by_role("link", name="Tools").click()
    await expect(page.get_by_role("heading", name="Tools")).to_be_visible()
    assert len(questions) == 2
    assert [t for t in await studio.ok("GET", "/tools") if t["name"] == "Draft"] == []
