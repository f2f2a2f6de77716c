"""Every /api route needs a valid API key; the OpenAPI document and docs do not."""

from __future__ import annotations

import pytest

from tests.api.support import Api, running_api
from tests.security.routes import api_routes

BAD_HEADERS = [{}, {"Authorization": "Bearer"}, {"Authorization": "Basic YTpi"},
               {"Authorization": "Bearer not-a-key"},
               {"Authorization": "Bearer cfk_0123456789abcdef_" + "A" * 43}]


def assert_unauthorized(status: int, body: dict[str, object], where: str) -> None:
    assert status == 401, where
    assert body["error"] == "unauthorized", where
    assert isinstance(body["message"], str) and body["message"], where


async def test_every_api_route_refuses_a_request_without_a_valid_key(api: Api) -> None:
    routes = api_routes(api.settings)
    async with api.anonymous() as anonymous:
        for method, path in routes:
            for headers in BAD_HEADERS:
                response = await anonymous.request(method, path.removeprefix("/api"),
                                                   headers=headers, json={})
                where = f"{method} {path} {headers}"
                assert_unauthorized(response.status_code, response.json(), where)
                assert response.headers["www-authenticate"] == "Bearer", where


async def test_a_refused_request_changes_nothing(api: Api) -> None:
    async with api.anonymous() as anonymous:
        response = await anonymous.post("/tools", json={"id": "t-sneaky"})
        assert response.status_code == 401
    assert await api.client.xlen(api.keys.registry) == 0
    await api.fails("GET", "/tools/t-sneaky", 404)


async def test_the_openapi_document_declares_bearer_auth_and_is_served_without_a_key(
        api: Api) -> None:
    async with api.anonymous() as anonymous:
        document = (await anonymous.get("/openapi.json")).json()
        docs = await anonymous.get("/docs")
    assert document["components"]["securitySchemes"]["apiKey"] == {
        "type": "http", "scheme": "bearer",
        "description": document["components"]["securitySchemes"]["apiKey"]["description"]}
    assert document["paths"]["/api/tools"]["get"]["security"] == [{"apiKey": []}]
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


async def test_me_names_the_calling_key(api: Api) -> None:
    token = await api.new_key("shop", "editor", name="ci")
    async with api.as_key(token) as editor:
        me = (await editor.get("/me")).json()
    assert me["workspace"] == "shop" and me["role"] == "editor" and me["name"] == "ci"
    assert token.split("_")[1] == me["keyId"]
    assert await api.ok("GET", "/me") == {"keyId": api.key_id, "name": "tests",
                                          "workspace": "default", "role": "admin"}


async def test_a_revoked_key_is_refused_at_once_by_every_api_process(api: Api) -> None:
    from chatflow.handlers.controlplane.apikeys import revoke_api_key

    token = await api.new_key("default", "editor")
    async with running_api(api.settings) as second, api.as_key(token) as first_client, \
            second.as_key(token) as second_client:
        assert (await first_client.get("/tools")).status_code == 200
        assert (await second_client.get("/tools")).status_code == 200
        await revoke_api_key(api.client, api.keys, token.split("_")[1])
        for client in (first_client, second_client):
            response = await client.get("/tools")
            assert_unauthorized(response.status_code, response.json(), "revoked")
            assert "revoked" in response.json()["message"]


async def test_an_expired_key_is_refused(api: Api) -> None:
    from chatflow.handlers.controlplane.apikeys import now_ms

    two_days_ago = now_ms() - 2 * 86_400_000
    expired = await api.new_key("default", "admin", expires_in_days=1, now=two_days_ago)
    live = await api.new_key("default", "admin", expires_in_days=3, now=two_days_ago)
    async with api.as_key(expired) as old, api.as_key(live) as fresh:
        response = await old.get("/tools")
        assert_unauthorized(response.status_code, response.json(), "expired")
        assert "expired" in response.json()["message"]
        assert (await fresh.get("/tools")).status_code == 200


async def test_a_key_records_when_it_was_last_used(api: Api) -> None:
    from chatflow.handlers.controlplane.apikeys import list_api_keys

    token = await api.new_key("default", "viewer")
    key_id = token.split("_")[1]
    before = {k["keyId"]: k for k in await list_api_keys(api.client, api.keys)}
    assert before[key_id]["lastUsedAt"] is None
    async with api.as_key(token) as viewer:
        await viewer.get("/tools")
    after = {k["keyId"]: k for k in await list_api_keys(api.client, api.keys)}
    assert after[key_id]["lastUsedAt"] >= after[key_id]["createdAt"]



def test_the_app_refuses_to_start_with_a_route_that_escapes_authentication(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi import APIRouter, FastAPI

    from chatflow.handlers.api import app as app_module
    from chatflow.handlers.api.auth import unguarded_routes
    from chatflow.handlers.settings import Settings
    from chatflow.runtime.errors import ConfigurationError

    sneaky = APIRouter()

    @sneaky.get("/sneaky")
    async def open_door() -> dict[str, str]:
        return {}

    settings = Settings(redis_url="redis://127.0.0.1:1")
    assert unguarded_routes(app_module.create_app(settings), "/api") == []
    original = app_module.add_edge_middleware

    def include_unguarded(app: FastAPI, settings: Settings) -> None:
        app.include_router(sneaky, prefix="/api")  # as a careless merge would
        original(app, settings)

    monkeypatch.setattr(app_module, "add_edge_middleware", include_unguarded)
    with pytest.raises(ConfigurationError, match=r"\['GET'\] /api/sneaky"):
        app_module.create_app(settings)
