"""A registry log written before workspaces (events with neither workspace nor actor) folds
into workspace ``default`` on upgrade: nothing is rewritten, and other workspaces see none."""

from __future__ import annotations

import json

from chatflow.handlers.redis_client import make_client
from tests.api.support import Api, api_settings, running_api
from tests.registry.defs import call_tool, definition, ret, returning

OLD_EVENTS = [
    {"type": "tool.created", "at": 1_700_000_000_000, "tool": {
        "id": "t-old", "name": "Old", "description": None, "kind": "custom", "nativeName": None,
        "definition": returning("old")}},
    {"type": "tool.published", "at": 1_700_000_001_000, "id": "t-old",
     "publishedToolId": "pt-old", "name": "Old", "definition": returning("old")},
    {"type": "tool.created", "at": 1_700_000_002_000, "tool": {
        "id": "n-old", "name": "Native", "description": None, "kind": "native",
        "nativeName": "lookup", "definition": None}},
    {"type": "server.created", "at": 1_700_000_003_000, "server": {
        "id": "srv-old", "name": "Old", "baseUrl": "http://127.0.0.1:9", "description": None,
        "headers": []}},
    {"type": "endpoint.created", "at": 1_700_000_004_000, "serverId": "srv-old", "endpoint": {
        "id": "ep-old", "name": "get", "path": "/x", "method": "GET", "headers": [],
        "bodyTemplate": None, "params": []}},
    {"type": "agent.linked", "at": 1_700_000_005_000, "agentId": "agent-old", "toolId": "t-old"},
]

OLD_VERSIONS = {"tool:t-old": "2", "graph": "1", "tool:n-old": "1", "native:lookup": "n-old",
                "server:srv-old": "2", "agent:agent-old": "1"}


async def test_an_old_registry_log_folds_into_the_default_workspace(redis_url: str,
                                                                    prefix: str) -> None:
    settings = api_settings(redis_url, prefix)
    client = make_client(redis_url)
    for event in OLD_EVENTS:  # as an older release wrote them, before the API starts
        await client.xadd(f"{prefix}stream:registry", {"data": json.dumps(event)})
    # ... with the versions its append script kept (docs/registry.md, Concurrency)
    await client.hset(f"{{{prefix}stream:registry}}:versions", mapping=OLD_VERSIONS)
    await client.aclose()
    async with running_api(settings) as api:
        await check_default_owns_the_old_objects(api)


async def check_default_owns_the_old_objects(api: Api) -> None:
    tools = await api.ok("GET", "/tools")
    assert [(t["id"], t["workspace"], t["publishedToolId"]) for t in tools] == [
        ("t-old", "default", "pt-old")]
    assert [t["nativeName"] for t in await api.ok("GET", "/tools/native")] == ["lookup"]
    assert (await api.ok("GET", "/integration-servers/srv-old"))["workspace"] == "default"
    assert [t["toolId"] for t in (await api.ok("GET", "/ai-agents/agent-old"))["tools"]] == [
        "t-old"]
    assert (await api.get_key(api.keys.tool("pt-old")))["toolId"] == "t-old"  # runtime key kept
    # A new default tool may call the old one, and the old native name is still taken there.
    await api.ok("POST", "/tools", 201, json={"id": "t-new", "definition": definition(
        call_tool("c", "t-old", "pt-old"), ret())})
    await api.ok("POST", "/tools/t-new/publish")
    taken = await api.fails("POST", "/tools", 409, json={"id": "n-new", "kind": "native",
                                                         "nativeName": "lookup"})
    assert taken["error"] == "native_name_taken"
    trail = await api.ok("GET", "/audit", params={"until": "1700000009000"})
    assert [(e["type"], e["workspace"], e["actor"]) for e in trail[:2]] == [
        ("tool.created", "default", None), ("tool.published", "default", None)]
    # Another workspace sees none of it, and can take the same nativeName.
    async with api.as_key(await api.new_key("other", "admin")) as other:
        assert (await other.get("/tools")).json() == []
        assert (await other.get("/tools/t-old")).status_code == 404
        assert (await other.get("/integration-servers")).json() == []
        assert (await other.get("/ai-agents/agent-old")).json()["tools"] == []
        made = await other.post("/tools", json={"id": "n-other", "kind": "native",
                                                "nativeName": "lookup"})
        assert made.status_code == 201, made.text
