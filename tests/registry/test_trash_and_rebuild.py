"""The trash, deleting for good, projections and their rebuild from the registry log."""

from __future__ import annotations

import json

from chatflow.handlers.redis_client import make_client
from chatflow.handlers.registry import Registry
from chatflow.handlers.registry.crypto import SecretBox
from tests.api.support import ENCRYPTION_KEY, Api, running_api
from tests.registry.defs import call_tool, definition, returning
from tests.registry.test_publish_validation import draft, published


async def test_publishing_writes_the_published_tool_under_its_own_id_with_no_ttl(api: Api) -> None:
    pt = await published(api, "t-pub", returning("hello"))
    record = await api.get_key(api.keys.tool(pt))
    assert record == {"id": pt, "toolId": "t-pub", "name": "t-pub",
                      "definition": returning("hello"), "workspace": "default"}
    assert await api.client.ttl(api.keys.tool(pt)) == -1


async def test_republishing_keeps_the_published_id_and_replaces_the_cached_definition(
        api: Api) -> None:
    pt = await published(api, "t-re", returning("v1"))
    await api.ok("PATCH", "/tools/t-re", json={"definition": returning("v2")})
    assert (await api.ok("GET", "/tools/t-re"))["status"] == "modified"
    again = await api.ok("POST", "/tools/t-re/publish")
    assert again["publishedToolId"] == pt and again["status"] == "published"
    assert (await api.get_key(api.keys.tool(pt)))["definition"] == returning("v2")


async def test_publishing_and_trashing_delete_the_legacy_key_under_the_tool_id(api: Api) -> None:
    await draft(api, "t-legacy", returning())
    await api.client.set(api.keys.tool("t-legacy"), json.dumps({"old": True}))
    await api.ok("POST", "/tools/t-legacy/publish")
    assert await api.client.exists(api.keys.tool("t-legacy")) == 0
    await api.client.set(api.keys.tool("t-legacy"), json.dumps({"old": True}))
    await api.ok("DELETE", "/tools/t-legacy")
    assert await api.client.exists(api.keys.tool("t-legacy")) == 0


async def test_trash_removes_the_cache_key_and_restore_brings_it_back(api: Api) -> None:
    pt = await published(api, "t-bin")
    trashed = await api.ok("DELETE", "/tools/t-bin")
    assert trashed["deletedAt"]
    assert await api.client.exists(api.keys.tool(pt)) == 0
    await api.fails("GET", "/tools/t-bin", 404)
    listed = await api.ok("GET", "/tools", params={"includeDeleted": "true"})
    assert [t["id"] for t in listed] == ["t-bin"]
    assert await api.ok("GET", "/tools") == []
    restored = await api.ok("POST", "/tools/t-bin/restore")
    assert restored["deletedAt"] is None
    assert (await api.get_key(api.keys.tool(pt)))["toolId"] == "t-bin"


async def test_a_rebuild_replays_the_log_and_does_not_revive_a_trashed_tool(api: Api) -> None:
    live = await published(api, "t-live")
    dead = await published(api, "t-dead")
    await api.ok("DELETE", "/tools/t-dead")
    # Projections lost or stale: a stray copy of the trashed tool, the live one gone.
    await api.client.set(api.keys.tool(dead), json.dumps({"stale": True}))
    await api.client.delete(api.keys.tool(live), api.keys.registry_view("tools"))
    client = make_client(api.settings.redis_url or "")
    try:
        registry = Registry(client, api.keys, SecretBox(ENCRYPTION_KEY))
        events = await registry.rebuild()
    finally:
        await client.aclose()
    assert events == 5
    assert (await api.get_key(api.keys.tool(live)))["toolId"] == "t-live"
    assert await api.client.exists(api.keys.tool(dead)) == 0
    listed = await api.ok("GET", "/tools", params={"includeDeleted": "true"})
    assert {t["id"]: bool(t["deletedAt"]) for t in listed} == {"t-live": False, "t-dead": True}


async def test_projections_are_rebuilt_at_start_up_when_they_are_missing(api: Api) -> None:
    pt = await published(api, "t-boot")
    await api.client.delete(api.keys.tool(pt), api.keys.registry_projected,
                            api.keys.registry_view("tools"))
    async with running_api(api.settings) as second:
        assert (await second.get_key(second.keys.tool(pt)))["toolId"] == "t-boot"
        assert [t["id"] for t in await second.ok("GET", "/tools")] == ["t-boot"]


async def test_permanent_delete_needs_the_tool_in_the_trash_first(api: Api) -> None:
    await published(api, "t-keep")
    body = await api.fails("DELETE", "/tools/t-keep/permanent", 400)
    assert body["error"] == "not_in_trash"


async def test_permanent_delete_is_refused_while_a_live_published_tool_calls_it(api: Api) -> None:
    pt = await published(api, "t-callee")
    await published(api, "t-caller", definition(call_tool("c", "t-callee", pt), returning()
                                                ["blocks"]["r"]))
    await api.ok("DELETE", "/tools/t-callee")
    body = await api.fails("DELETE", "/tools/t-callee/permanent", 409)
    assert body["callers"] == [{"id": "t-caller", "name": "t-caller"}]
    assert "t-caller" in body["message"]
    # A caller in the trash does not block (two discards would lock each other).
    await api.ok("DELETE", "/tools/t-caller")
    assert (await api.ok("DELETE", "/tools/t-callee/permanent"))["deleted"] is True
    await api.fails("GET", "/tools/t-callee", 404)
    assert await api.client.exists(api.keys.tool(pt)) == 0


async def test_execution_history_survives_permanent_delete(api: Api) -> None:
    pt = await published(api, "t-history")
    await api.client.xadd(api.keys.executions, {"data": json.dumps(
        {"toolId": "t-history", "publishedToolId": pt, "durationMs": 3, "success": True,
         "occurredAt": "2026-01-01T00:00:00Z"})})
    await api.ok("DELETE", "/tools/t-history")
    await api.ok("DELETE", "/tools/t-history/permanent")
    history = await api.client.xrange(api.keys.executions)
    assert [json.loads(f[b"data"])["toolId"] for _id, f in history] == ["t-history"]


async def test_agent_links_survive_the_trash_and_agent_caches_follow_it(api: Api) -> None:
    await published(api, "t-agent-tool", returning())
    await api.ok("PATCH", "/tools/t-agent-tool", json={"description": "Looks up a CEP"})
    await api.ok("PUT", "/ai-agents/ag-1/tools/t-agent-tool")
    await api.ok("PUT", "/ai-agents/ag-2/tools/t-agent-tool")

    async def cached(agent: str) -> list[str]:
        value = await api.get_key(api.keys.ai_agent(agent))
        return [t["toolId"] for t in value["tools"]] if value else []

    assert await cached("ag-1") == ["t-agent-tool"]
    await api.ok("DELETE", "/tools/t-agent-tool")
    assert await cached("ag-1") == [] and await cached("ag-2") == []
    await api.ok("POST", "/tools/t-agent-tool/restore")
    assert await cached("ag-1") == ["t-agent-tool"] and await cached("ag-2") == ["t-agent-tool"]
    agent = await api.ok("GET", "/ai-agents/ag-1")
    assert agent["tools"][0]["description"] == "Looks up a CEP"
    await api.ok("DELETE", "/tools/t-agent-tool")
    await api.ok("DELETE", "/tools/t-agent-tool/permanent")
    assert await api.client.exists(api.keys.ai_agent("ag-1")) == 0


async def test_two_api_processes_see_each_other_and_never_lose_an_update(api: Api) -> None:
    await draft(api, "t-shared", returning())
    async with running_api(api.settings) as other:
        first = await api.ok("PATCH", "/tools/t-shared", json={"name": "A", "version": 1})
        assert first["version"] == 2
        stale = await other.fails("PATCH", "/tools/t-shared", 409,
                                  json={"name": "B", "version": 1})
        assert stale["error"] == "version_conflict"
        assert (await other.ok("GET", "/tools/t-shared"))["name"] == "A"
        await other.ok("PATCH", "/tools/t-shared", json={"name": "B"})
    assert (await api.ok("GET", "/tools/t-shared"))["name"] == "B"


async def test_concurrent_appends_from_two_registries_all_land_in_order(api: Api) -> None:
    import asyncio

    await draft(api, "t-race", returning())
    clients = [make_client(api.settings.redis_url or "") for _ in range(2)]
    registries = [Registry(c, api.keys, SecretBox(ENCRYPTION_KEY)) for c in clients]
    from chatflow.handlers.registry.models import ToolPatch
    from chatflow.handlers.registry.tools import ToolOps

    try:
        ops = [ToolOps(r) for r in registries]
        await asyncio.gather(*(ops[i % 2].save("t-race", ToolPatch(description=str(i)))
                               for i in range(10)))
        await registries[0].catch_up()
        assert registries[0].state.tools["t-race"]["version"] == 11
        versions = await api.client.hget(api.keys.registry_versions, "tool:t-race")
        assert versions == b"11"
    finally:
        for c in clients:
            await c.aclose()
