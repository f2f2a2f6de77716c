"""The routes the builder reads (no browser): each block type's schema, made from the models
validation uses; the published tools that call a tool; compressed files and the favicon; an
endpoint test's response headers, secrets masked."""

from __future__ import annotations

import json

from chatflow.handlers.api.studio_routes import BLOCK_MODELS
from chatflow.handlers.registry.reply_headers import MAX_HEADERS, MAX_VALUE_CHARS, shown_headers
from chatflow.runtime.registry.views import MASK
from chatflow.schemas import definition as schema
from tests.api.support import Api
from tests.studio.upstreams import SECRET, answering
from tests.support.http import LoopbackServer

__all__ = ["answering"]  # the fixture


async def test_the_block_schemas_are_the_models_validation_uses(api: Api) -> None:
    body = await api.ok("GET", "/definitions/schema")
    assert set(body["blocks"]) == set(schema.KNOWN_BLOCK_TYPES)
    for kind, model in BLOCK_MODELS.items():
        assert body["blocks"][kind] == model.model_json_schema(by_alias=True), kind
    http = body["blocks"]["httpCall"]
    assert {"url", "method", "defaultOutput"} <= set(http["required"])
    assert "timeoutMs" in http["properties"] and "onError" in http["properties"]
    # callAI's fields follow its capability, from the validator's own table.
    for capability, needed in schema.CALLAI_REQUIRED.items():
        shown = body["dependsOn"]["callAI"]["capability"][capability]
        assert set(needed) <= set(shown), capability
    assert body["dependsOn"]["fetchMedia"]["mode"]["whatsapp"] == ["mediaIdVariable"]


async def test_the_callers_of_a_tool_are_the_published_tools_that_call_it(api: Api) -> None:
    callee = {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r", "value": "x"}}}
    await api.ok("POST", "/tools", 201, json={"id": "t-ce", "name": "Callee", "definition": callee})
    published = await api.ok("POST", "/tools/t-ce/publish")
    assert (await api.ok("GET", "/tools/t-ce/callers"))["callers"] == []
    caller = {"onboardingBlockId": "c", "blocks": {
        "c": {"type": "callTool", "id": "c", "toolId": "t-ce", "outputVariable": "x",
              "publishedToolId": published["publishedToolId"],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": {"type": "return", "id": "r", "value": "{{x}}"}}}
    await api.ok("POST", "/tools", 201, json={"id": "t-cr", "name": "Caller", "definition": caller})
    await api.ok("POST", "/tools/t-cr/publish")
    body = await api.ok("GET", "/tools/t-ce/callers")
    assert body["callers"] == [{"id": "t-cr", "name": "Caller"}]
    await api.fails("GET", "/tools/t-none/callers", 404)


async def test_studio_files_are_gzipped_when_asked_and_the_favicon_is_served(api: Api) -> None:
    plain = await api.root.get("/studio/vendor/drawflow/drawflow.min.js",
                               headers={"Accept-Encoding": "identity"})
    zipped = await api.root.get("/studio/vendor/drawflow/drawflow.min.js",
                                headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in plain.headers
    assert zipped.headers["content-encoding"] == "gzip"
    assert "script-src 'self';" in zipped.headers["content-security-policy"]
    # httpx decodes the body; the bytes on the wire are what Content-Length counts.
    assert zipped.content == plain.content
    wire = int(zipped.headers["content-length"])
    assert wire < len(plain.content) / 3, (wire, len(plain.content))
    builder = await api.root.get("/studio/js/pages/builder.js", headers={"Accept-Encoding": "gzip"})
    assert builder.headers["content-encoding"] == "gzip"
    icon = await api.root.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert (await api.root.get("/studio/favicon.svg")).status_code == 200


async def test_an_endpoint_test_returns_the_response_headers_with_every_secret_masked(
        api: Api, answering: LoopbackServer) -> None:
    await api.ok("POST", "/integration-servers", 201, json={
        "id": "srv-h", "name": "Shop", "baseUrl": answering.base,
        "headers": [{"name": "Authorization", "value": SECRET, "secret": True}]})
    await api.ok("POST", "/integration-servers/srv-h/endpoints", 201,
                 json={"id": "ep-o", "name": "listOrders", "path": "/orders", "method": "GET"})
    result = await api.ok("POST", "/integration-servers/srv-h/endpoints/ep-o/test", json={})
    assert result["status"] == 200 and result["body"] == {"orders": [{"id": 1, "item": "<b>tea</b>"}]}
    headers = {h["name"].lower(): h["value"] for h in result["headers"]}
    assert headers["x-request-id"] == "req-42"
    assert headers["content-type"] == "application/json"
    assert headers["set-cookie"] == MASK  # a credential by its name
    assert headers["x-echo"] == MASK  # the server's own secret, echoed back
    assert answering.requests[-1].headers["authorization"] == SECRET  # it was sent
    text = json.dumps(result)
    assert "shop-secret-123" not in text and "s3cr3t-cookie" not in text


def test_shown_headers_are_capped_and_long_values_cut() -> None:
    many = [(f"X-H{i}", "v" * 5000) for i in range(MAX_HEADERS + 10)]
    shown = shown_headers(many)
    assert len(shown) == MAX_HEADERS + 1
    assert shown[-1]["name"] == "…"
    assert len(shown[0]["value"]) == MAX_VALUE_CHARS + 1
    assert shown_headers([("X-Api-Key", "k"), ("Proxy-Authorization", "p"), ("X-Session-Id", "s"),
                          ("X-Plain", "has abcd inside")], ["abcd"]) == [
        {"name": "X-Api-Key", "value": MASK}, {"name": "Proxy-Authorization", "value": MASK},
        {"name": "X-Session-Id", "value": MASK}, {"name": "X-Plain", "value": MASK}]
