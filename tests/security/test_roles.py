"""Roles: a viewer reads and never writes nor sees a secret; only an admin reads the audit."""

from __future__ import annotations

from tests.api.support import Api
from tests.security.routes import api_routes

SERVER_SECRET = "srv-secret-4c1d"
LLM_KEY = "sk-llm-secret-9e2a"
MASK = "••••••••"


async def seed_secrets(api: Api) -> None:
    await api.ok("POST", "/integration-servers", 201, json={
        "id": "srv-1", "name": "Shop", "baseUrl": "http://127.0.0.1:9",
        "headers": [{"name": "Authorization", "value": SERVER_SECRET, "secret": True},
                    {"name": "Accept", "value": "application/json"}]})
    await api.ok("POST", "/integration-servers/srv-1/endpoints", 201, json={
        "id": "ep-1", "name": "get", "path": "/x",
        "headers": [{"name": "X-Api-Key", "value": SERVER_SECRET, "secret": True}]})
    await api.ok("POST", "/llm-credentials", 201, json={"id": "cred-1", "name": "openai",
                                                        "apiKey": LLM_KEY})


async def test_a_viewer_key_cannot_make_any_write(api: Api) -> None:
    await seed_secrets(api)
    await api.ok("POST", "/tools", 201, json={"id": "x-1"})
    writes = [(m, p) for m, p in api_routes(api.settings) if m != "GET"]
    assert len(writes) > 20
    events = await api.client.xlen(api.keys.registry)
    async with api.as_key(await api.new_key("default", "viewer")) as viewer:
        for method, path in writes:
            response = await viewer.request(method, path.removeprefix("/api"), json={})
            assert response.status_code == 403, (method, path, response.text)
            assert response.json()["error"] == "forbidden"
            assert "viewer" in response.json()["message"]
    assert await api.client.xlen(api.keys.registry) == events


async def test_a_viewer_reads_but_never_sees_a_secret_not_even_masked(api: Api) -> None:
    await seed_secrets(api)
    async with api.as_key(await api.new_key("default", "viewer")) as viewer:
        bodies = [await viewer.get(path) for path in (
            "/integration-servers", "/integration-servers/srv-1",
            "/integration-servers/srv-1/endpoints", "/llm-credentials",
            "/llm-credentials/cred-1")]
    for response in bodies:
        assert response.status_code == 200, response.text
        for hidden in (SERVER_SECRET, LLM_KEY, MASK, "apiKey"):
            assert hidden not in response.text, (hidden, response.text)
    server = bodies[1].json()
    assert server["headers"] == [{"name": "Authorization", "secret": True},
                                 {"name": "Accept", "value": "application/json", "secret": False}]
    # An editor still sees the mask, which means "keep" when sent back.
    assert (await api.ok("GET", "/llm-credentials/cred-1"))["apiKey"] == MASK


async def test_an_editor_writes_but_cannot_read_the_audit(api: Api) -> None:
    async with api.as_key(await api.new_key("default", "editor")) as editor:
        assert (await editor.post("/tools", json={"id": "t-ed"})).status_code == 201
        for role_key in (editor,):
            response = await role_key.get("/audit")
            assert response.status_code == 403
            assert response.json()["error"] == "forbidden"
    async with api.as_key(await api.new_key("default", "viewer")) as viewer:
        assert (await viewer.get("/audit")).status_code == 403


async def test_the_audit_says_which_key_made_each_change_filtered_by_object_and_time(
        api: Api) -> None:
    editor_token = await api.new_key("default", "editor", name="ed")
    editor_id = editor_token.split("_")[1]
    async with api.as_key(editor_token) as editor:
        await editor.post("/tools", json={"id": "t-a", "definition": {
            "blocks": {"r": {"id": "r", "type": "return", "value": "1"}},
            "onboardingBlockId": "r"}})
        await editor.post("/tools/t-a/publish")
    await api.ok("POST", "/tools", 201, json={"id": "t-b"})
    await seed_secrets(api)
    trail = await api.ok("GET", "/audit")
    assert [(e["type"], e["object"]["id"], e["actor"]) for e in trail[:3]] == [
        ("tool.created", "t-a", editor_id), ("tool.published", "t-a", editor_id),
        ("tool.created", "t-b", api.key_id)]
    assert all(e["workspace"] == "default" for e in trail)
    assert SERVER_SECRET not in str(trail) and LLM_KEY not in str(trail)
    assert "iv" not in str([e.keys() for e in trail])
    only_a = await api.ok("GET", "/audit", params={"objectId": "t-a"})
    assert [e["type"] for e in only_a] == ["tool.created", "tool.published"]
    endpoint = await api.ok("GET", "/audit", params={"objectId": "ep-1"})
    assert [e["type"] for e in endpoint] == ["endpoint.created"]
    last = trail[-1]["at"]  # ISO 8601, as the trail shows it
    assert [e["id"] for e in await api.ok("GET", "/audit", params={"since": last})] == [
        e["id"] for e in trail if e["at"] >= last]
    first = trail[0]["at"]
    assert [e["id"] for e in await api.ok("GET", "/audit", params={"until": first})] == [
        e["id"] for e in trail if e["at"] <= first]
    assert await api.ok("GET", "/audit", params={"since": "2999-01-01T00:00:00Z"}) == []
    bad = await api.fails("GET", "/audit", 400, params={"since": "yesterday"})
    assert "since" in bad["message"]


async def test_an_admin_manages_the_keys_of_its_own_workspace_only(api: Api) -> None:
    made = await api.ok("POST", "/keys", 201, json={"role": "viewer", "name": "dash"})
    assert made["workspace"] == "default" and made["role"] == "viewer"
    async with api.as_key(made["token"]) as viewer:
        assert (await viewer.get("/me")).json()["keyId"] == made["keyId"]
        listed = await api.ok("GET", "/keys")
        assert {k["keyId"] for k in listed} == {api.key_id, made["keyId"]}
        assert "token" not in str(listed) and made["token"] not in str(listed)
        other = await api.new_key("other", "viewer")
        await api.fails("DELETE", f"/keys/{other.split('_')[1]}", 404)
        await api.ok("DELETE", f"/keys/{made['keyId']}")
        assert (await viewer.get("/me")).status_code == 401
    async with api.as_key(await api.new_key("default", "editor")) as editor:
        assert (await editor.get("/keys")).status_code == 403
        assert (await editor.post("/keys", json={"role": "admin"})).status_code == 403


async def test_a_viewer_key_reads_every_route_but_the_admin_ones(api: Api) -> None:
    await seed_secrets(api)
    reads = [(m, p) for m, p in api_routes(api.settings) if m == "GET"]
    async with api.as_key(await api.new_key("default", "viewer")) as viewer:
        for method, path in reads:
            expected = {403} if path in ("/api/audit", "/api/keys") else {200, 404}
            if path.endswith("/history"):  # no CHATFLOW_HISTORY_URL here: says so, to anyone
                expected = {503}
            async with viewer.stream(method, path.removeprefix("/api")) as response:
                # An event stream never ends: its status is the whole answer.
                live = response.headers.get("content-type", "").startswith("text/event-stream")
                body = "" if live else (await response.aread()).decode()
                assert response.status_code in expected, (path, body)
