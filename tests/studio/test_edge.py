"""The Studio's parts of the edge (SPEC, "Extensions to the definition"): the block form edits a
retry policy, the run page lists a block's attempts, the server page shows its circuit as every
worker sees it. Real API, worker, run history and loopback upstreams; Debian's Chromium;
selected by role, label and field name."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.studio.support import Studio
from tests.studio.test_accessibility import Audit
from tests.studio.test_builder import form, node
from tests.studio.test_live import publish
from tests.support.http import serve_asgi


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[str, list[int]]]:
    """``/once`` answers 503 to its first request and 200 after; ``/down`` always 503."""
    seen: list[int] = []

    async def once(_request: Request) -> JSONResponse:
        seen.append(1)
        return JSONResponse({"ok": len(seen) > 1}, status_code=503 if len(seen) == 1 else 200)

    async def down(_request: Request) -> JSONResponse:
        return JSONResponse({"error": "down"}, status_code=503)

    async with serve_asgi(Starlette(routes=[Route("/once", once), Route("/down", down)])) as url:
        yield url, seen


def http_tool(url: str, **block: Any) -> dict[str, Any]:
    return {"onboardingBlockId": "fetch", "blocks": {
        "fetch": {"type": "httpCall", "id": "fetch", "url": url, "method": "GET",
                  "responseStatusVariable": "st", "defaultOutput": {"type": "block", "blockId": "r"},
                  **block},
        "r": {"type": "return", "id": "r", "value": "{{st}}"}}}


async def test_the_block_form_switches_a_retry_policy_on_and_edits_it(studio: Studio) -> None:
    page = studio.page
    await studio.ok("POST", "/tools", 201, json={"id": "t-retry", "name": "Retry",
                                                  "definition": http_tool("https://x.example/a")})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/tools/t-retry")
    await node(page, "fetch").click()
    block = form(page, "fetch")
    policy = block.get_by_role("group", name="Retry policy")
    await expect(policy.get_by_label("Max attempts")).to_have_count(0)
    await policy.get_by_label("Retry on failure").check()
    await expect(policy.get_by_label("Max attempts")).to_have_value("3")
    await policy.get_by_label("Max attempts").fill("5")
    await policy.get_by_label("Initial interval (ms)").fill("500")
    await policy.get_by_label("Retry on", exact=True).fill("429, 5xx, timeout")
    await policy.get_by_label("Retry on", exact=True).press("Tab")
    await expect(page.get_by_role("list", name="Problems")).to_contain_text("No problems found.")
    audit = Audit(page)
    await audit.check("a block form with its retry policy on")
    assert audit.found == {"a block form with its retry policy on": []}, audit.found
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status").filter(has_text="Draft saved.")).to_be_visible()
    saved = (await studio.ok("GET", "/tools/t-retry"))["definition"]["blocks"]["fetch"]["retry"]
    assert saved == {"maxAttempts": 5, "initialIntervalMs": 500, "backoffCoefficient": 2,
                     "maxIntervalMs": 5000, "retryOn": [429, "5xx", "timeout"]}, saved
    # A bad value is named where it is typed; switched off, the policy is gone.
    await policy.get_by_label("Max attempts").fill("11")
    await expect(page.get_by_role("list", name="Problems")).to_contain_text("maxAttempts")
    await policy.get_by_label("Retry on failure").uncheck()
    await expect(policy.get_by_label("Max attempts")).to_have_count(0)
    assert "retry" not in json.loads(await page.get_by_label("Definition (JSON)").input_value())[
        "blocks"]["fetch"]


async def test_the_run_page_lists_a_blocks_attempts(
        history_studio: Studio, flaky: tuple[str, list[int]]) -> None:
    studio = history_studio
    page = studio.page
    url, seen = flaky
    pt = await publish(studio, "t-flaky", http_tool(url + "/once", retry={
        "maxAttempts": 3, "initialIntervalMs": 50, "maxIntervalMs": 100}))
    result = await studio.harness.run(pt, contact="5511933330000")
    assert (result.ok, result.result, len(seen)) == (True, "200", 2), result
    history = studio.harness.workers[0].history
    assert history is not None
    await history.wait_caught_up()

    await studio.sign_in()
    await page.goto(f"{studio.url}#/runs/{result.executionId}")
    drawing = page.get_by_role("group", name="The definition as it ran")
    await drawing.get_by_role("button", name=re.compile(r"^(start: )?block fetch ")).click()
    attempts = page.get_by_role("table", name="Attempts of block fetch")
    rows = attempts.get_by_role("row")
    await expect(rows).to_have_count(3)  # the header and two attempts
    await expect(rows.nth(1)).to_contain_text("HTTP 503")
    await expect(rows.nth(2)).to_contain_text("HTTP 200")
    waited = await rows.nth(2).get_by_role("cell").nth(2).inner_text()
    assert int(waited.removesuffix(" ms")) >= 40, waited
    audit = Audit(page)
    await audit.check("a run's block with its attempts")
    assert audit.found == {"a run's block with its attempts": []}, audit.found
    await studio.shot("run-attempts")


async def test_the_server_page_shows_its_circuit_open_after_failures(
        studio: Studio, flaky: tuple[str, list[int]]) -> None:
    page = studio.page
    url, _seen = flaky
    await studio.ok("POST", "/integration-servers", 201, json={
        "id": "srv-down", "name": "Down", "baseUrl": url,
        "limits": {"maxConcurrent": 3},
        "circuitBreaker": {"failureThreshold": 2, "windowMs": 10_000, "cooldownMs": 60_000}})
    await studio.ok("POST", "/integration-servers/srv-down/endpoints", 201,
                    json={"id": "ep", "name": "ping", "path": "/down", "method": "GET"})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/servers/srv-down")
    card = page.get_by_role("region", name="Circuit and limits")
    await expect(card).to_contain_text("Closed: calls go through")
    await expect(card).to_contain_text("at most 3 at once")
    await expect(card).to_contain_text("opens after 2 failures in 10 s")

    pt = await publish(studio, "t-down", {"onboardingBlockId": "c", "blocks": {
        "c": {"type": "callEndpoint", "id": "c", "serverId": "srv-down", "endpointId": "ep",
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "x"}}})
    codes = [(await studio.harness.run(pt)).error for _ in range(3)]
    assert [e.code if e else None for e in codes] == ["http_status", "http_status", "circuit_open"]
    await page.reload()
    card = page.get_by_role("region", name="Circuit and limits")
    await expect(card).to_contain_text("Open: calls fail at once with circuit_open")
    await expect(card.get_by_text("Recent failures")).to_be_visible()
    await expect(card).to_contain_text("Opened at")
    audit = Audit(page)
    await audit.check("a server with its circuit open")
    assert audit.found == {"a server with its circuit open": []}, audit.found
    await studio.shot("server-circuit")
