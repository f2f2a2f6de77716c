"""Integration servers and LLM credentials in the Studio: usedBy, headers with write-only
secrets, OpenAPI import, endpoint test, masked credentials."""

from __future__ import annotations

from playwright.async_api import expect

from tests.api.support import Upstream
from tests.studio.support import Studio

SPEC = """openapi: 3.0.3
info: {title: Shop, version: "1"}
paths:
  /orders:
    get: {operationId: listOrders, responses: {"200": {description: ok}}}
  /ping:
    post: {operationId: ping, responses: {"200": {description: ok}}}
"""


async def test_a_server_is_created_given_a_secret_header_and_endpoints_from_openapi(
        studio: Studio, upstream: Upstream) -> None:
    page = studio.page
    await studio.sign_in()
    await page.get_by_role("link", name="Servers").click()
    await page.get_by_label("Server name").fill("Shop")
    await page.get_by_label("Base URL").fill(upstream.url)
    await page.get_by_role("button", name="Create server").click()
    await expect(page.get_by_role("heading", name="Shop", exact=True)).to_be_visible()

    await page.get_by_label("Header name").fill("Authorization")
    await page.get_by_label("Header value").fill("Bearer shop-secret-123")
    await page.get_by_role("button", name="Add header").click()
    headers = page.get_by_role("table", name="Headers")
    await expect(headers).to_contain_text("Authorization")
    await expect(headers).to_contain_text("secret, write-only")
    assert "shop-secret-123" not in await page.content()

    await page.get_by_label("OpenAPI spec (YAML or JSON)").fill(SPEC)
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("status")).to_have_text("Imported 2 endpoint(s)")
    endpoints = page.get_by_role("table", name="Endpoints")
    await expect(endpoints.get_by_role("row")).to_have_count(3)
    await expect(endpoints).to_contain_text("listOrders")
    assert "shop-secret-123" not in await page.content()
    await page.get_by_role("button", name="Test listOrders").click()
    test = page.get_by_role("region", name="Test of listOrders")
    await test.get_by_role("button", name="Run test").click()
    await expect(test).to_contain_text("Status 200")
    assert upstream.requests[-1].headers["authorization"] == "Bearer shop-secret-123"
    await studio.shot("server")


async def test_an_openapi_file_is_imported_and_a_broken_one_says_where(
        studio: Studio, upstream: Upstream) -> None:
    page = studio.page
    server = await studio.ok("POST", "/integration-servers", 201,
                             json={"name": "Files", "baseUrl": upstream.url})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/servers/{server['id']}")
    await page.get_by_label("Or upload a file").set_input_files(
        files=[{"name": "shop.yaml", "mimeType": "application/yaml", "buffer": SPEC.encode()}])
    await expect(page.get_by_label("OpenAPI spec (YAML or JSON)")).to_have_value(SPEC)
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("table", name="Endpoints")).to_contain_text("ping")
    await page.get_by_label("OpenAPI spec (YAML or JSON)").fill("openapi: 3.0.3\npaths: [")
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("alert")).to_contain_text("400")


async def test_servers_list_usage_and_credentials_are_shown_masked(
        studio: Studio, upstream: Upstream) -> None:
    page = studio.page
    server = await studio.ok("POST", "/integration-servers", 201,
                             json={"name": "Shop", "baseUrl": upstream.url})
    endpoint = await studio.ok("POST", f"/integration-servers/{server['id']}/endpoints", 201,
                               json={"name": "getOrder", "path": "/orders/1"})
    definition = {"onboardingBlockId": "e", "blocks": {
        "e": {"type": "callEndpoint", "id": "e", "serverId": server["id"], "endpointId": endpoint["id"],
              "paramMappings": [], "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "ok"}}}
    await studio.ok("POST", "/tools", 201,
                    json={"id": "t-user", "name": "Order lookup", "definition": definition})
    await studio.ok("POST", "/llm-credentials", 201, json={"name": "OpenAI", "apiKey": "sk-very-secret-1"})
    await studio.sign_in()
    await page.get_by_role("link", name="Servers").click()
    servers = page.get_by_role("table", name="Integration servers")
    await expect(servers.get_by_role("row", name="Shop")).to_contain_text("Order lookup")
    credentials = page.get_by_role("table", name="LLM credentials")
    await expect(credentials).to_contain_text("OpenAI")
    await expect(credentials).to_contain_text("••••")
    assert "sk-very-secret-1" not in await page.content()
    await studio.shot("servers")
