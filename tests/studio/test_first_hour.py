"""What a new user tripped on in the Studio (issue 32), each as the user met it, and a tool the
canvas cannot draw (issue 29): a notice that clears, a new block in view, the focus after a
delete, the test panel's contact id, no "null" after a draft test, the unsaved mark, a wrong
key at sign-in, a condition rule's problem that opens its control, the runs list's tool names
and filters in the address, and a fork's page. Real API, Valkey, worker, run history, Chromium;
selected by role, label and field name."""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.async_api import expect

from tests.studio.support import Studio
from tests.studio.test_builder import canvas, form, new_tool, node
from tests.studio.test_live import publish
from tests.studio.test_runs_links import caught_up, greeting


def returns(*ids: str) -> dict[str, Any]:
    return {b: {"type": "return", "id": b, "value": b} for b in ids}


async def test_a_notice_clears_instead_of_staying_over_the_page(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Notices")
    await page.get_by_role("button", name="Add return block").click()
    notice = page.get_by_role("status").filter(has_text="Added block return1.")
    await expect(notice).to_be_visible()
    await expect(notice).to_be_hidden(timeout=20_000)


async def test_a_block_added_with_nothing_selected_lands_in_the_visible_canvas(studio: Studio) -> None:
    page = studio.page
    grid = {"a": {"x": 30, "y": 30}, "b": {"x": 330, "y": 30}, "c": {"x": 30, "y": 200},
            "d": {"x": 330, "y": 200}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-grid", "name": "Grid", "definition": {
        "onboardingBlockId": "a", "blocks": returns(*grid), "meta": {"positions": grid}}})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-grid")
    await expect(node(page, "d")).to_be_visible()
    await page.get_by_role("button", name="Add return block").click()
    added, view = await node(page, "return1").bounding_box(), await canvas(page).bounding_box()
    assert added is not None and view is not None
    for at, size in (("x", "width"), ("y", "height")):
        assert view[at] <= added[at] and added[at] + added[size] <= view[at] + view[size], (added, view)
    positions = json.loads(await page.get_by_label("Definition (JSON)").input_value())["meta"]["positions"]
    mine = positions["return1"]
    assert all(abs(p["x"] - mine["x"]) >= 200 or abs(p["y"] - mine["y"]) >= 70
               for b, p in positions.items() if b != "return1")  # on top of no other block


async def test_after_a_delete_the_focus_goes_to_the_block_before_not_to_the_page(studio: Studio) -> None:
    page = studio.page
    script = {"type": "executeScript", "source": "return 1", "outputVariable": "x"}
    await studio.ok("POST", "/tools", 201, json={"id": "t-chain", "name": "Chain", "definition": {
        "onboardingBlockId": "a", "blocks": {
            "a": {**script, "id": "a", "defaultOutput": {"type": "block", "blockId": "b"}},
            "b": {**script, "id": "b", "defaultOutput": {"type": "block", "blockId": "c"}},
            "c": {"type": "return", "id": "c", "value": "{{x}}"}}}})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-chain")
    await node(page, "b").focus()
    await page.keyboard.press("Delete")  # the focused node, from the keyboard
    await expect(node(page, "b")).to_have_count(0)
    await expect(node(page, "a")).to_be_focused()  # the block that led to it
    await node(page, "c").click()
    await page.get_by_role("button", name="Delete block c").click()  # the form's button
    await expect(node(page, "c")).to_have_count(0)
    await expect(node(page, "a")).to_be_focused()


async def test_a_draft_test_run_shows_its_answer_without_a_stray_null(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Unsaved run")
    await page.get_by_role("button", name="Add return block").click()
    await form(page, "return1").locator("[name=value]").fill("hi")
    await page.get_by_role("button", name="Run flow").click()
    await expect(page.locator("output")).to_have_text('"hi"')
    test = page.get_by_role("region", name="Test")
    await expect(test.get_by_role("list", name="Test trace")).to_be_visible()
    await expect(test).not_to_contain_text("null")  # a draft has no run page: nothing, not "null"


async def test_unsaved_changes_are_marked_until_saved(studio: Studio) -> None:
    page = studio.page
    await new_tool(studio, "Marked")
    mark = page.get_by_text("Unsaved changes")
    await expect(mark).to_be_visible()  # a new tool exists only from its first save
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status").filter(has_text="Draft saved.")).to_be_visible()
    await expect(mark).to_be_hidden()
    await page.get_by_role("button", name="Add return block").click()
    await expect(mark).to_be_visible()
    await page.get_by_role("button", name="Undo").click()
    await expect(mark).to_be_hidden()  # back to what was saved
    await page.get_by_label("Name", exact=True).fill("Marked again")
    await expect(mark).to_be_visible()


async def test_a_wrong_key_at_sign_in_is_refused_not_a_session_that_ended(studio: Studio) -> None:
    page = studio.page
    await page.goto(studio.url)
    await page.get_by_label("API key").fill("cfk_not-a-real-key")
    await page.get_by_role("button", name="Sign in").click()
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("refused this key")
    await expect(alert).not_to_contain_text("session ended")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


async def test_a_problem_inside_a_conditions_rule_focuses_that_rules_control(studio: Studio) -> None:
    page = studio.page
    await studio.ok("POST", "/tools", 201, json={"id": "t-rule", "name": "Rule", "definition": {
        "onboardingBlockId": "a", "blocks": {
            "a": {"type": "executeScript", "id": "a", "source": "return 1", "outputVariable": "x",
                  "defaultOutput": {"type": "block", "blockId": "r"},
                  "outputConditions": [{"id": "big", "logic": "and",
                                        "target": {"type": "block", "blockId": "r"},
                                        "rules": [{"variable": "x", "operator": "bogus", "value": "1"}]}]},
            "r": {"type": "return", "id": "r", "value": "{{x}}"}}}})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-rule")
    problem = page.get_by_role("list", name="Problems").get_by_role(
        "button", name=re.compile(r"blocks\.a\.outputConditions\.0\.rules\.0\.operator$"))
    await problem.click()
    await expect(form(page, "a").get_by_label("Operator")).to_be_focused()


async def test_a_tool_the_canvas_cannot_draw_shows_its_problem_on_its_page(studio: Studio) -> None:
    page = studio.page
    await studio.ok("POST", "/tools", 201, json={"id": "t-tab", "name": "Tabbed", "definition": {
        "onboardingBlockId": "x", "blocks": {"x": {"type": "http\tCall", "id": "x"}}}})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-tab")
    await expect(page.get_by_role("heading", name="Tabbed", exact=True)).to_be_visible()
    await expect(page.get_by_role("list", name="Problems")).to_contain_text("definition.blocks.x")
    await expect(node(page, "x")).to_be_visible()
    await expect(page.get_by_role("heading", name="Something went wrong")).to_have_count(0)


async def test_the_test_panel_runs_for_a_contact_and_the_run_is_kept_under_it(history_studio: Studio) -> None:
    studio = history_studio
    page = studio.page
    await studio.ok("POST", "/tools", 201,
                    json={"id": "t-greet", "name": "Greeter", "definition": greeting()})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-greet")
    await page.get_by_label("Inputs (JSON)").fill('{"who": "Ana"}')
    await page.get_by_label("Contact id").fill("5511977776666")
    await page.get_by_role("button", name="Run flow").click()
    await expect(page.locator("output")).to_have_text('"hi Ana"')
    await page.get_by_role("link", name="Open its run page").click()
    await expect(page.get_by_role("heading", name=re.compile(r"^Run 0-test"))).to_be_visible()
    await expect(page.get_by_text("contact 5511977776666")).to_be_visible()
    found = await studio.ok("GET", "/executions?state=finished&contactId=5511977776666")
    assert [r["contactId"] for r in found["executions"]] == ["5511977776666"]


async def test_runs_show_tool_names_keep_their_filters_for_back_and_a_fork_is_not_the_original(
        history_studio: Studio) -> None:
    studio = history_studio
    page = studio.page
    pt = await publish(studio, "t-greet", greeting(), "Greeter")
    first = await studio.harness.run(pt, contact="5511900000001", toolId="t-greet", variables={"who": "Ana"})
    await studio.harness.run(pt, contact="5511900000002", toolId="t-greet", variables={"who": "Bia"})
    await caught_up(studio)

    await studio.sign_in()
    await page.get_by_role("link", name="Runs").click()
    found = page.get_by_role("table", name="Runs, newest first")
    await expect(found.get_by_role("row")).to_have_count(3)
    await expect(found.get_by_role("row").nth(1).get_by_role("cell").first).to_have_text("Greeter")
    await page.get_by_label("Contact id").fill("5511900000001")
    await page.get_by_label("Status").select_option("ok")
    await page.get_by_role("button", name="Find runs").click()
    await expect(found.get_by_role("row")).to_have_count(2)
    await expect(page).to_have_url(re.compile(r"#/runs\?contactId=5511900000001&status=ok$"))
    await found.get_by_role("link", name=first.executionId).click()
    await expect(page.get_by_role("heading", name=f"Run {first.executionId}")).to_be_visible()
    await page.go_back()  # the list as it was: the same filters, the same one run
    await expect(page.get_by_label("Contact id")).to_have_value("5511900000001")
    await expect(page.get_by_label("Status")).to_have_value("ok")
    await expect(found.get_by_role("row")).to_have_count(2)
    await expect(found).to_contain_text(first.executionId)

    response = await studio.http.post(f"/executions/{first.executionId}/fork?wait=true",
                                      json={"fromBlockId": "r", "variables": {"g": "hi again"}})
    assert response.is_success, response.text  # its status is the API's business, not the page's
    fork = response.json()
    await caught_up(studio)
    await page.goto(f"{studio.url}#/runs/{fork['executionId']}")
    await expect(page.get_by_role("region", name="This fork's answer")).to_contain_text("hi again")
    await expect(page.get_by_role("heading", name="Original")).to_have_count(0)
    await expect(page.get_by_role("region", name="Original answer")).to_have_count(0)
