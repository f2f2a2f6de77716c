"""The visual builder: a tool built from nothing on the canvas and in the forms (no JSON typed),
positions kept across a reload, the JSON and the canvas in sync both ways, problems as badges,
undo, the trash confirmation naming a caller, and the keyboard-only path. Real API, Valkey,
worker and Chromium; selected by role, label and field name."""

from __future__ import annotations

import asyncio
import json
import re
from itertools import pairwise
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
    url = http.locator("[name=url]")
    await url.fill(f"{upstream.url}/ping?who=")
    await url.press_sequentially("{{")  # completion offers the declared input
    await expect(http.get_by_role("listbox", name="Variables for url")).to_contain_text("{{who}}")
    await url.press("Enter")
    await expect(url).to_have_value(f"{upstream.url}/ping?who={{{{who}}}}")
    await http.locator("[name=method]").select_option("GET")
    await http.locator("[name=responseBodyVariable]").fill("resp")
    # No next block yet: the node says so (defaultOutput is required); its name holds its title.
    await expect(node(page, "httpCall1")).to_have_attribute(
        "aria-label", "start: block httpCall1 (httpCall) Ping, 1 problem(s)")

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

    # The test panel has a field per declared input: no JSON to type.
    await page.get_by_label("Input who", exact=True).fill("Ana")
    await page.get_by_role("button", name="Run flow").click()
    # A bound, not a timing: the run calls the upstream and V8 on a machine that may be busy.
    await expect(page.get_by_role("list", name="Test trace")).to_contain_text("condition1", timeout=60_000)
    await expect(page.locator("output")).to_have_text('"hello Ana"')
    assert upstream.requests[-1].query == {"who": "Ana"}  # the real loopback upstream was called
    await studio.shot("builder-run")
    # The published version runs on the real worker too, as a command from a flow.
    result = await studio.harness.run(tool["publishedToolId"], inputs={"who": "Bia"}, timeout_s=60)
    assert result.ok and result.result == "hello Bia", result

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


async def test_a_shape_checks_answer_marks_the_nodes_in_place_and_a_node_being_dragged_stays_in_hand(
        studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Marks")
    # The shape check's answer is held until the mouse has a node: then it arrives mid-drag.
    asked, answer = asyncio.Event(), asyncio.Event()

    async def hold(route: Any) -> None:
        asked.set()
        await answer.wait()
        await route.continue_()

    await page.route("**/definitions/check", hold)
    doc = page.get_by_label("Definition (JSON)")
    await doc.fill(json.dumps({"onboardingBlockId": "a", "blocks": {  # a has no source
        "a": {"type": "executeScript", "id": "a", "outputVariable": "x",
              "defaultOutput": {"type": "block", "blockId": "b"}},
        "b": {"type": "return", "id": "b", "value": "{{x}}"}}}))
    await expect(node(page, "b")).to_be_visible()
    await asyncio.wait_for(asked.wait(), 30)
    await node(page, "a").evaluate("e => { e.dataset.probe = 'drawn once'; }")
    before = await doc.input_value()

    await node(page, "a").scroll_into_view_if_needed()  # the JSON view, just filled, is below
    box = await node(page, "a").bounding_box()
    assert box is not None
    await page.mouse.move(box["x"] + 40, box["y"] + 20)
    await page.mouse.down()
    await page.mouse.move(box["x"] + 40, box["y"] + 60, steps=3)
    answer.set()
    await expect(node(page, "a")).to_have_attribute("aria-label", re.compile(r"^start: block a .*1 problem"))
    assert await node(page, "a").get_attribute("data-probe") == "drawn once"  # the same element
    await page.mouse.move(box["x"] + 40, box["y"] + 180, steps=3)
    await page.mouse.up()
    await expect(doc).not_to_have_value(before)  # the drag ended in the definition
    positions = (await definition(page))["meta"]["positions"]
    assert positions["a"]["y"] > positions["b"]["y"]

    # Selecting a block marks it on the canvas (and only it), the node drawn where it was.
    await node(page, "b").evaluate("e => { e.dataset.probe = 'drawn once'; }")
    await node(page, "b").click()
    await expect(form(page, "b")).to_be_visible()
    await expect(canvas(page).get_by_role("button", pressed=True)).to_have_attribute(
        "aria-label", re.compile(r"^block b "))
    assert await node(page, "b").get_attribute("data-probe") == "drawn once"


async def test_layout_places_a_tool_made_over_the_api_and_every_block_is_in_view(studio: Studio) -> None:
    page = studio.page
    ids = [f"step{i}" for i in range(7)]
    blocks = {b: {"type": "executeScript", "id": b, "source": "return 1", "outputVariable": b,
                  "defaultOutput": {"type": "block", "blockId": nxt}} for b, nxt in pairwise(ids)}
    blocks[ids[-1]] = {"type": "return", "id": ids[-1], "value": "done"}
    await studio.ok("POST", "/tools", 201, json={"id": "t-long", "name": "Long", "definition": {
        "onboardingBlockId": ids[0], "blocks": blocks}})
    await studio.sign_in()
    await page.get_by_role("link", name="Long").click()
    for b in ids:
        await expect(node(page, b)).to_be_visible()
    # Seven layers side by side are wider than the canvas: zoomed out to fit. The fit follows
    # the drawing, so wait until every node's box lies inside the canvas's.
    await page.wait_for_function("""(ids) => {
      const area = document.querySelector('[role=group][aria-label="Flow canvas"]');
      if (!area) return false;
      const a = area.getBoundingClientRect();
      return ids.every((b) => {
        const n = area.querySelector(`[data-block="${b}"]`);
        if (!n) return false;
        const r = n.getBoundingClientRect();
        return r.width > 0 && a.left <= r.left && r.right <= a.right;
      });
    }""", arg=ids, timeout=15_000)
    area = await canvas(page).bounding_box()
    assert area is not None
    for b in ids:
        box = await node(page, b).bounding_box()
        assert box is not None
        assert area["x"] <= box["x"] and box["x"] + box["width"] <= area["x"] + area["width"], b
    assert "meta" not in await definition(page)
    await page.get_by_role("button", name="Layout").click()
    positions = (await definition(page))["meta"]["positions"]
    assert set(positions) == set(ids)
    assert [positions[b]["x"] for b in ids] == sorted(positions[b]["x"] for b in ids)  # left to right


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


async def tab_to(page: Page, target: Locator, *, back: bool = False, limit: int = 80) -> None:
    """Presses Tab (or Shift+Tab) until ``target`` has the focus, as a keyboard user would (the
    script editor takes Tab to indent: Esc then Tab leaves it, as its hint says)."""
    for _ in range(limit):
        if await target.evaluate("e => e === document.activeElement"):
            return
        if await page.evaluate("document.activeElement.classList.contains('with-lines')"):
            await page.keyboard.press("Escape")
        await page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"{target} never got the focus in {limit} presses of Tab")


async def test_the_keyboard_alone_adds_a_block_and_connects_it(studio: Studio) -> None:
    page = studio.page
    await studio.sign_in()
    # From here on, only the keyboard: Tab, Shift+Tab, Enter, arrow keys, Delete, typing.
    await tab_to(page, page.get_by_role("button", name="New tool"))
    await page.keyboard.press("Enter")
    await expect(page.get_by_label("Tool name")).to_be_focused()
    await page.keyboard.type("Keys")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Keys", exact=True)).to_be_visible()

    await tab_to(page, page.get_by_role("button", name="Add return block"))
    await page.keyboard.press("Enter")
    await expect(form(page, "return1").locator("[name=id]")).to_be_focused()
    await tab_to(page, page.get_by_role("button", name="Add executeScript block"), back=True)
    await page.keyboard.press("Enter")  # after a return block: nothing to connect yet
    await expect(form(page, "executeScript1").locator("[name=id]")).to_be_focused()
    await expect(canvas(page).locator(".connection")).to_have_count(1)  # the script's exit

    # To the return's node and back to the script's: Enter on a node opens its form.
    await tab_to(page, node(page, "return1"), back=True)
    await page.keyboard.press("Enter")
    await expect(form(page, "return1")).to_be_visible()
    await tab_to(page, node(page, "executeScript1"), back=True)
    await page.keyboard.press("Enter")
    await expect(form(page, "executeScript1").locator("[name=id]")).to_be_focused()
    await tab_to(page, form(page, "executeScript1").get_by_label("Next block *"))
    await page.keyboard.press("ArrowDown")  # "— choose —" → "Block return1"
    await expect(edge(page, "executeScript1", "return1")).to_have_count(1)
    assert (await definition(page))["blocks"]["executeScript1"]["defaultOutput"] == {
        "type": "block", "blockId": "return1"}

    # A condition from the form alone: Add condition, a rule, and where it goes.
    await tab_to(page, form(page, "executeScript1").get_by_role("button", name="Add condition"))
    await page.keyboard.press("Enter")
    await tab_to(page, form(page, "executeScript1").locator("[name=variable]"))
    await page.keyboard.type("x")
    await tab_to(page, form(page, "executeScript1").get_by_label("Then go to"))
    await page.keyboard.press("ArrowDown")
    await expect(edge(page, "executeScript1", "return1").and_(
        canvas(page).locator('[data-label="condition1"]'))).to_have_count(1)

    await tab_to(page, node(page, "return1"), back=True)
    await page.keyboard.press("Delete")
    await expect(node(page, "return1")).to_have_count(0)
    assert "return1" not in (await definition(page))["blocks"]


async def test_typing_two_braces_offers_the_variables_and_enter_inserts_one(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Braces")
    await page.get_by_label("New input name").fill("who")
    await page.get_by_label("New input name").press("Enter")
    await page.get_by_role("button", name="Add executeScript block").click()
    await form(page, "executeScript1").locator("[name=outputVariable]").fill("greeting")
    await page.get_by_role("button", name="Add httpCall block").click()
    url = form(page, "httpCall1").locator("[name=url]")
    await url.fill("https://example.test/?q=")
    await url.press_sequentially("{{")
    offered = page.get_by_role("listbox", name="Variables for url")
    # The tool's input, and what the script (which runs before) writes.
    await expect(offered.get_by_role("option")).to_have_text(["{{greeting}}", "{{who}}"])
    first = offered.get_by_role("option", name="{{greeting}}")
    await expect(first).to_have_attribute("aria-selected", "true")
    await url.press_sequentially("w")  # narrows to the names starting with w
    await expect(offered.get_by_role("option")).to_have_text(["{{who}}"])
    await url.press("Enter")
    await expect(offered).to_be_hidden()
    await expect(url).to_have_value("https://example.test/?q={{who}}")
    await expect(url).to_be_focused()
    assert (await definition(page))["blocks"]["httpCall1"]["url"] == "https://example.test/?q={{who}}"
    # Arrow keys choose another; Escape closes without inserting.
    await url.press_sequentially("&g={{")
    await url.press("ArrowDown")
    await expect(offered.get_by_role("option", name="{{who}}")).to_have_attribute("aria-selected", "true")
    await url.press("Escape")
    await expect(offered).to_be_hidden()
    await expect(url).to_have_value("https://example.test/?q={{who}}&g={{")
    # The script's own form offers only the input: nothing runs before the first block.
    await node(page, "executeScript1").click()
    await form(page, "executeScript1").get_by_role("button", name="Add input variable").click()
    value = form(page, "executeScript1").get_by_label("Value of mapping 1")
    await value.press_sequentially("{{")
    offered = form(page, "executeScript1").get_by_role("listbox", name="Variables for value")
    await expect(offered.get_by_role("option")).to_have_text(["{{who}}"])
    await value.press("Enter")
    await expect(value).to_have_value("{{who}}")
    await studio.shot("builder-completion")


async def test_leaving_with_unsaved_changes_asks_first_and_a_new_tool_is_never_created_unsaved(
        studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Draft")
    await page.get_by_role("button", name="Add return block").click()
    # Each question is put here once answered: awaited, not read at once (the handler is a
    # task of its own, and a loaded machine may run it after the next assertion).
    questions: asyncio.Queue[str] = asyncio.Queue()

    async def answer(dialog: Any, accept: bool) -> None:
        await (dialog.accept() if accept else dialog.dismiss())
        questions.put_nowait(dialog.message)

    page.once("dialog", lambda d: asyncio.ensure_future(answer(d, False)))
    await page.get_by_role("link", name="Tools").click()
    asked = await asyncio.wait_for(questions.get(), 30)
    assert asked == "Draft has unsaved changes. Leave and lose them?"
    await expect(node(page, "return1")).to_be_visible()  # stayed, with the edit
    page.once("dialog", lambda d: asyncio.ensure_future(answer(d, True)))
    await page.get_by_role("link", name="Tools").click()
    assert await asyncio.wait_for(questions.get(), 30) == asked
    await expect(page.get_by_role("heading", name="Tools")).to_be_visible()
    assert [t for t in await studio.ok("GET", "/tools") if t["name"] == "Draft"] == []


async def test_the_small_defects_stay_fixed_sign_out_dashes_and_the_average_line(studio: Studio) -> None:
    page = studio.page
    await page.goto(studio.url)
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_role("button", name="Sign out")).to_have_count(0)

    returning = {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r", "value": "ok"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-idle", "name": "Idle", "definition": returning})
    await studio.ok("POST", "/tools", 201, json={"id": "t-busy", "name": "Busy", "definition": returning})
    published = await studio.ok("POST", "/tools/t-busy/publish")
    assert (await studio.harness.run(published["publishedToolId"])).ok
    await studio.harness.workers[0].projection.wait_caught_up()

    await studio.sign_in()
    tools = page.get_by_role("table", name="Custom tools")
    # Runs, average ms and success rate of a tool that never ran: 0 runs, then dashes, not 0.
    idle = tools.get_by_role("row", name="Idle")
    await expect(idle.get_by_role("cell")).to_have_text(["draft", "0", "—", "—", "—", re.compile(".+")])
    await expect(tools.get_by_role("row", name="Busy").get_by_role("cell").nth(3)).to_have_text("100%")

    # Six days without runs and one with: the average line has one point, not six at 0 ms.
    await page.get_by_role("link", name="Busy").click()
    chart = page.get_by_role("img", name="Runs per day (bars) and average duration (line), last seven days")
    # One "x,y" pair: awaited, since the chart may be drawn before its figures arrive.
    await expect(chart.locator("polyline")).to_have_attribute("points", re.compile(r"^\S+$"))
    await page.get_by_text("The numbers").click()
    days = page.get_by_role("table", name="Last seven days")
    await expect(days.get_by_role("row").nth(1).get_by_role("cell")).to_have_text(["0", "—", "—"])


async def test_a_viewer_reads_a_blocks_form_but_cannot_change_it(studio: Studio) -> None:
    page = studio.page
    definition = {"onboardingBlockId": "h", "inputs": [{"name": "who", "type": "string"}], "blocks": {
        "h": {"type": "httpCall", "id": "h", "method": "GET", "url": "https://x.test/?q={{who}}",
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "ok"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-seen", "name": "Seen", "definition": definition})
    await studio.sign_in(studio.viewer_key)
    await page.get_by_role("link", name="Seen").click()
    await node(page, "h").click()
    block = form(page, "h")
    await expect(block.locator("[name=url]")).to_have_value("https://x.test/?q={{who}}")
    await expect(block.locator("[name=url]")).not_to_be_editable()
    await expect(block.locator("[name=method]")).to_be_disabled()
    await expect(block.locator("[name=defaultOutput]")).to_be_disabled()
    for name in ("Delete block h", "Add condition", "Make this the start block", "Add httpCall block"):
        await expect(page.get_by_role("button", name=name)).to_have_count(0)
    await expect(block.get_by_role("listbox")).to_have_count(0)
    await expect(block.get_by_label("Insert variable into url")).to_have_count(0)
    await expect(page.get_by_label("Input who", exact=True)).to_have_count(0)  # no test panel
    await expect(page.get_by_role("button", name="Fit the flow in view")).to_be_visible()  # reading is fine


async def test_forms_follow_capability_and_mode_and_the_pickers_map_inputs_and_params(
        studio: Studio, upstream: Upstream) -> None:
    page = studio.page
    callee = {"onboardingBlockId": "r", "inputs": [{"name": "city", "type": "string"}],
              "blocks": {"r": {"type": "return", "id": "r", "value": "{{city}}"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-weather", "name": "Weather", "definition": callee})
    await studio.ok("POST", "/tools/t-weather/publish")
    server = await studio.ok("POST", "/integration-servers", 201,
                             json={"name": "Shop", "baseUrl": upstream.url})
    await studio.ok("POST", f"/integration-servers/{server['id']}/endpoints", 201, json={
        "id": "ep-get", "name": "getOrder", "path": "/orders/{orderId}", "method": "GET",
        "params": [{"name": "orderId", "in": "route", "required": True}, {"name": "full", "in": "query"}]})
    await new_tool(studio, "Forms")

    await page.get_by_role("button", name="Add callAI block").click()
    ai = form(page, "callAI1")
    await expect(ai.locator("[name=userPrompt]")).to_be_visible()
    await expect(ai.locator("[name=maxPages]")).to_have_count(0)
    await ai.locator("[name=capability]").select_option("analyzeDocument")
    for name in ("inputVariable", "mimeTypeVariable", "prompt", "maxPages"):
        await expect(ai.locator(f"[name={name}]")).to_be_visible()
    await expect(ai.locator("[name=userPrompt]")).to_have_count(0)

    await page.get_by_role("button", name="Add fetchMedia block").click()
    media = form(page, "fetchMedia1")
    await expect(media.locator("[name=urlVariable]")).to_be_visible()
    await media.locator("[name=mode]").select_option("whatsapp")
    await expect(media.locator("[name=mediaIdVariable]")).to_be_visible()
    await expect(media.locator("[name=urlVariable]")).to_have_count(0)

    await page.get_by_role("button", name="Add callTool block").click()
    call = form(page, "callTool1")
    await call.get_by_label("Tool *").select_option(label="Weather")
    await expect(call.get_by_label("Value of city")).to_be_visible()
    block = (await definition(page))["blocks"]["callTool1"]
    assert block["toolId"] == "t-weather" and block["publishedToolId"].startswith("pt-")
    assert block["inputVariables"] == [{"name": "city", "value": ""}]

    await page.get_by_role("button", name="Add callEndpoint block").click()
    endpoint = form(page, "callEndpoint1")
    await endpoint.get_by_label("Server *").select_option(label="Shop")
    await endpoint.get_by_label("Endpoint *").select_option(label="GET /orders/{orderId} (getOrder)")
    await endpoint.get_by_label("Value of orderId").fill("42")
    block = (await definition(page))["blocks"]["callEndpoint1"]
    assert (block["serverId"], block["endpointId"]) == (server["id"], "ep-get")
    assert block["paramMappings"] == [{"name": "orderId", "in": "route", "value": "42"},
                                      {"name": "full", "in": "query", "value": ""}]

    # The start block is marked, and can be changed from a block's form.
    await expect(node(page, "callAI1")).to_have_attribute("aria-label", re.compile("^start: "))
    await endpoint.get_by_role("button", name="Make this the start block").click()
    await expect(node(page, "callEndpoint1")).to_have_attribute("aria-label", re.compile("^start: "))
    assert (await definition(page))["onboardingBlockId"] == "callEndpoint1"


async def test_a_selected_edge_is_deleted_with_the_delete_key(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Edges")
    await page.get_by_label("Definition (JSON)").fill(json.dumps({"onboardingBlockId": "a", "blocks": {
        "a": {"type": "executeScript", "id": "a", "source": "return 1", "outputVariable": "x",
              "defaultOutput": {"type": "block", "blockId": "b"}},
        "b": {"type": "return", "id": "b", "value": "{{x}}"}}}))
    await expect(edge(page, "a", "b")).to_have_count(1)
    await edge(page, "a", "b").locator("path.main-path").click()
    await page.keyboard.press("Delete")
    await expect(edge(page, "a", "b")).to_have_count(0)
    assert "defaultOutput" not in (await definition(page))["blocks"]["a"]
    await expect(node(page, "a")).to_have_attribute("aria-label",
                                                    "start: block a (executeScript), 1 problem(s)")
    await page.get_by_role("button", name="Undo").click()
    await expect(edge(page, "a", "b")).to_have_count(1)
