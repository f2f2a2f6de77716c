"""The tool's life in the Studio: the Versions panel (two versions compared on the canvas, a
rollback that names the callers, a rollback the saved cases refuse and "Roll back anyway" with
a note), "Save as test case" on a run's page, and the failing cases beside the Publish button
(with their runs, and "Publish anyway" with a note). A real worker, a real run history
(SQLite), Debian's Chromium; selection by role and label; axe on the refusals."""

from __future__ import annotations

import re
from typing import Any

from tests.studio.support import Studio
from tests.studio.test_accessibility import Audit
from tests.studio.test_live import calling, publish
from tests.support.http import LoopbackServer

# A publish runs the tool's saved cases first (a V8 sandbox, the run history): on a loaded
# machine its answer can take longer than expect()'s 5 s. Waited for, never slept.
CASES_RUN_MS = 30_000


def scripted(text: str, extra: bool = False) -> dict[str, Any]:
    blocks: dict[str, Any] = {
        "s": {"type": "executeScript", "id": "s", "source": f"return '{text}'", "inputVariables": [],
              "outputVariable": "x", "defaultOutput": {"type": "block", "blockId": "x" if extra else "r"}},
        "r": {"type": "return", "id": "r", "value": "{{x}}"}}
    if extra:
        blocks["x"] = {"type": "executeScript", "id": "x", "source": "return 'more'", "inputVariables": [],
                       "outputVariable": "y", "defaultOutput": {"type": "block", "blockId": "r"}}
    return {"onboardingBlockId": "s", "blocks": blocks}


async def test_versions_are_compared_on_the_canvas_and_rolled_back_naming_the_callers(
        studio: Studio) -> None:
    from playwright.async_api import expect

    page = studio.page
    pt = await publish(studio, "t-v", scripted("v1"), "Versioned")
    await studio.ok("PATCH", "/tools/t-v", json={"definition": scripted("v2", extra=True)})
    await studio.ok("POST", "/tools/t-v/publish", json={"note": "adds a step"})
    await publish(studio, "t-caller", calling(pt, "t-v"), "Caller")

    await studio.sign_in()
    await page.get_by_role("link", name="Versioned").click()
    await expect(page.get_by_text(re.compile(r"published as .* · version 2$"))).to_be_visible()
    panel = page.get_by_role("region", name="Versions")
    versions = panel.get_by_role("table", name="Published versions, newest first")
    await expect(versions.get_by_role("row")).to_have_count(3)
    await expect(versions.get_by_role("row").nth(1)).to_contain_text("v2 (live)")
    await expect(versions.get_by_role("row").nth(1)).to_contain_text("adds a step")

    await panel.get_by_label("From").select_option("1")
    await panel.get_by_label("To").select_option("2")
    await panel.get_by_role("button", name="Compare").click()
    changes = panel.get_by_role("list", name="Changes")
    await expect(changes).to_contain_text("block x (executeScript) added")
    await expect(changes).to_contain_text("block s changed")
    await expect(changes).to_contain_text("source: \"return 'v1'\" → \"return 'v2'\"")
    drawing = panel.get_by_role("group", name="Compared versions")
    await expect(drawing.get_by_role("button", name="block x (executeScript), added")).to_be_visible()
    changed = drawing.get_by_role("button", name="start: block s (executeScript), changed")
    await expect(changed).to_be_visible()
    await expect(drawing.locator(".drawflow-node.diff-added")).to_have_count(1)
    await panel.get_by_label("From").select_option("2")
    await panel.get_by_label("To").select_option("1")
    await panel.get_by_role("button", name="Compare").click()
    await expect(drawing.get_by_role("button", name="block x (executeScript), removed")).to_be_visible()
    await studio.shot("versions-diff")

    await versions.get_by_role("button", name="Roll back to v1").click()
    dialog = page.get_by_role("dialog", name="Roll back to version 1?")
    await expect(dialog).to_contain_text("published again, as version 3")
    await expect(dialog.get_by_role("list", name="Callers")).to_contain_text("Caller (t-caller)")
    await dialog.get_by_label("Why (kept in the new version)").fill("v2 broke the caller")
    await dialog.get_by_role("button", name="Roll back to v1").click()
    await expect(panel.get_by_role("status")).to_have_text("Version 1 published again as version 3.")
    await expect(versions.get_by_role("row").nth(1)).to_contain_text("v3 (live)")
    await expect(versions.get_by_role("row").nth(1)).to_contain_text("v2 broke the caller (rollback to v1)")
    await expect(page.get_by_text(re.compile(r"published as .* · version 3$"))).to_be_visible()
    ran = await studio.harness.run(pt)
    assert ran.ok and ran.result == "v1"  # the rolled-back definition runs


def first_name(url: str, source: str) -> dict[str, Any]:
    return {"onboardingBlockId": "h", "blocks": {
        "h": {"type": "httpCall", "id": "h", "url": url + "/people", "method": "GET",
              "responseBodyVariable": "resp", "defaultOutput": {"type": "block", "blockId": "s"}},
        "s": {"type": "executeScript", "id": "s", "source": source,
              "inputVariables": [{"name": "resp", "value": "{{resp}}"}], "outputVariable": "name",
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{name}}"}}}


async def test_a_run_saved_as_a_test_case_guards_the_publish_beside_the_button(
        history_studio: Studio, http_server: LoopbackServer) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    http_server.route("GET", "/people", {"items": []})
    pt = await publish(studio, "t-g", first_name(http_server.base, "return resp.items[0].name"),
                       "First name")
    failed = await studio.harness.run(pt, toolId="t-g")
    assert not failed.ok
    history = studio.harness.workers[0].history
    assert history is not None
    await history.wait_caught_up()
    hits = len(http_server.requests)

    await studio.sign_in()
    await page.goto(f"{studio.url}#/runs/{failed.executionId}")
    await expect(page.get_by_role("heading", name=f"Run {failed.executionId}")).to_be_visible()
    await page.get_by_text("Save as test case", exact=True).click()
    form = page.get_by_role("form", name="Save as test case")
    await form.get_by_label("Test case name").fill("empty search")
    await form.get_by_role("button", name="Save test case").click()
    saved = form.get_by_role("status")
    await expect(saved).to_contain_text("Saved test case empty search")
    await expect(saved.get_by_role("list", name="Notes")).to_contain_text("the case expects success")
    await saved.get_by_role("link", name="t-g").click()

    cases = page.get_by_role("region", name="Test cases")
    await expect(cases.get_by_role("list", name="Saved test cases")).to_contain_text(
        "empty search")
    await expect(cases.get_by_role("list", name="Saved test cases")).to_contain_text("mocks h")
    await page.get_by_role("button", name="Publish", exact=True).click()
    gate = page.get_by_role("alert").filter(has_text="Not published")
    await expect(gate).to_contain_text("1 saved test case(s) fail", timeout=CASES_RUN_MS)
    failing = gate.get_by_role("list", name="Failing test cases")
    await expect(failing).to_contain_text("empty search")
    await expect(failing.get_by_role("list", name="Differences of empty search")).to_contain_text(
        "ok: expected true, got false")
    await studio.shot("publish-gate")
    await failing.get_by_role("link", name="open its run").click()  # the run the case produced
    await expect(page.get_by_role("heading", name=re.compile(r"^Run 0-test"))).to_be_visible()
    await page.go_back()
    await expect(page.get_by_role("heading", name="First name")).to_be_visible()

    await page.get_by_role("button", name="Publish", exact=True).click()
    await gate.get_by_role("button", name="Publish anyway…").click(timeout=CASES_RUN_MS)
    dialog = page.get_by_role("dialog", name="Publish past failing test cases?")
    await dialog.get_by_label("Note (why publish now)").fill("hotfix; case fixed next")
    await dialog.get_by_role("button", name="Publish anyway").click()
    await expect(page.get_by_role("status").filter(has_text="Published as")).to_contain_text(
        "version 2", timeout=CASES_RUN_MS)
    versions = page.get_by_role("table", name="Published versions, newest first")
    await expect(versions.get_by_role("row").nth(1)).to_contain_text(
        "hotfix; case fixed next (forced past 1 failing case(s))", timeout=CASES_RUN_MS)
    assert len(http_server.requests) == hits  # the case's runs were answered by its mock


async def test_a_rollback_the_saved_cases_refuse_is_listed_and_forced_with_a_note(
        studio: Studio) -> None:
    from playwright.async_api import expect

    page = studio.page
    audit = Audit(page)
    await publish(studio, "t-r", scripted("v1"), "Rolled")
    await studio.ok("PATCH", "/tools/t-r", json={"definition": scripted("v2")})
    await studio.ok("POST", "/tools/t-r/publish", json={"note": "says v2"})
    await studio.ok("POST", "/tools/t-r/tests", 201, json={"id": "v2", "name": "says v2",
                                                           "expect": {"result": "v2"}})

    await studio.sign_in()
    await page.get_by_role("link", name="Rolled").click()
    panel = page.get_by_role("region", name="Versions")
    versions = panel.get_by_role("table", name="Published versions, newest first")
    await versions.get_by_role("button", name="Roll back to v1").click()
    dialog = page.get_by_role("dialog", name="Roll back to version 1?")
    await dialog.get_by_label("Why (kept in the new version)").fill("v2 is wrong")
    await dialog.get_by_role("button", name="Roll back to v1").click()
    gate = panel.get_by_role("alert").filter(has_text="Not rolled back")
    await expect(gate).to_contain_text("1 saved test case(s) fail on version 1 (0 pass)",
                                       timeout=CASES_RUN_MS)
    failing = gate.get_by_role("list", name="Failing test cases")
    await expect(failing).to_contain_text("says v2")
    await expect(failing.get_by_role("list", name="Differences of says v2")).to_contain_text(
        'result: expected "v2", got "v1"')
    await expect(versions.get_by_role("row").nth(1)).to_contain_text("v2 (live)")
    await audit.check("a rollback refused by the saved cases")

    await gate.get_by_role("button", name="Roll back anyway…").click()
    forcing = page.get_by_role("dialog", name="Roll back to version 1 past failing test cases?")
    note = forcing.get_by_label("Note (why roll back now)")
    await expect(note).to_have_value("v2 is wrong")  # the note given once is offered again
    await note.fill("v2 breaks billing; case next")
    await audit.check("rolling back anyway")
    await forcing.get_by_role("button", name="Roll back anyway").click()
    await expect(panel.get_by_role("status")).to_have_text(
        "Version 1 published again as version 3.", timeout=CASES_RUN_MS)
    await expect(versions.get_by_role("row").nth(1)).to_contain_text(
        "v2 breaks billing; case next (rollback to v1) (forced past 1 failing case(s))")
    kept = await studio.ok("GET", "/tools/t-r/versions/3")
    assert (kept["note"], kept["forced"]) == ("v2 breaks billing; case next", {"failed": ["v2"]})
    assert audit.rules_run == 2
    bad = [f"{state}: {v}" for state, found in audit.found.items() for v in found]
    assert bad == [], "\n".join(bad)
