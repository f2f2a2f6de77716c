"""Limits in front of every route: body size, JSON depth, Host allowlist, CORS off."""

from __future__ import annotations

import httpx

from tests.api.support import Api, api_settings, running_api


async def test_a_body_over_the_limit_answers_413_in_the_api_error_shape(
        redis_url: str, prefix: str) -> None:
    settings = api_settings(redis_url, prefix, api_max_body_bytes=4096)
    async with running_api(settings) as api:
        big = {"id": "t-big", "description": "x" * 5000}
        response = await api.http.post("/tools", json=big)
        assert response.status_code == 413
        assert response.json()["error"] == "body_too_large"
        assert response.content.startswith(b'{"error": "body_too_large", "message": "the request')
        assert "4096" in response.json()["message"]

        async def chunks():  # no Content-Length: the cap holds while the body streams
            for _ in range(10):
                yield b"x" * 1000

        streamed = await api.http.post("/tools", content=chunks(),
                                       headers={"content-type": "application/json"})
        assert streamed.status_code == 413
        small = await api.http.post("/tools", json={"id": "t-small"})
        assert small.status_code == 201
        assert (await api.http.get("/tools/t-big")).status_code == 404


async def test_json_nested_too_deep_answers_400_naming_the_depth(api: Api) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    body = '{"id": "t-deep", "definition": {"blocks": ' + deep + "}}"
    response = await api.http.post("/tools", content=body,
                                   headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "nests deeper than 64 levels" in response.json()["message"]
    untyped = await api.http.post("/tools", content=body, headers={"content-type": ""})
    assert untyped.status_code == 400, untyped.text
    strings = {"id": "t-str", "description": "[" * 5000}  # brackets inside strings do not count
    assert (await api.http.post("/tools", json=strings)).status_code == 201


async def test_only_allowed_host_headers_are_answered(redis_url: str, prefix: str) -> None:
    settings = api_settings(redis_url, prefix, api_allowed_hosts="127.0.0.1, api.example.com")
    async with running_api(settings) as api:
        assert (await api.http.get("/me")).status_code == 200
        evil = await api.http.get("/me", headers={"host": "rebind.attacker.example"})
        assert evil.status_code == 400
        named = await api.http.get("/me", headers={"host": "api.example.com"})
        assert named.status_code == 200


async def test_cors_is_off_by_default_and_on_for_named_origins(api: Api, redis_url: str,
                                                               prefix: str) -> None:
    preflight = {"origin": "https://evil.example", "access-control-request-method": "POST"}
    response = await api.http.options("/tools", headers=preflight)
    assert "access-control-allow-origin" not in response.headers
    got = await api.http.get("/tools", headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in got.headers
    settings = api_settings(redis_url, prefix + "cors:", api_cors_origins="https://studio.example")
    async with running_api(settings) as cors:
        allowed = await cors.http.get("/tools", headers={"origin": "https://studio.example"})
        assert allowed.headers["access-control-allow-origin"] == "https://studio.example"
        other = await cors.http.get("/tools", headers={"origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_the_limits_are_settings() -> None:
    from chatflow.handlers.settings import Settings

    env = Settings.model_validate({"api_allowed_hosts": "a.example  b.example"})
    assert env.allowed_hosts() == ["a.example", "b.example"]
    assert Settings().allowed_hosts() == ["*"] and Settings().cors_origins() == []
    assert isinstance(httpx.codes.REQUEST_ENTITY_TOO_LARGE, int)
