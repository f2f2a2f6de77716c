"""Secrets bound to their origin: moving a server or a credential to another host clears its
secrets, the runtime refuses a secret bound elsewhere, and a redirect that leaves the origin
drops every header marked secret. A loopback "attacker" records what it receives."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from tests.api.support import Api, Upstream
from tests.registry.defs import call_ai, call_endpoint
from tests.support.http import serve_asgi

SERVER_SECRET = "Bearer server-secret-4711"
ENDPOINT_SECRET = "endpoint-secret-0815"
LLM_KEY = "sk-llm-secret-1234"
SECRETS = (SERVER_SECRET, ENDPOINT_SECRET, LLM_KEY)


@pytest.fixture
async def attacker() -> AsyncIterator[Upstream]:
    evil = Upstream()
    async with serve_asgi(evil.app()) as url:
        evil.url = url
        yield evil


def no_secret_in(server: Upstream) -> None:
    seen = json.dumps([vars(r) for r in server.requests], default=str)
    for secret in SECRETS:
        assert secret not in seen


async def shop(api: Api, base_url: str, path: str = "/orders/1") -> None:
    await api.ok("POST", "/integration-servers", 201, json={
        "id": "srv", "name": "Shop", "baseUrl": base_url,
        "headers": [{"name": "Authorization", "value": SERVER_SECRET, "secret": True},
                    {"name": "X-Plain", "value": "plain"}]})
    await api.ok("POST", "/integration-servers/srv/endpoints", 201, json={
        "id": "ep", "name": "getOrder", "path": path,
        "headers": [{"name": "X-Api-Key", "value": ENDPOINT_SECRET, "secret": True}]})


async def test_moving_a_server_to_another_origin_clears_its_secrets_before_a_test_call(
        api: Api, upstream: Upstream, attacker: Upstream) -> None:
    await shop(api, upstream.url)
    moved = await api.ok("PATCH", "/integration-servers/srv", json={"baseUrl": attacker.url})
    assert moved["secretsCleared"] == ["headers.Authorization", "endpoints.ep.headers.X-Api-Key"]
    assert [h["name"] for h in moved["headers"]] == ["X-Plain"]
    run = await api.ok("POST", "/integration-servers/srv/endpoints/ep/test", json={})
    assert run["status"] == 200
    (hit,) = attacker.requests
    assert "authorization" not in hit.headers and "x-api-key" not in hit.headers
    assert hit.headers["x-plain"] == "plain"
    no_secret_in(attacker)
    cache = await api.get_key(api.keys.server("srv"))
    assert SERVER_SECRET not in json.dumps(cache) and ENDPOINT_SECRET not in json.dumps(cache)


async def test_masked_secrets_sent_back_with_a_new_origin_are_cleared_not_carried(
        api: Api, upstream: Upstream, attacker: Upstream) -> None:
    await shop(api, upstream.url)
    masked = (await api.ok("GET", "/integration-servers/srv"))["headers"]
    moved = await api.ok("PATCH", "/integration-servers/srv",
                         json={"baseUrl": attacker.url + "/v2", "headers": masked})
    assert moved["secretsCleared"] == ["headers.Authorization", "endpoints.ep.headers.X-Api-Key"]
    await api.ok("POST", "/integration-servers/srv/endpoints/ep/test", json={})
    await api.ok("POST", "/integration-servers/srv/endpoints/test",
                 json={"endpoint": {"name": "adhoc", "path": "/x"}})
    assert len(attacker.requests) == 2
    no_secret_in(attacker)


async def test_new_secrets_sent_with_the_new_origin_are_kept_and_bound_to_it(
        api: Api, upstream: Upstream, attacker: Upstream) -> None:
    await shop(api, attacker.url)
    moved = await api.ok("PATCH", "/integration-servers/srv", json={
        "baseUrl": upstream.url,
        "headers": [{"name": "Authorization", "value": "Bearer new-one", "secret": True}]})
    assert moved["secretsCleared"] == ["endpoints.ep.headers.X-Api-Key"]
    cache = await api.get_key(api.keys.server("srv"))
    assert cache["secretHeaders"] == {"Authorization": upstream.url}  # http://127.0.0.1:PORT
    await api.ok("POST", "/integration-servers/srv/endpoints/ep/test", json={})
    (hit,) = upstream.requests
    assert hit.headers["authorization"] == "Bearer new-one"
    assert not attacker.requests


async def test_moving_a_credential_clears_its_api_key_before_a_call_ai_test_block(
        api: Api, upstream: Upstream, attacker: Upstream) -> None:
    await api.ok("POST", "/llm-credentials", 201, json={
        "id": "cred", "name": "llm", "baseUrl": upstream.url + "/v1", "apiKey": LLM_KEY})
    moved = await api.ok("PATCH", "/llm-credentials/cred", json={"baseUrl": attacker.url + "/v1"})
    assert moved["secretsCleared"] == ["apiKey"] and moved["apiKey"] is None
    run = await api.ok("POST", "/tools/test-block",
                       json={"block": call_ai("ai", "cred"), "variables": {}})
    assert not run["ok"] and run["error"]["code"] == "llm_credential_no_key"
    assert not attacker.requests and not upstream.requests
    rotated = await api.ok("PATCH", "/llm-credentials/cred",
                           json={"baseUrl": attacker.url, "apiKey": "sk-for-the-new-host"})
    assert rotated["secretsCleared"] == []
    cache = await api.get_key(api.keys.llm_credential("cred"))
    assert cache["apiKey"] == "sk-for-the-new-host" and cache["apiKeyOrigin"] == attacker.url


async def test_a_stale_projection_cannot_send_a_secret_to_another_origin(
        api: Api, upstream: Upstream, attacker: Upstream) -> None:
    """Second line of defence: a cache written by an older process, or tampered with, that
    points a secret at another host is refused at send time, for callEndpoint and callAI."""
    await shop(api, upstream.url)
    await api.ok("POST", "/llm-credentials", 201, json={
        "id": "cred", "name": "llm", "baseUrl": upstream.url, "apiKey": LLM_KEY})
    server = await api.get_key(api.keys.server("srv"))
    await api.client.set(api.keys.server("srv"), json.dumps({**server, "baseUrl": attacker.url}))
    cred = await api.get_key(api.keys.llm_credential("cred"))
    await api.client.set(api.keys.llm_credential("cred"),
                         json.dumps({**cred, "baseUrl": attacker.url}))
    block = call_endpoint("c", "srv", "ep", [])
    endpoint_run = await api.ok("POST", "/tools/test-block", json={"block": block})
    ai_run = await api.ok("POST", "/tools/test-block", json={"block": call_ai("ai", "cred")})
    assert endpoint_run["error"]["code"] == "secret_origin_mismatch"
    assert "Authorization, X-Api-Key" in endpoint_run["error"]["message"]
    assert ai_run["error"]["code"] == "secret_origin_mismatch"
    assert not attacker.requests and not upstream.requests
    no_secret_in(attacker)


@pytest.fixture
async def redirector(attacker: Upstream) -> AsyncIterator[str]:
    """An API whose /moved answers 302 to the attacker, and /here to itself."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    async def moved(_request: Request) -> Response:
        return RedirectResponse(attacker.url + "/collect", status_code=302)

    async def here(_request: Request) -> Response:
        return RedirectResponse("/echo", status_code=307)

    async def echo(request: Request) -> Response:
        return JSONResponse({"key": request.headers.get("x-api-key")})

    app = Starlette(routes=[Route("/moved", moved), Route("/here", here),
                            Route("/echo", echo, methods=["GET", "POST"])])
    async with serve_asgi(app) as url:
        yield url


async def test_a_cross_origin_redirect_drops_every_secret_header(
        api: Api, redirector: str, attacker: Upstream) -> None:
    await shop(api, redirector, path="/moved")
    run = await api.ok("POST", "/integration-servers/srv/endpoints/ep/test", json={})
    assert run["status"] == 200
    (hit,) = attacker.requests
    assert hit.path == "/collect"
    assert "x-api-key" not in hit.headers and "authorization" not in hit.headers
    assert hit.headers["x-plain"] == "plain"
    no_secret_in(attacker)


async def test_a_same_origin_redirect_keeps_the_secret_headers(api: Api, redirector: str) -> None:
    await shop(api, redirector, path="/here")
    run = await api.ok("POST", "/integration-servers/srv/endpoints/ep/test", json={})
    # The target echoed the header it got: the secret itself (a missing header echoes null),
    # shown masked to whoever pressed Test.
    assert run["body"] == {"key": "***"}


async def test_the_mask_sent_back_as_an_api_key_keeps_the_stored_key(
        api: Api, upstream: Upstream) -> None:
    await api.ok("POST", "/llm-credentials", 201, json={
        "id": "cred", "name": "llm", "baseUrl": upstream.url, "apiKey": LLM_KEY})
    view = await api.ok("GET", "/llm-credentials/cred")
    kept = await api.ok("PATCH", "/llm-credentials/cred",
                        json={"apiKey": view["apiKey"], "name": "renamed"})
    assert kept["name"] == "renamed" and kept["secretsCleared"] == []
    cache = await api.get_key(api.keys.llm_credential("cred"))
    assert cache["apiKey"] == LLM_KEY
    run = await api.ok("POST", "/tools/test-block", json={"block": call_ai("ai", "cred")})
    (hit,) = upstream.requests
    assert hit.headers["authorization"] == f"Bearer {LLM_KEY}"
    assert run["error"]["code"] == "llm_bad_response"  # the echo server is no model: no 500


async def test_the_mask_is_refused_where_there_is_no_stored_secret_to_keep(api: Api) -> None:
    mask = "••••••••"
    body = await api.fails("POST", "/llm-credentials", 400,
                           json={"name": "x", "apiKey": mask})
    assert body["error"] == "mask_is_not_a_secret"
    body = await api.fails("POST", "/integration-servers", 400, json={
        "name": "s", "baseUrl": "http://127.0.0.1:9",
        "headers": [{"name": "Authorization", "value": mask, "secret": True}]})
    assert body["error"] == "mask_is_not_a_secret" and "headers[0].value" in body["message"]

