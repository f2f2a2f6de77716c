"""Every /tools route over real HTTP: happy path, then its 400, 404 and 409 paths."""

from __future__ import annotations

from tests.api.support import Api
from tests.registry.defs import definition, ret, returning


async def test_post_tools_creates_an_empty_draft(api: Api) -> None:
    tool = await api.ok("POST", "/tools", 201)
    assert tool["status"] == "draft" and tool["kind"] == "custom" and tool["version"] == 1
    assert tool["definition"] == {"blocks": {}, "onboardingBlockId": None}


async def test_post_tools_rejects_bad_bodies_and_taken_ids(api: Api) -> None:
    body = await api.fails("POST", "/tools", 400, json={"name": ""})
    assert body["problems"][0]["path"] == "name"
    await api.fails("POST", "/tools", 400, json={"kind": "native"})  # no nativeName
    await api.fails("POST", "/tools", 400, json={"definition": "not an object"})
    await api.ok("POST", "/tools", 201, json={"id": "t-1"})
    assert (await api.fails("POST", "/tools", 409, json={"id": "t-1"}))["error"] == "tool_exists"


async def test_get_tools_lists_status_ai_flags_and_zero_metrics(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-a", "name": "A", "definition": definition(
        ret(), enabledForAI=True, slug="a_tool")})
    await api.ok("POST", "/tools/t-a/publish")
    await api.ok("POST", "/tools", 201, json={"id": "t-b", "name": "B"})
    listed = {t["id"]: t for t in await api.ok("GET", "/tools")}
    assert listed["t-a"]["status"] == "published" and listed["t-b"]["status"] == "draft"
    assert listed["t-a"]["enabledForAI"] is True and listed["t-a"]["slug"] == "a_tool"
    assert listed["t-a"]["metrics"] == {"runs7d": 0, "avgMs": 0, "successRate": 0.0}
    assert "definition" not in listed["t-a"]
    await api.fails("GET", "/tools", 400, params={"includeDeleted": "maybe"})


async def test_get_tools_native_lists_only_native_tools_with_unique_names(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"name": "Sentiment", "kind": "native",
                                              "nativeName": "updateSentiment"})
    await api.ok("POST", "/tools", 201, json={"name": "Custom"})
    native = await api.ok("GET", "/tools/native")
    assert [t["nativeName"] for t in native] == ["updateSentiment"]
    assert [t["name"] for t in await api.ok("GET", "/tools")] == ["Custom"]
    body = await api.fails("POST", "/tools", 409, json={"name": "Again", "kind": "native",
                                                        "nativeName": "updateSentiment"})
    assert body["error"] == "native_name_taken"


async def test_get_tool_returns_the_tool_and_its_published_version(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-g", "definition": returning("x")})
    await api.ok("POST", "/tools/t-g/publish")
    tool = await api.ok("GET", "/tools/t-g")
    assert tool["publishedTool"]["definition"] == returning("x")
    assert tool["publishedTool"]["id"] == tool["publishedToolId"]
    assert (await api.fails("GET", "/tools/t-none", 404))["error"] == "not_found"


async def test_patch_tool_saves_a_draft_and_checks_its_version(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-p"})
    saved = await api.ok("PATCH", "/tools/t-p", json={
        "name": "Renamed", "description": "General text", "definition": returning(), "version": 1})
    assert (saved["name"], saved["description"], saved["version"]) == ("Renamed", "General text", 2)
    await api.fails("PATCH", "/tools/t-p", 400, json={"definition": [1, 2]})
    await api.fails("PATCH", "/tools/t-p", 400, json={"unknown": 1})
    await api.fails("PATCH", "/tools/t-none", 404, json={"name": "x"})
    body = await api.fails("PATCH", "/tools/t-p", 409, json={"name": "late", "version": 1})
    assert body["version"] == 2


async def test_delete_tool_moves_it_to_the_trash_once(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-d"})
    assert (await api.ok("DELETE", "/tools/t-d"))["deletedAt"]
    assert (await api.fails("DELETE", "/tools/t-d", 409))["error"] == "in_trash"
    # The code is a row of ApiCode (a StrEnum): on the wire, byte for byte, the plain string.
    again = await api.http.delete("/tools/t-d")
    assert again.content == b'{"error":"in_trash","message":"tool \'t-d\' is already in the trash"}'
    await api.fails("DELETE", "/tools/t-none", 404)
    await api.fails("PATCH", "/tools/t-d", 404, json={"name": "x"})


async def test_restore_brings_a_tool_back_and_refuses_one_not_in_the_trash(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-r"})
    assert (await api.fails("POST", "/tools/t-r/restore", 409))["error"] == "not_in_trash"
    await api.ok("DELETE", "/tools/t-r")
    assert (await api.ok("POST", "/tools/t-r/restore"))["deletedAt"] is None
    await api.fails("POST", "/tools/t-none/restore", 404)


async def test_permanent_delete_follows_the_trash_rules(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-x"})
    await api.fails("DELETE", "/tools/t-x/permanent", 400)
    await api.ok("DELETE", "/tools/t-x")
    assert (await api.ok("DELETE", "/tools/t-x/permanent")) == {"id": "t-x", "deleted": True}
    await api.fails("DELETE", "/tools/t-x/permanent", 404)
    # (the 409 path, naming the callers: tests/registry/test_trash_and_rebuild.py)


async def test_publish_answers_400_404_and_409_as_it_should(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-pub"})
    body = await api.fails("POST", "/tools/t-pub/publish", 400)
    assert body["problems"][0]["path"] == "definition.onboardingBlockId"
    await api.fails("POST", "/tools/t-none/publish", 404)
    await api.ok("PATCH", "/tools/t-pub", json={"definition": returning()})
    await api.fails("POST", "/tools/t-pub/publish", 409, json={"version": 1})
    await api.ok("POST", "/tools/t-pub/publish", json={"version": 2})
    await api.ok("DELETE", "/tools/t-pub")
    assert (await api.fails("POST", "/tools/t-pub/publish", 409))["error"] == "in_trash"


async def test_agent_link_routes_answer_404_and_409(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-ag", "definition": returning()})
    await api.ok("PUT", "/ai-agents/ag/tools/t-ag")
    await api.fails("PUT", "/ai-agents/ag/tools/t-ag", 409)
    await api.fails("PUT", "/ai-agents/ag/tools/t-none", 404)
    await api.ok("DELETE", "/ai-agents/ag/tools/t-ag")
    await api.fails("DELETE", "/ai-agents/ag/tools/t-ag", 404)
    assert await api.ok("GET", "/ai-agents/ag") == {"id": "ag", "tools": []}


async def test_the_openapi_document_lists_every_route_of_the_seed(api: Api) -> None:
    doc = await api.ok("GET", "/openapi.json")
    routes = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    base = "/api"
    seed = [("GET", "/tools/native"), ("GET", "/tools"), ("POST", "/tools"),
            ("GET", "/tools/{tool_id}"), ("PATCH", "/tools/{tool_id}"),
            ("DELETE", "/tools/{tool_id}"), ("POST", "/tools/{tool_id}/restore"),
            ("DELETE", "/tools/{tool_id}/permanent"), ("POST", "/tools/{tool_id}/publish"),
            ("POST", "/tools/test-flow"), ("POST", "/tools/test-block"),
            ("GET", "/integration-servers"), ("POST", "/integration-servers"),
            ("PATCH", "/integration-servers/{server_id}"),
            ("DELETE", "/integration-servers/{server_id}"),
            ("GET", "/integration-servers/{server_id}/endpoints"),
            ("POST", "/integration-servers/{server_id}/endpoints"),
            ("PATCH", "/integration-servers/{server_id}/endpoints/{endpoint_id}"),
            ("DELETE", "/integration-servers/{server_id}/endpoints/{endpoint_id}"),
            ("POST", "/integration-servers/{server_id}/endpoints/{endpoint_id}/test"),
            ("POST", "/integration-servers/{server_id}/endpoints/test"),
            ("POST", "/integration-servers/{server_id}/import-openapi")]
    assert {(m, base + p) for m, p in seed} <= routes
    assert ("POST", "/internal/tools/execute") in routes
