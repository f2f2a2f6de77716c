"""OpenAPI import: each of the project's own specs imports; a broken one says where.

The specs under tests/fixtures/openapi are written for these tests: 3.0 and 3.1, YAML and
JSON, path/query/header/cookie params (shared and per operation, inline and $ref'd),
request bodies ($ref, allOf, required), callbacks, links and webhooks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.api.support import Api

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openapi"
ALL_SPECS = sorted(FIXTURES.iterdir())
WEBHOOKS_ONLY = "webhooks-only-3.1.json"
SPECS = [p for p in ALL_SPECS if p.name != WEBHOOKS_ONLY]
METHODS = {"get", "post", "put", "patch", "delete", "head", "options"}


async def server(api: Api) -> None:
    await api.ok("POST", "/integration-servers", 201,
                 json={"id": "srv-oa", "name": "Imported", "baseUrl": "http://127.0.0.1:9"})


async def import_fixture(api: Api, name: str) -> dict[str, dict[str, object]]:
    await server(api)
    body = await api.ok("POST", "/integration-servers/srv-oa/import-openapi", 201,
                        content=(FIXTURES / name).read_text())
    return {e["name"]: e for e in body["endpoints"]}


def params(endpoint: dict[str, object]) -> list[tuple[str, str, bool]]:
    listed = endpoint["params"]
    assert isinstance(listed, list)
    return [(p["name"], p["in"], p["required"]) for p in listed]


def test_the_fixture_specs_cover_both_versions_and_both_formats() -> None:
    versions = {str(yaml.safe_load(p.read_text())["openapi"])[:3] for p in ALL_SPECS}
    assert versions == {"3.0", "3.1"}
    assert {p.suffix for p in ALL_SPECS} == {".yaml", ".json"}


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
async def test_each_fixture_spec_imports_as_a_batch_of_endpoints(api: Api, spec: Path) -> None:
    await server(api)
    text = spec.read_text()
    body = await api.ok("POST", "/integration-servers/srv-oa/import-openapi", 201,
                        content=text, headers={"content-type": "application/yaml"})
    operations = sum(1 for item in (yaml.safe_load(text).get("paths") or {}).values()
                     for method in item if method in METHODS)
    assert body["imported"] == operations
    for endpoint in body["endpoints"]:
        assert endpoint["name"] and endpoint["method"] and endpoint["path"].startswith("/")
    listed = await api.ok("GET", "/integration-servers/srv-oa/endpoints")
    assert len(listed) == operations
    cache = await api.get_key(api.keys.server("srv-oa"))
    assert len(cache["endpoints"]) == operations
    assert len(await api.client.xrange(api.keys.registry)) == 2  # one event for the batch


async def test_the_library_import_keeps_route_query_and_body_params(api: Api) -> None:
    await server(api)
    text = (FIXTURES / "library-3.0.yaml").read_text()
    # JSON works as well as YAML, and so does {"spec": ...}
    body = await api.ok("POST", "/integration-servers/srv-oa/import-openapi", 201,
                        json={"spec": yaml.safe_load(text)})
    by_name = {e["name"]: e for e in body["endpoints"]}
    assert by_name["getBook"]["path"] == "/books/{isbn}"
    assert by_name["getBook"]["params"] == [
        {"name": "isbn", "in": "route", "required": True, "description": "The book's ISBN-13"}]
    # $ref'd query params resolve; header params are the endpoint's headers, not params
    assert params(by_name["listBooks"]) == [("pageSize", "query", False), ("author", "query", False)]
    assert params(by_name["addBook"]) == [
        ("title", "body", True), ("author", "body", True), ("year", "body", False)]
    assert by_name["listBooks"]["responses"] == {"200": "One page of books",
                                                 "default": "Something went wrong"}


async def test_a_path_level_param_is_shared_and_allof_bodies_merge_their_required(api: Api) -> None:
    by_name = await import_fixture(api, "library-3.0.yaml")
    assert params(by_name["replaceBook"]) == [
        ("isbn", "route", True), ("title", "body", True), ("author", "body", True),
        ("year", "body", False), ("edition", "body", True)]
    withdraw = by_name["Withdraw a book"]  # no operationId: the summary names it
    assert withdraw["method"] == "DELETE"
    assert params(withdraw) == [("isbn", "route", True), ("reason", "query", True)]
    # a cookie param is not a param; a merge-patch body is still JSON
    assert params(by_name["extendLoan"]) == [
        ("memberId", "route", True), ("loanId", "route", True), ("days", "body", False)]


async def test_callbacks_and_links_do_not_become_endpoints(api: Api) -> None:
    by_name = await import_fixture(api, "alerts-callbacks-3.0.yaml")
    assert sorted(by_name) == ["subscribeToAlerts", "unsubscribe"]
    assert params(by_name["subscribeToAlerts"]) == [
        ("notifyUrl", "query", True), ("symbol", "body", True), ("above", "body", True),
        ("below", "body", False)]


async def test_a_3_1_spec_resolves_ref_request_bodies_and_skips_its_webhooks(api: Api) -> None:
    by_name = await import_fixture(api, "clinic-3.1.yaml")
    assert sorted(by_name) == ["Cancel an appointment", "bookAppointment", "listAppointments"]
    assert params(by_name["bookAppointment"]) == [
        ("clinicId", "route", True), ("patient", "body", True), ("startsAt", "body", True),
        ("notes", "body", False)]
    assert params(by_name["listAppointments"]) == [
        ("clinicId", "route", True), ("day", "query", True), ("doctor", "query", False)]
    assert params(by_name["Cancel an appointment"]) == [
        ("clinicId", "route", True), ("appointmentId", "route", True)]


async def test_a_3_1_spec_with_only_webhooks_is_refused_as_having_no_operations(api: Api) -> None:
    await server(api)
    body = await api.fails("POST", "/integration-servers/srv-oa/import-openapi", 400,
                           content=(FIXTURES / WEBHOOKS_ONLY).read_text())
    assert body["error"] == "invalid_openapi"
    assert "no operations" in body["message"]


async def test_a_spec_that_is_not_yaml_gets_a_400_naming_the_line(api: Api) -> None:
    await server(api)
    body = await api.fails("POST", "/integration-servers/srv-oa/import-openapi", 400,
                           content="openapi: 3.0.0\npaths: {\n  /x: [\n",
                           headers={"content-type": "application/yaml"})
    assert body["error"] == "invalid_openapi"
    assert "line 4" in body["message"]


async def test_an_invalid_spec_gets_a_400_with_the_json_path_where_it_broke(api: Api) -> None:
    await server(api)
    spec = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": {"/pets": {"get": {"responses": "nope"}}}}
    body = await api.fails("POST", "/integration-servers/srv-oa/import-openapi", 400,
                           content=json.dumps(spec), headers={"content-type": "application/json"})
    assert "$.paths['/pets'].get.responses" in body["message"]
    swagger2 = await api.fails("POST", "/integration-servers/srv-oa/import-openapi", 400,
                               content="swagger: '2.0'\n")
    assert "$.openapi" in swagger2["message"]
    await api.fails("POST", "/integration-servers/srv-oa/import-openapi", 400, content="")
    await api.fails("POST", "/integration-servers/srv-none/import-openapi", 404,
                    content="openapi: 3.1.0\n")
