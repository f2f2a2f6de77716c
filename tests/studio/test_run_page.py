"""The run page (pages/run.js): a finished run found by contact and time, its path on the
builder's canvas as it ran, a node's data, the callTool's child opened in place, and "Run from
here" (fork) with its answer next to the original's. A real worker, a real run history
(SQLite), a real upstream on loopback, Debian's Chromium."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.studio.support import Studio
from tests.studio.test_live import calling, publish
from tests.support.http import serve_asgi

SECRET = "s3cr3t-T0KEN-value-4242"
CONTACT = "5511970001111"


@pytest.fixture
async def orders() -> AsyncIterator[tuple[str, list[str]]]:
    """An order API on loopback: 500 for order ``bad``, the order's status otherwise."""
    seen: list[str] = []

    async def order(request: Request) -> PlainTextResponse:
        oid = request.path_params["oid"]
        seen.append(oid)
        if oid == "bad":
            return PlainTextResponse("database down", status_code=500)
        return PlainTextResponse(f"shipped {oid}")

    async with serve_asgi(Starlette(routes=[Route("/orders/{oid}", order)])) as url:
        yield url, seen


def order_tool(url: str) -> dict[str, Any]:
    return {"onboardingBlockId": "prep", "blocks": {
        "prep": {"type": "executeScript", "id": "prep", "source": "return String(orderId).trim()",
                 "outputVariable": "oid",
                 "inputVariables": [{"name": "orderId", "value": "{{orderId}}"}],
                 "defaultOutput": {"type": "block", "blockId": "fetch"}},
        "fetch": {"type": "httpCall", "id": "fetch", "url": url + "/orders/{{oid}}", "method": "GET",
                  "headers": {"Authorization": "Bearer {{token}}"},
                  "responseBodyVariable": "order",
                  "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{order}}"}}}


async def local_time(page: Any, ms: int) -> str:
    """``ms`` as a datetime-local value in the browser's own time zone."""
    value: str = await page.evaluate(
        "ms => { const d = new Date(ms); const p = (n) => String(n).padStart(2, '0');"
        " return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T"
        "${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`; }", ms)
    return value


async def test_a_user_who_knows_a_contact_and_a_time_finds_the_failed_run_and_forks_it_fixed(
        history_studio: Studio, orders: tuple[str, list[str]]) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    url, seen = orders
    pt = await publish(studio, "t-order", order_tool(url), "Order status")
    good = await studio.harness.run(pt, contact="5511900000000", toolId="t-order",
                                    variables={"orderId": "a1", "token": SECRET})
    failed = await studio.harness.run(pt, contact=CONTACT, toolId="t-order",
                                      variables={"orderId": " bad ", "token": SECRET})
    assert good.ok and not failed.ok and failed.error is not None
    assert failed.error.code == "http_status"
    history = studio.harness.workers[0].history
    assert history is not None
    await history.wait_caught_up()
    run = await studio.ok("GET", f"/executions/{failed.executionId}/history")

    await studio.sign_in()
    await page.get_by_role("link", name="Runs").click()
    await page.get_by_label("Contact id").fill(CONTACT)
    await page.get_by_label("Started after").fill(await local_time(page, run["startedMs"] - 60_000))
    await page.get_by_label("Started before").fill(await local_time(page, run["startedMs"] + 60_000))
    await page.get_by_role("button", name="Find runs").click()
    found = page.get_by_role("table", name="Runs, newest first")
    await expect(found.get_by_role("row")).to_have_count(2)  # the header and the one run
    await expect(found).to_contain_text("http_status")
    await found.get_by_role("link", name=failed.executionId).click()

    await expect(page.get_by_role("heading", name=f"Run {failed.executionId}")).to_be_visible()
    drawing = page.get_by_role("group", name="The definition as it ran")
    await expect(drawing.locator('.drawflow-node.status-ok[data-block="prep"]')).to_have_count(1)
    await expect(drawing.locator('.drawflow-node.status-error[data-block="fetch"]')).to_have_count(1)
    await expect(drawing.locator('.drawflow-node.not-run[data-block="r"]')).to_have_count(1)
    on_path = drawing.locator('svg.connection.on-path[data-from="prep"][data-to="fetch"]')
    await expect(on_path).to_have_count(1)
    fetch_node = drawing.get_by_role("button", name=re.compile(r"^block fetch \(httpCall\), error, \d+ ms$"))
    await expect(fetch_node).to_be_visible()
    await expect(page.get_by_role("region", name="Original answer")).to_contain_text("http_status")

    await drawing.get_by_role("button", name=re.compile(r"^block fetch ")).click()
    block = page.get_by_role("region", name="Block fetch")
    # Marked in place, its run's status and duration still in its name.
    await expect(drawing.get_by_role("button", pressed=True)).to_have_attribute(
        "aria-label", re.compile(r"^block fetch \(httpCall\), error, \d+ ms$"))
    for text in ("GET", f"{url}/orders/bad", "500", "http_status", '"oid": "bad"'):
        await expect(block).to_contain_text(text)
    assert SECRET not in await page.content()  # the Authorization header's value, masked

    await block.get_by_text("Run from here").click()
    variables = block.get_by_label("Variables at block fetch (JSON)")
    at_block = json.loads(await variables.input_value())
    assert at_block["oid"] == "bad" and at_block["orderId"] == " bad "
    assert at_block["token"] == "***"  # the history never held the secret
    await expect(block.get_by_role("note")).to_contain_text("type the values of token")
    await variables.fill(json.dumps({**at_block, "oid": "b2"}))
    await block.get_by_role("button", name="Run from fetch").click()
    await expect(block.get_by_role("alert")).to_contain_text("variables token")
    assert seen == ["a1", "bad"]  # refused: "Bearer ***" was never sent
    await variables.fill(json.dumps({**at_block, "oid": "b2", "token": SECRET}))
    await block.get_by_role("button", name="Run from fetch").click()
    fork = page.get_by_role("region", name="Fork answer")
    await expect(fork).to_contain_text("shipped b2")
    await expect(page.get_by_role("region", name="Original answer")).to_contain_text("http_status")
    assert seen == ["a1", "bad", "b2"]  # the fork called the API once; prep did not run again
    await studio.shot("run-page")

    await history.wait_caught_up()
    await fork.get_by_role("link", name=re.compile(r"^Run \d+-")).click()
    await expect(page.get_by_role("heading", name=re.compile(r"^Run \d+-"))).to_be_visible()
    await expect(page.get_by_text("Forked from")).to_contain_text(f"{failed.executionId} at block fetch")
    drawing = page.get_by_role("group", name="The definition as it ran")
    await expect(drawing.locator('.drawflow-node.status-ok[data-block="fetch"]')).to_have_count(1)
    await expect(drawing.locator('.drawflow-node.not-run[data-block="prep"]')).to_have_count(1)


async def test_a_call_tool_node_opens_its_child_run_in_place_on_its_own_canvas(
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
    await page.goto(f"{studio.url}#/runs/{result.executionId}")
    drawing = page.get_by_role("group", name="The definition as it ran")
    await expect(drawing.locator('.drawflow-node.status-ok[data-block="c"]')).to_have_count(1)
    await drawing.get_by_role("button", name=re.compile(r"^(start: )?block c ")).click()
    await page.get_by_role("button", name=re.compile(r"^Open child run ")).click()
    child = page.get_by_role("region", name=re.compile(r"^Child run "))
    inner_drawing = child.get_by_role("group", name=f"The definition of {inner} as it ran")
    await expect(inner_drawing.locator('.drawflow-node.status-ok[data-block="s"]')).to_have_count(1)
    await inner_drawing.get_by_role("button", name=re.compile(r"^(start: )?block s ")).click()
    await expect(child.get_by_role("region", name="Block s")).to_contain_text('"g": "hi Ana"')


async def test_a_viewer_sees_a_runs_data_but_no_fork_control(history_studio: Studio) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    inner = await publish(studio, "t-one", {"onboardingBlockId": "s", "blocks": {
        "s": {"type": "executeScript", "id": "s", "source": "return 'x'", "outputVariable": "g",
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{g}}"}}})
    result = await studio.harness.run(inner, contact="5511955550000")
    history = studio.harness.workers[0].history
    assert history is not None
    await history.wait_caught_up()

    await studio.sign_in(studio.viewer_key)
    await page.goto(f"{studio.url}#/runs/{result.executionId}")
    drawing = page.get_by_role("group", name="The definition as it ran")
    await drawing.get_by_role("button", name=re.compile(r"^(start: )?block s ")).click()
    await expect(page.get_by_role("region", name="Block s")).to_contain_text('"g": "x"')
    await expect(page.get_by_text("Run from here")).to_have_count(0)
    await expect(page.get_by_role("button", name=re.compile(r"^Run from "))).to_have_count(0)


async def test_run_from_here_runs_the_current_draft_and_names_a_bad_pasted_definition(
        history_studio: Studio, orders: tuple[str, list[str]]) -> None:
    from playwright.async_api import expect

    studio = history_studio
    page = studio.page
    url, seen = orders
    pt = await publish(studio, "t-order", order_tool(url), "Order status")
    failed = await studio.harness.run(pt, contact=CONTACT, toolId="t-order",
                                      variables={"orderId": "bad", "token": SECRET})
    assert not failed.ok
    draft = order_tool(url)
    draft["blocks"]["r"]["value"] = "fixed: {{order}}"
    await studio.ok("PATCH", "/tools/t-order", json={"definition": draft})
    history = studio.harness.workers[0].history
    assert history is not None
    await history.wait_caught_up()

    await studio.sign_in()
    await page.goto(f"{studio.url}#/runs/{failed.executionId}")
    drawing = page.get_by_role("group", name="The definition as it ran")
    await drawing.get_by_role("button", name=re.compile(r"^block fetch ")).click()
    block = page.get_by_role("region", name="Block fetch")
    await block.get_by_text("Run from here").click()
    await block.get_by_label("Variables at block fetch (JSON)").fill(
        json.dumps({"oid": "b3", "token": SECRET}))
    await block.get_by_label("Pasted JSON").check()
    await block.get_by_label("Definition (JSON)").fill('{"blocks": ')
    await block.get_by_role("button", name="Run from fetch").click()
    await expect(block.get_by_role("alert")).to_contain_text("Definition:")
    assert seen == ["bad"]  # nothing ran

    await block.get_by_label("The current draft").check()
    await block.get_by_role("button", name="Run from fetch").click()
    await expect(page.get_by_role("region", name="Fork answer")).to_contain_text("fixed: shipped b3")
    await expect(page.get_by_role("region", name="Original answer")).to_contain_text("http_status")
