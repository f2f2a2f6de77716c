"""Schemathesis against the API's own OpenAPI document, served by uvicorn on loopback, with
a valid admin key and with none: no 5xx, every status code one the document lists for its
route and every body fitting the document's schema for it (Schemathesis's status-code and
response-schema conformance checks), no response carrying a secret (nor the key), and the
internal route refuses without its secret; without a key every /api answer is a 401."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from chatflow.handlers.history.db import engine_for, upgrade
from tests.api.support import INTERNAL_SECRET, Api, api_settings, running_api

# The slow tier: Schemathesis over every operation (python -m pytest -m slow).
pytestmark = pytest.mark.slow


@pytest.fixture
async def api(redis_url: str, prefix: str, tmp_path: Path) -> AsyncIterator[Api]:
    """The API with a run history (SQLite, migrated): every route answers from a real
    backend, so a history route's 503 ("no run history configured") is not what is fuzzed."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    engine = engine_for(url)
    await upgrade(engine)
    await engine.dispose()
    async with running_api(api_settings(redis_url, prefix, history_url=url)) as running:
        yield running


SERVER_SECRET = "srv-header-secret-7f3a9c"
LLM_KEY = "sk-llm-key-secret-0b8e42"
MAX_EXAMPLES = 20
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]


def fuzz(openapi: dict[str, Any], root: str, secrets: list[str],
         headers: dict[str, str]) -> tuple[int, list[str]]:
    """Every operation, ``MAX_EXAMPLES`` cases each; returns (requests made, problems)."""
    schema = schemathesis.openapi.from_dict(openapi)
    problems: list[str] = []
    calls = 0
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # Err: an invalid operation fails loudly

        @settings(max_examples=MAX_EXAMPLES, phases=[Phase.explicit, Phase.generate], database=None,
                  deadline=None, suppress_health_check=list(HealthCheck))
        @given(operation.as_strategy())
        def check(case: Any) -> None:
            nonlocal calls
            calls += 1
            if case.path.endswith("/stream"):  # server-sent events never end: the head only
                with httpx.stream(case.method, root + case.formatted_path, params=case.query,
                                  headers=headers, timeout=30) as head:
                    if head.status_code >= 500:
                        problems.append(f"server error: {case.method} {case.formatted_path}")
                    if not headers and head.status_code != 401:
                        problems.append(f"answered without a key: {case.formatted_path}")
                    if str(head.status_code) not in case.operation.definition.raw["responses"]:
                        problems.append(f"undocumented status {head.status_code}: "
                                        f"{case.method} {case.formatted_path}")
                return
            response = case.call(base_url=root, timeout=30, headers=headers)
            where = f"{case.method} {case.formatted_path} -> {response.status_code}"
            try:
                case.validate_response(response, checks=CHECKS)
            except (Exception, BaseExceptionGroup) as failed:  # each failure, sent and got
                problems.append(f"{where}: {str(failed)[:600]}")
            if not headers and case.formatted_path.startswith("/api/") \
                    and response.status_code != 401:
                problems.append(f"answered without a key: {where}")
            problems.extend(f"secret in response: {where}" for s in secrets if s in response.text)

        check()
    return calls, problems


@pytest.mark.parametrize("with_key", [True, False], ids=["admin-key", "no-key"])
async def test_fuzzing_the_api_finds_no_server_error_and_no_leaked_secret(
        api: Api, with_key: bool) -> None:
    await api.ok("POST", "/integration-servers", 201, json={"id": "srv",
        "name": "Shop", "baseUrl": "http://127.0.0.1:9",
        "headers": [{"name": "Authorization", "value": SERVER_SECRET, "secret": True}]})
    await api.ok("POST", "/llm-credentials", 201, json={"id": "cred",
        "name": "openai", "apiKey": LLM_KEY})
    openapi = (await api.http.get("/openapi.json")).json()
    root = str(api.root.base_url).rstrip("/")
    headers = {"Authorization": f"Bearer {api.token}"} if with_key else {}
    secrets = [SERVER_SECRET, LLM_KEY, INTERNAL_SECRET, api.token.split("_", 2)[2]]
    calls, problems = await asyncio.to_thread(fuzz, openapi, root, secrets, headers)
    assert calls > 100
    assert problems == []


async def test_the_internal_route_refuses_without_the_secret(api: Api) -> None:
    body = {"publishedToolId": "pt-x", "inputs": {}}
    for headers in ({}, {"x-internal-secret": "wrong"}, {"x-internal-secret": ""}):
        response = await api.root.post("/internal/tools/execute", json=body, headers=headers)
        assert response.status_code == 401, response.text
        assert INTERNAL_SECRET not in response.text
    allowed = await api.root.post("/internal/tools/execute", json=body,
                                  headers={"x-internal-secret": INTERNAL_SECRET})
    assert allowed.status_code == 404


