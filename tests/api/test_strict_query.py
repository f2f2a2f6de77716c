"""Issue 32, point 3: every route refuses a query parameter it does not take (400 naming it),
and the OpenAPI document lists the status codes each route answers."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from chatflow.handlers.api import create_app
from chatflow.handlers.api.contract import refuse_unknown_query, unchecked_routes
from tests.api.support import INTERNAL_SECRET, Api


def _route_table(api: Api) -> list[tuple[str, str]]:
    app = create_app(api.settings)
    return [(method, context.path) for context in iter_route_contexts(app.router.routes)
            if isinstance(context.original_route, APIRoute)
            and context.original_route.include_in_schema for method in context.methods or ()]


async def test_every_route_refuses_an_unknown_query_parameter_naming_it(api: Api) -> None:
    table = _route_table(api)
    assert len(table) > 40  # the whole API, not a sample
    for method, path in table:
        url = re.sub(r"\{[^}]+\}", "x-1", path) + "?zzUnknown=1"
        headers = {"x-internal-secret": INTERNAL_SECRET} if path.startswith("/internal") else {}
        response = await api.root.request(method, url, headers=headers)
        where = f"{method} {path}"
        assert response.status_code == 400, (where, response.status_code, response.text)
        body = response.json()
        assert body["error"] == "invalid_request", where
        assert "unknown query parameter 'zzUnknown'" in body["message"], where
        assert body["problems"] == [{"path": "query.zzUnknown",
                                     "message": "not a query parameter of this route"}], where


async def test_the_cli_s_flag_name_on_the_executions_list_is_refused_with_the_right_one(
        api: Api) -> None:
    body = await api.fails("GET", "/executions?state=running&contact=C", 400)
    assert body["message"] == (
        "unknown query parameter 'contact' (did you mean 'contactId'?) for GET /api/executions: "
        "it takes children, contactId, cursor, errorCode, limit, publishedToolId, since, "
        "state, status, toolId, until")
    # The declared ones still filter, repeated or not.
    assert await api.ok("GET", "/executions?state=running&contactId=C&contactId=C") == {
        "executions": [], "nextCursor": None}
    assert (await api.fails("GET", "/me?a=1&b=2", 400))["message"].startswith(
        "unknown query parameters 'a', 'b' for GET /api/me: it takes none")


async def test_without_a_key_an_unknown_parameter_still_answers_401(api: Api) -> None:
    async with api.anonymous() as anonymous:
        response = await anonymous.get("/executions?contact=C")
    assert response.status_code == 401


def test_an_app_with_a_route_that_takes_any_query_string_is_found() -> None:
    app = FastAPI()

    @app.get("/strict", dependencies=[Depends(refuse_unknown_query)])
    async def strict() -> dict[str, Any]:
        return {}

    @app.get("/lax")
    async def lax() -> dict[str, Any]:
        return {}

    assert unchecked_routes(app) == ["['GET'] /lax"]


# -- the OpenAPI document: what each route answers


async def test_the_openapi_document_lists_each_route_s_real_status_codes(api: Api) -> None:
    doc = (await api.http.get("/openapi.json")).json()
    codes = {(method.upper(), path): set(op["responses"])
             for path, ops in doc["paths"].items() for method, op in ops.items()}
    assert codes[("POST", "/api/executions/{execution_id}/fork")] == {
        "200", "202", "400", "401", "403", "404", "413", "429", "503"}
    assert codes[("GET", "/api/me")] == {"200", "400", "401"}
    assert codes[("DELETE", "/api/tools/{tool_id}")] == {"200", "400", "401", "403", "404", "409"}
    assert codes[("POST", "/internal/tools/execute")] == {"200", "400", "401", "404", "413"}
    for (method, path), answered in codes.items():
        assert "422" not in answered, (method, path)  # validation errors are 400s here
        assert "400" in answered, (method, path)
        if path.startswith("/api/"):
            assert "401" in answered, (method, path)
    error = doc["paths"]["/api/me"]["get"]["responses"]["401"]["content"]["application/json"]
    assert error["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert doc["components"]["schemas"]["ErrorBody"]["required"] == ["error", "message"]


@pytest.mark.parametrize("wait", [False, True])
async def test_fork_answers_what_its_document_says(api: Api, wait: bool) -> None:
    """No history here: 503; an unknown run with a history: 404 (tests/history); a bad body
    400; the 202 of a started fork is in tests/history/test_fork.py."""
    url = "/executions/0-nope/fork" + ("?wait=true" if wait else "")
    assert (await api.fails("POST", url, 503, json={"fromBlockId": "a"}))["error"] == (
        "history_unavailable")
    assert (await api.fails("POST", url, 400, json={"fromBlockId": ""}))["error"] == (
        "invalid_request")
