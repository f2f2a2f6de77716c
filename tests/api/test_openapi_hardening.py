"""OpenAPI import, hardened: no reference leaves the document, YAML is bounded, parsing runs
off the event loop, and body parameters keep their ``required`` flags. Inline documents."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from chatflow.runtime.registry.openapi import OpenApiError, SpecLimits, parse_openapi
from tests.api.support import Api, Upstream

IMPORT = "/integration-servers/srv-oa/import-openapi"
YAML = {"content-type": "application/yaml"}
HEAD = 'openapi: "3.0.3"\ninfo: {title: t, version: "1"}\n'
# The classic "billion laughs": 9^9 strings once every alias is expanded.
BOMB = HEAD + "paths: {}\nx-lol:\n" + "".join(
    f"  {name}: &{name} [{', '.join([prev] * 9)}]\n"
    for name, prev in zip("abcdefghi", ['"lol"', *(f"*{c}" for c in "abcdefgh")], strict=True))


def spec_with_ref(ref: str) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/x": {"get": {
        "responses": {"200": {"description": "ok", "content": {"application/json": {
            "schema": {"$ref": ref}}}}}}}}}


async def server(api: Api) -> None:
    await api.ok("POST", "/integration-servers", 201,
                 json={"id": "srv-oa", "name": "Imported", "baseUrl": "http://127.0.0.1:9"})


async def test_a_file_reference_is_refused_by_its_json_path_and_nothing_is_read(
        api: Api) -> None:
    await server(api)
    response = await api.http.post(IMPORT, json=spec_with_ref("file:///etc/passwd"))
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "invalid_openapi"
    assert ('$.paths["/x"].get.responses.200.content["application/json"].schema["$ref"]'
            in body["message"])
    assert "root:" not in response.text and "/bin/" not in response.text
    assert await api.ok("GET", "/integration-servers/srv-oa/endpoints") == []


async def test_a_url_reference_is_refused_and_the_server_it_names_gets_no_request(
        api: Api, upstream: Upstream) -> None:
    await server(api)
    for ref in (upstream.url + "/schema.json", upstream.url + "/s.json#/Pet", "other.yaml"):
        body = await api.fails("POST", IMPORT, 400, json=spec_with_ref(ref))
        assert "external references" in body["message"]
    assert upstream.requests == []


async def test_a_dangling_or_cyclic_internal_reference_is_a_400_not_a_500(api: Api) -> None:
    await server(api)
    dangling = spec_with_ref("#/components/schemas/Missing")
    dangling["paths"]["/x"]["post"] = {"requestBody": {"content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/Missing"}}}},
        "responses": {"200": {"description": "ok"}}}
    body = await api.fails("POST", IMPORT, 400, json=dangling)
    assert "'/components/schemas/Missing' does not resolve inside the document" in body["message"]
    assert "openapi" not in body["message"]  # the document is not echoed back
    cyclic = spec_with_ref("#/components/schemas/A")
    cyclic["components"] = {"schemas": {"A": {"$ref": "#/components/schemas/B"},
                                        "B": {"$ref": "#/components/schemas/A"}}}
    body = await api.fails("POST", IMPORT, 400, json=cyclic)
    assert "a $ref cycle" in body["message"]


async def test_the_yaml_alias_bomb_fails_fast_while_the_api_keeps_answering(api: Api) -> None:
    await server(api)
    assert len(BOMB.encode()) < 700

    async def timed(coro: Any) -> tuple[float, Any]:
        started = time.monotonic()
        result = await coro
        return time.monotonic() - started, result

    (bomb_s, bomb), (list_s, listed) = await asyncio.gather(
        timed(api.http.post(IMPORT, content=BOMB, headers=YAML)),
        timed(api.http.get("/tools")))
    assert bomb.status_code == 400 and "aliases expanded" in bomb.json()["message"]
    assert listed.status_code == 200
    assert bomb_s < 2 and list_s < 2, (bomb_s, list_s)


async def test_recursive_aliases_and_deep_nesting_are_refused_with_a_clear_error(
        api: Api) -> None:
    await server(api)
    body = await api.fails("POST", IMPORT, 400, content=HEAD + "paths: {}\nx: &a [*a]\n",
                           headers=YAML)
    assert "recursive" in body["message"]
    deep = HEAD + "paths: {}\nx: " + "[" * 200 + "]" * 200 + "\n"
    body = await api.fails("POST", IMPORT, 400, content=deep, headers=YAML)
    assert "nested deeper than 64 levels" in body["message"]
    deep_json = json.dumps(spec_with_ref("#/x"))[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}"
    body = await api.fails("POST", IMPORT, 400, content=deep_json,
                           headers={"content-type": "application/json"})
    assert "deeper than 64 levels" in body["message"]  # the API's own JSON limit, or ours


def test_size_node_and_time_limits_are_enforced_by_the_parser() -> None:
    text = HEAD + "paths: {}\nx-items: [" + ", ".join(["1"] * 500) + "]\n"
    with pytest.raises(OpenApiError, match="larger than 100 bytes"):
        parse_openapi(text, SpecLimits(max_bytes=100))
    with pytest.raises(OpenApiError, match="more than 300 nodes"):
        parse_openapi(text, SpecLimits(max_nodes=300))
    with pytest.raises(OpenApiError, match="longer than"):
        parse_openapi(text, SpecLimits(timeout_s=0.5), deadline=time.monotonic() - 1)


PETSTORE = HEAD + """\
paths:
  /pets:
    post:
      operationId: createPet
      requestBody:
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Pet"}
      responses: {"201": {description: created}}
components:
  schemas:
    Pet:
      type: object
      required: [id, name]
      properties:
        id: {type: integer}
        name: {type: string}
        tag: {type: string}
"""


async def test_imported_body_parameters_keep_their_required_flags(api: Api) -> None:
    await server(api)
    body = await api.ok("POST", IMPORT, 201, content=PETSTORE, headers=YAML)
    (endpoint,) = body["endpoints"]
    flags = {p["name"]: p["required"] for p in endpoint["params"] if p["in"] == "body"}
    assert flags == {"id": True, "name": True, "tag": False}


async def test_more_parallel_imports_than_allowed_are_refused_not_queued(api: Api) -> None:
    from chatflow.handlers.registry import openapi_import

    await server(api)
    held = 0
    while openapi_import._PARALLEL.acquire(blocking=False):  # as if two imports were parsing
        held += 1
    try:
        body = await api.fails("POST", IMPORT, 429, content=PETSTORE, headers=YAML)
        assert body["error"] == "import_busy"
    finally:
        for _ in range(held):
            openapi_import._PARALLEL.release()
    assert held == 2
    await api.ok("POST", IMPORT, 201, content=PETSTORE, headers=YAML)
