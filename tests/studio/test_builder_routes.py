"""The routes the builder reads (no browser): each block type's schema, made from the models
validation uses; the published tools that call a tool; compressed files and the favicon."""

from __future__ import annotations

from chatflow.handlers.api.studio_routes import BLOCK_MODELS
from chatflow.schemas import definition as schema
from tests.api.support import Api


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
