"""Secrets: AES-256-CBC at rest, masked in every response, in clear only in cache projections,
and never in a log line."""

from __future__ import annotations

import logging
import re

import pytest
import structlog
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from chatflow.handlers.registry.crypto import SecretBox, new_key
from chatflow.handlers.registry.errors import Invalid
from tests.api.support import ENCRYPTION_KEY, Api, Upstream, api_settings, running_api

SECRETS = ("Bearer server-secret-777", "endpoint-secret-888", "sk-llm-secret-999")


def test_encryption_round_trips_as_key_id_colon_iv_hex_colon_cipher_hex() -> None:
    box = SecretBox(ENCRYPTION_KEY)
    token = box.encrypt("Bearer abc")
    assert re.fullmatch(r"[0-9a-f]{8}:[0-9a-f]{32}:[0-9a-f]+", token)
    assert token.split(":")[0] == box.current_id
    assert box.decrypt(token) == "Bearer abc"
    assert box.encrypt("Bearer abc") != token  # a fresh IV every time
    iv, data = (bytes.fromhex(part) for part in token.split(":")[1:])
    dec = Cipher(algorithms.AES(bytes.fromhex(ENCRYPTION_KEY)), modes.CBC(iv)).decryptor()
    unpad = padding.PKCS7(128).unpadder()
    plain = unpad.update(dec.update(data) + dec.finalize()) + unpad.finalize()
    assert plain == b"Bearer abc"  # plain AES-256-CBC + PKCS7: any other service can read it


def test_a_wrong_key_or_a_missing_key_is_a_clear_error() -> None:
    token = SecretBox(ENCRYPTION_KEY).encrypt("x")
    with pytest.raises(Invalid, match=r"written with key .* not among the configured keys"):
        SecretBox(new_key()).decrypt(token)
    with pytest.raises(Invalid, match="cannot be decrypted"):  # the format before key ids
        SecretBox(new_key()).decrypt(token.split(":", 1)[1])
    with pytest.raises(Invalid, match="CHATFLOW_ENCRYPTION_KEY"):
        SecretBox(None).encrypt("x")
    with pytest.raises(Invalid, match="32 bytes"):
        SecretBox("too-short")


async def test_no_response_body_and_no_log_line_holds_a_secret(
        api: Api, upstream: Upstream, caplog: pytest.LogCaptureFixture) -> None:
    bodies: list[str] = []

    async def call(method: str, path: str, **kw: object) -> None:
        response = await api.http.request(method, path, **kw)  # type: ignore[arg-type]
        assert response.status_code < 500
        bodies.append(response.text)

    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logs:
        await call("POST", "/integration-servers", json={
            "id": "srv", "name": "S", "baseUrl": upstream.url,
            "headers": [{"name": "Authorization", "value": SECRETS[0], "secret": True}]})
        await call("POST", "/integration-servers/srv/endpoints", json={
            "id": "ep", "name": "e", "path": "/status/202",  # does not echo headers back
            "headers": [{"name": "X-Key", "value": SECRETS[1], "secret": True}]})
        await call("POST", "/llm-credentials", json={"id": "c", "name": "c",
                                                     "apiKey": SECRETS[2]})
        for path in ("/integration-servers", "/integration-servers/srv",
                     "/integration-servers/srv/endpoints", "/llm-credentials",
                     "/llm-credentials/c", "/tools"):
            await call("GET", path)
        await call("POST", "/integration-servers/srv/endpoints/ep/test", json={})
        await call("POST", "/integration-servers/srv/endpoints/test",
                   json={"endpoint": {"name": "e", "path": "/status/500"}})
        await call("PATCH", "/integration-servers/srv", json={"name": "renamed"})
    assert upstream.requests[0].headers["authorization"] == SECRETS[0]  # really sent
    assert upstream.requests[0].headers["x-key"] == SECRETS[1]
    text = "\n".join(bodies) + repr(logs) + caplog.text
    for secret in SECRETS:
        assert secret not in text
    for view in ("servers", "credentials"):
        stored = await api.client.hgetall(api.keys.registry_view(view))
        assert not any(s.encode() in v for v in stored.values() for s in SECRETS)
    for _id, fields in await api.client.xrange(api.keys.registry):
        assert not any(s.encode() in fields[b"data"] for s in SECRETS)


async def test_secrets_are_refused_with_a_400_when_no_key_is_configured(
        redis_url: str, prefix: str) -> None:
    async with running_api(api_settings(redis_url, prefix, encryption_key=None)) as api:
        body = await api.fails("POST", "/integration-servers", 400, json={
            "name": "S", "baseUrl": "http://127.0.0.1:9",
            "headers": [{"name": "Authorization", "value": "x", "secret": True}]})
        assert body["error"] == "encryption_key_missing"
        await api.ok("POST", "/integration-servers", 201, json={
            "name": "S", "baseUrl": "http://127.0.0.1:9",
            "headers": [{"name": "Accept", "value": "application/json"}]})
