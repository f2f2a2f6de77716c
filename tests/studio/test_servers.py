"""Integration servers and LLM credentials in the Studio: usedBy, headers with write-only
secrets, OpenAPI import, endpoint test (status, headers masked, body formatted), the delete
confirmation naming the tools that use a server, masked credentials."""

from __future__ import annotations

import json

from playwright.async_api import expect

from tests.api.support import Upstream
from tests.studio.support import Studio
from tests.studio.upstreams import SECRET, answering
from tests.support.http import LoopbackServer

__all__ = ["answering"]  # the fixture

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


async def test_an_endpoint_test_asks_for_its_params_and_shows_status_headers_and_body(
        studio: Studio, answering: LoopbackServer) -> None:
    page = studio.page
    await studio.ok("POST", "/integration-servers", 201, json={
        "id": "srv-h", "name": "Shop", "baseUrl": answering.base,
        "headers": [{"name": "Authorization", "value": SECRET, "secret": True}]})
    await studio.ok("POST", "/integration-servers/srv-h/endpoints", 201, json={
        "id": "ep-o", "name": "listOrders", "path": "/orders", "method": "GET",
        "params": [{"name": "status", "in": "query", "description": "open or closed"}]})
    await studio.sign_in()
    await page.goto(f"{studio.url}#/servers/srv-h")
    await page.get_by_role("button", name="Test listOrders").click()
    test = page.get_by_role("region", name="Test of listOrders")
    await test.get_by_label("status (query)").fill("open")
    await test.get_by_role("button", name="Run test").click()
    await expect(test).to_contain_text("Status 200")
    await expect(test).to_contain_text(f"GET {answering.base}/orders?status=open")
    headers = test.get_by_role("table", name="Response headers")
    await expect(headers.get_by_role("row", name="x-request-id")).to_contain_text("req-42")
    await expect(headers.get_by_role("row", name="set-cookie")).to_contain_text("••••••••")
    await expect(headers.get_by_role("row", name="x-echo")).to_contain_text("••••••••")
    # The body indented, its HTML shown as text.
    await expect(test.locator("pre")).to_contain_text('"item": "<b>tea</b>"')
    assert await test.locator("b").count() == 0
    content = await page.content()
    assert "shop-secret-123" not in content and "s3cr3t-cookie" not in content
    await studio.shot("server-endpoint-test")

    # An endpoint with a body: its template is shown, and a body param is asked for.
    await studio.ok("POST", "/integration-servers/srv-h/endpoints", 201, json={
        "id": "ep-c", "name": "createOrder", "path": "/orders", "method": "POST",
        "bodyTemplate": {"qty": 1}, "params": [{"name": "item", "in": "body", "required": True}]})
    await page.reload()
    await page.get_by_role("button", name="Test createOrder").click()
    test = page.get_by_role("region", name="Test of createOrder")
    await expect(test.get_by_role("figure")).to_contain_text('"qty": 1')
    await test.get_by_label("item (body) *").fill("{{what}}")
    await test.get_by_label("Variables (JSON)").fill('{"what": "tea"}')
    await test.get_by_role("button", name="Run test").click()
    await expect(test).to_contain_text("Status 404")  # the upstream has no POST /orders
    assert json.loads(answering.requests[-1].body) == {"item": "tea", "qty": 1}


async def test_deleting_a_server_asks_first_and_names_the_tools_that_use_it(
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
    await studio.sign_in()
    await page.goto(f"{studio.url}#/servers/{server['id']}")
    await page.get_by_role("button", name="Delete server").click()
    dialog = page.get_by_role("dialog", name="Delete Shop?")
    await expect(dialog.get_by_role("list", name="Tools using it")).to_contain_text("Order lookup (t-user)")
    await studio.shot("server-delete-confirm")
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(dialog).to_have_count(0)
    assert (await studio.ok("GET", f"/integration-servers/{server['id']}"))["name"] == "Shop"
    # Confirmed anyway: the API refuses while the tool uses it, and the refusal says why.
    await page.get_by_role("button", name="Delete server").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete server").click()
    await expect(page.get_by_role("alert")).to_contain_text("409")
    assert (await studio.ok("GET", f"/integration-servers/{server['id']}"))["name"] == "Shop"

    # Once no tool uses it, the dialog says so and the delete goes through.
    await studio.ok("DELETE", "/tools/t-user")
    await studio.ok("DELETE", "/tools/t-user/permanent")
    await page.reload()
    await page.get_by_role("button", name="Delete server").click()
    dialog = page.get_by_role("dialog", name="Delete Shop?")
    await expect(dialog).to_contain_text("No tool uses it.")
    await dialog.get_by_role("button", name="Delete server").click()
    await expect(page.get_by_role("heading", name="Integration servers")).to_be_visible()
    await expect(page.get_by_role("table", name="Integration servers")).to_have_count(0)


async def test_a_viewer_sees_a_server_without_test_or_delete(studio: Studio, upstream: Upstream) -> None:
    page = studio.page
    server = await studio.ok("POST", "/integration-servers", 201,
                             json={"name": "Shop", "baseUrl": upstream.url})
    await studio.ok("POST", f"/integration-servers/{server['id']}/endpoints", 201,
                    json={"name": "getOrder", "path": "/orders/1"})
    await studio.sign_in(studio.viewer_key)
    await page.goto(f"{studio.url}#/servers/{server['id']}")
    await expect(page.get_by_role("table", name="Endpoints")).to_contain_text("getOrder")
    for name in ("Delete server", "Test getOrder", "Add header", "Import"):
        await expect(page.get_by_role("button", name=name)).to_have_count(0)
