"""/integration-servers and /llm-credentials over real HTTP, with a real upstream API."""

from __future__ import annotations

from tests.api.support import Api, Upstream
from tests.registry.defs import call_ai, call_endpoint, definition, ret

SERVER = {"id": "srv-1", "name": "Shop", "baseUrl": "http://127.0.0.1:9",
          "headers": [{"name": "Authorization", "value": "Bearer top-secret-1", "secret": True}]}
ENDPOINT = {"id": "ep-1", "name": "getPet", "path": "/pets/{petId}", "method": "GET",
            "params": [{"name": "petId", "in": "route", "required": True}]}


async def using_tool(api: Api, server: str, endpoint: str) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-user", "name": "User",
                                              "definition": definition(call_endpoint(
                                                  "c", server, endpoint, []), ret())})


async def test_servers_are_created_listed_with_endpoints_and_usage(api: Api) -> None:
    created = await api.ok("POST", "/integration-servers", 201, json=SERVER)
    assert created["headers"][0]["value"] != "Bearer top-secret-1"
    await api.ok("POST", "/integration-servers/srv-1/endpoints", 201, json=ENDPOINT)
    await using_tool(api, "srv-1", "ep-1")
    (listed,) = await api.ok("GET", "/integration-servers")
    assert [e["id"] for e in listed["endpoints"]] == ["ep-1"]
    assert listed["usedBy"] == [{"toolId": "t-user", "name": "User"}]
    assert listed["metrics"] == {"endpoints": 1, "usedBy": 1}


async def test_post_server_answers_400_and_409(api: Api) -> None:
    await api.fails("POST", "/integration-servers", 400, json={"name": "x", "baseUrl": "ftp://x"})
    await api.fails("POST", "/integration-servers", 400, json={"baseUrl": "http://x"})
    await api.ok("POST", "/integration-servers", 201, json=SERVER)
    await api.fails("POST", "/integration-servers", 409, json=SERVER)


async def test_patch_server_updates_and_keeps_a_masked_secret_on_the_same_origin(
        api: Api) -> None:
    created = await api.ok("POST", "/integration-servers", 201, json=SERVER)
    masked = created["headers"]
    updated = await api.ok("PATCH", "/integration-servers/srv-1",
                           json={"baseUrl": "http://127.0.0.1:9/v2", "headers": masked})
    assert updated["baseUrl"] == "http://127.0.0.1:9/v2"
    assert updated["secretsCleared"] == []
    cache = await api.get_key(api.keys.server("srv-1"))
    assert cache["headers"] == {"Authorization": "Bearer top-secret-1"}
    await api.fails("PATCH", "/integration-servers/srv-1", 400, json={"baseUrl": "nope"})
    await api.fails("PATCH", "/integration-servers/srv-x", 404, json={"name": "x"})
    await api.fails("PATCH", "/integration-servers/srv-1", 409, json={"name": "y", "version": 1})


async def test_delete_server_refuses_while_a_tool_uses_it(api: Api) -> None:
    await api.ok("POST", "/integration-servers", 201, json=SERVER)
    await api.ok("POST", "/integration-servers/srv-1/endpoints", 201, json=ENDPOINT)
    await using_tool(api, "srv-1", "ep-1")
    body = await api.fails("DELETE", "/integration-servers/srv-1", 409)
    assert body["usedBy"] == [{"id": "t-user", "name": "User"}]
    await api.ok("DELETE", "/tools/t-user")
    await api.ok("DELETE", "/integration-servers/srv-1")
    assert await api.client.exists(api.keys.server("srv-1")) == 0
    await api.fails("DELETE", "/integration-servers/srv-1", 404)


async def test_endpoint_routes_answer_happy_400_404_and_409(api: Api) -> None:
    await api.fails("GET", "/integration-servers/srv-1/endpoints", 404)
    await api.fails("POST", "/integration-servers/srv-1/endpoints", 404, json=ENDPOINT)
    await api.ok("POST", "/integration-servers", 201, json=SERVER)
    await api.fails("POST", "/integration-servers/srv-1/endpoints", 400,
                    json={**ENDPOINT, "method": "FETCH"})
    await api.ok("POST", "/integration-servers/srv-1/endpoints", 201, json=ENDPOINT)
    await api.fails("POST", "/integration-servers/srv-1/endpoints", 409, json=ENDPOINT)
    patched = await api.ok("PATCH", "/integration-servers/srv-1/endpoints/ep-1",
                           json={"path": "/v2/pets/{petId}"})
    assert patched["path"] == "/v2/pets/{petId}"
    cache = await api.get_key(api.keys.server("srv-1"))
    assert cache["endpoints"]["ep-1"]["path"] == "/v2/pets/{petId}"
    await api.fails("PATCH", "/integration-servers/srv-1/endpoints/ep-1", 400,
                    json={"params": [{"name": "a", "in": "header"}]})
    await api.fails("PATCH", "/integration-servers/srv-1/endpoints/ep-x", 404, json={})
    await api.fails("PATCH", "/integration-servers/srv-1/endpoints/ep-1", 409,
                    json={"name": "x", "version": 1})
    assert [e["id"] for e in await api.ok("GET", "/integration-servers/srv-1/endpoints")] == [
        "ep-1"]
    await using_tool(api, "srv-1", "ep-1")
    await api.fails("DELETE", "/integration-servers/srv-1/endpoints/ep-1", 409)
    await api.ok("DELETE", "/tools/t-user")
    await api.ok("DELETE", "/integration-servers/srv-1/endpoints/ep-1")
    await api.fails("DELETE", "/integration-servers/srv-1/endpoints/ep-1", 404)


async def test_a_saved_endpoint_runs_against_the_real_api(api: Api, upstream: Upstream) -> None:
    await api.ok("POST", "/integration-servers", 201, json={**SERVER, "baseUrl": upstream.url})
    await api.ok("POST", "/integration-servers/srv-1/endpoints", 201, json=ENDPOINT)
    result = await api.ok("POST", "/integration-servers/srv-1/endpoints/ep-1/test", json={
        "paramMappings": [{"name": "petId", "in": "route", "value": "{{pet}}"}],
        "variables": {"pet": 42}})
    assert result["ok"] and result["status"] == 200
    assert result["body"]["path"] == "/pets/42"
    assert upstream.requests[0].headers["authorization"] == "Bearer top-secret-1"
    assert "top-secret-1" not in str(result["url"])
    await api.fails("POST", "/integration-servers/srv-1/endpoints/ep-x/test", 404, json={})
    await api.fails("POST", "/integration-servers/srv-1/endpoints/ep-1/test", 400,
                    json={"paramMappings": [{"name": "x"}]})


async def test_an_ad_hoc_endpoint_runs_against_the_real_api(api: Api, upstream: Upstream) -> None:
    await api.ok("POST", "/integration-servers", 201, json={**SERVER, "baseUrl": upstream.url})
    result = await api.ok("POST", "/integration-servers/srv-1/endpoints/test", json={
        "endpoint": {"name": "adhoc", "path": "/search", "method": "POST",
                     "bodyTemplate": {"page": 1}},
        "paramMappings": [{"name": "q", "in": "query", "value": "cats"},
                          {"name": "size", "in": "body", "value": "10"}]})
    # The upstream got the secret header; its echo of it comes back masked (the one masking
    # policy: a stored secret value is masked wherever it appears).
    assert upstream.requests[-1].headers["authorization"] == "Bearer top-secret-1"
    assert result["body"] == {"method": "POST", "path": "/search", "query": {"q": "cats"},
                              "body": {"page": 1, "size": "10"}, "auth": "***"}
    failing = await api.ok("POST", "/integration-servers/srv-1/endpoints/test", json={
        "endpoint": {"name": "bad", "path": "/status/404"}})
    assert failing["ok"] is False and failing["status"] == 404
    assert failing["error"]["code"] == "http_status"
    await api.fails("POST", "/integration-servers/srv-x/endpoints/test", 404,
                    json={"endpoint": {"name": "x"}})
    await api.fails("POST", "/integration-servers/srv-1/endpoints/test", 400, json={})


async def test_llm_credentials_are_stored_encrypted_and_cached_in_clear(api: Api) -> None:
    created = await api.ok("POST", "/llm-credentials", 201, json={
        "id": "cred-1", "name": "OpenAI", "baseUrl": "http://127.0.0.1:9/v1",
        "apiKey": "sk-live-abcdef"})
    assert "sk-live-abcdef" not in str(created)
    cache = await api.get_key(api.keys.llm_credential("cred-1"))
    assert cache == {"id": "cred-1", "workspace": "default", "name": "OpenAI", "provider": "openai",
                     "baseUrl": "http://127.0.0.1:9/v1", "apiKey": "sk-live-abcdef",
                     "apiKeyOrigin": "http://127.0.0.1:9"}
    log = await api.client.xrange(api.keys.registry)
    assert all(b"sk-live-abcdef" not in f[b"data"] for _id, f in log)
    await api.ok("PATCH", "/llm-credentials/cred-1", json={"apiKey": "sk-live-rotated"})
    assert (await api.get_key(api.keys.llm_credential("cred-1")))["apiKey"] == "sk-live-rotated"
    await api.fails("POST", "/llm-credentials", 409, json={"id": "cred-1", "name": "x",
                                                           "apiKey": "k"})
    await api.fails("POST", "/llm-credentials", 400, json={"name": "x", "apiKey": ""})
    await api.fails("GET", "/llm-credentials/cred-x", 404)
    await api.ok("POST", "/tools", 201, json={"id": "t-ai", "definition": definition(
        call_ai("ai", "cred-1"), ret())})
    await api.ok("POST", "/tools/t-ai/publish")
    await api.fails("DELETE", "/llm-credentials/cred-1", 409)
    await api.ok("DELETE", "/tools/t-ai")
    await api.ok("DELETE", "/llm-credentials/cred-1")
    assert await api.client.exists(api.keys.llm_credential("cred-1")) == 0
