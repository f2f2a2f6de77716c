"""Workspaces: an editor of ``a`` cannot read, write, list, publish against, or run anything
of ``b``; every such object answers exactly as a missing one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.api.support import Api, Upstream
from tests.registry.defs import call_ai, call_endpoint, call_tool, definition, ret, returning

B_SECRET = "b-only-secret-71c0"


@dataclass
class Two:
    api: Api
    a: httpx.AsyncClient  # editor of workspace a
    b: httpx.AsyncClient  # admin of workspace b
    upstream: Upstream


@pytest.fixture
async def two(api: Api, upstream: Upstream) -> AsyncIterator[Two]:
    async with api.as_key(await api.new_key("a", "editor")) as a, \
            api.as_key(await api.new_key("b", "admin")) as b:
        for method, path, body in [
            ("POST", "/tools", {"id": "t-b", "definition": returning("from b")}),
            ("POST", "/tools/t-b/publish", None),
            ("POST", "/tools", {"id": "n-b", "kind": "native", "nativeName": "lookup"}),
            ("POST", "/integration-servers", {"id": "srv-b", "name": "B",
                                              "baseUrl": upstream.url, "headers": [
                {"name": "Authorization", "value": B_SECRET, "secret": True}]}),
            ("POST", "/integration-servers/srv-b/endpoints", {"id": "ep-b", "name": "get",
                                                              "path": "/b"}),
            ("POST", "/llm-credentials", {"id": "cred-b", "name": "B", "apiKey": B_SECRET}),
            ("PUT", "/ai-agents/agent-b/tools/t-b", None),
        ]:
            response = await b.request(method, path, json=body)
            assert response.status_code in (200, 201), (path, response.text)
        yield Two(api, a, b, upstream)


async def status(client: httpx.AsyncClient, method: str, path: str,
                 body: Any = None) -> tuple[int, str]:
    response = await client.request(method, path, json=body)
    return response.status_code, response.text


async def test_an_editor_of_a_cannot_read_or_write_b_objects_by_id(two: Two) -> None:
    pt_b = (await two.b.get("/tools/t-b")).json()["publishedToolId"]
    attempts = [
        ("GET", "/tools/t-b", None), ("PATCH", "/tools/t-b", {"name": "mine"}),
        ("DELETE", "/tools/t-b", None), ("POST", "/tools/t-b/restore", None),
        ("DELETE", "/tools/t-b/permanent", None), ("POST", "/tools/t-b/publish", None),
        ("GET", "/integration-servers/srv-b", None),
        ("PATCH", "/integration-servers/srv-b", {"baseUrl": "http://127.0.0.1:9"}),
        ("DELETE", "/integration-servers/srv-b", None),
        ("GET", "/integration-servers/srv-b/endpoints", None),
        ("POST", "/integration-servers/srv-b/endpoints", {"name": "x"}),
        ("PATCH", "/integration-servers/srv-b/endpoints/ep-b", {"name": "x"}),
        ("DELETE", "/integration-servers/srv-b/endpoints/ep-b", None),
        ("POST", "/integration-servers/srv-b/endpoints/ep-b/test", {}),
        ("POST", "/integration-servers/srv-b/endpoints/test", {"endpoint": {"name": "x"}}),
        ("GET", "/llm-credentials/cred-b", None),
        ("PATCH", "/llm-credentials/cred-b", {"baseUrl": "http://127.0.0.1:9"}),
        ("DELETE", "/llm-credentials/cred-b", None),
        ("PUT", "/ai-agents/agent-b/tools/t-b", None),
        ("DELETE", "/ai-agents/agent-b/tools/t-b", None),
        ("POST", "/tools/test-flow", {"toolId": "t-b"}),
    ]
    for method, path, body in attempts:
        code, text = await status(two.a, method, path, body)
        missing = path.replace("-b", "-zz")
        code_missing, _ = await status(two.a, method, missing, body)
        assert code == 404 == code_missing, (method, path, code, text)
        assert B_SECRET not in text and "from b" not in text
    spec = {"openapi": "3.0.0", "info": {"title": "x", "version": "1"}, "paths": {}}
    code, _ = await status(two.a, "POST", "/integration-servers/srv-b/import-openapi", spec)
    assert code == 404
    agent = (await two.a.get("/ai-agents/agent-b")).json()
    assert agent == {"id": "agent-b", "tools": []}
    assert two.upstream.requests == []
    # b's objects are untouched, and the id of b's published tool was never handed out.
    assert (await two.b.get("/tools/t-b")).json()["name"] != "mine"
    assert pt_b not in str(await two.a.get("/tools"))


async def test_listings_show_only_the_callers_workspace(two: Two) -> None:
    await two.a.post("/tools", json={"id": "t-a"})
    for path in ("/tools", "/tools/native", "/integration-servers", "/llm-credentials"):
        listing = (await two.a.get(path)).json()
        assert all(item["id"].endswith("-a") for item in listing), (path, listing)
        assert "-b" not in str(listing)
    assert [t["id"] for t in (await two.a.get("/tools")).json()] == ["t-a"]
    assert [t["id"] for t in (await two.b.get("/tools")).json()] == ["t-b"]
    assert "t-a" not in str(await two.api.ok("GET", "/tools"))  # nor workspace default


async def test_native_names_are_unique_per_workspace(two: Two) -> None:
    made = await two.a.post("/tools", json={"id": "n-a", "kind": "native",
                                            "nativeName": "lookup"})
    assert made.status_code == 201, made.text
    again = await two.a.post("/tools", json={"id": "n-a2", "kind": "native",
                                             "nativeName": "lookup"})
    assert again.status_code == 409 and again.json()["error"] == "native_name_taken"


async def test_publish_refuses_calls_to_another_workspaces_tool_server_or_credential(
        two: Two) -> None:
    pt_b = (await two.b.get("/tools/t-b")).json()["publishedToolId"]
    draft = definition(call_tool("c", "t-b", pt_b, nxt="e"),
                       call_endpoint("e", "srv-b", "ep-b", [], nxt="ai"),
                       call_ai("ai", "cred-b"), ret())
    assert (await two.a.post("/tools", json={"id": "t-a", "definition": draft})).status_code == 201
    response = await two.a.post("/tools/t-a/publish")
    assert response.status_code == 400, response.text
    problems = {p["path"]: p["message"] for p in response.json()["problems"]}
    assert problems == {
        "definition.blocks.c.publishedToolId": f"no published tool {pt_b!r}",
        "definition.blocks.e.serverId": "no integration server 'srv-b'",
        "definition.blocks.ai.llmCredentialId": "no LLM credential 'cred-b'"}


async def test_test_runs_refuse_another_workspaces_objects_and_send_nothing(two: Two) -> None:
    pt_b = (await two.b.get("/tools/t-b")).json()["publishedToolId"]
    runs = [
        ("/tools/test-flow", {"definition": definition(
            call_endpoint("e", "srv-b", "ep-b", []), ret())}),
        ("/tools/test-flow", {"definition": definition(call_tool("c", "t-b", pt_b), ret())}),
        ("/tools/test-block", {"block": call_endpoint("e", "srv-b", "ep-b", [])}),
        ("/tools/test-block", {"block": call_ai("ai", "cred-b")}),
    ]
    for path, body in runs:
        response = await two.a.post(path, json=body)
        assert response.status_code == 400, response.text
        assert "no " in response.json()["problems"][0]["message"]
        assert "from b" not in response.text and B_SECRET not in response.text
    assert two.upstream.requests == []
    # The owner runs the same block: it reaches the server, with its secret.
    mine = await two.b.post("/tools/test-block", json={
        "block": call_endpoint("e", "srv-b", "ep-b", [])})
    assert mine.status_code == 200 and len(two.upstream.requests) == 1


async def test_the_audit_of_a_workspace_shows_only_its_own_changes(two: Two) -> None:
    admin_a = await two.api.new_key("a", "admin")
    await two.a.post("/tools", json={"id": "t-a"})
    async with two.api.as_key(admin_a) as a_admin:
        trail = (await a_admin.get("/audit")).json()
    assert [(e["type"], e["object"]["id"]) for e in trail] == [("tool.created", "t-a")]
    b_trail = (await two.b.get("/audit")).json()
    assert {e["workspace"] for e in b_trail} == {"b"} and len(b_trail) == 7
