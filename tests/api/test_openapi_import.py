"""OpenAPI import: every real spec in shared/data/openapi imports; a broken one says where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.api.support import Api

SPECS = sorted((Path(__file__).resolve().parents[3] / "shared" / "data" / "openapi").glob("*"))
if not SPECS:  # the work tree may sit elsewhere; the specs always live in /work/shared
    SPECS = sorted(Path("/work/shared/data/openapi").glob("*"))


async def server(api: Api) -> None:
    await api.ok("POST", "/integration-servers", 201,
                 json={"id": "srv-oa", "name": "Imported", "baseUrl": "http://127.0.0.1:9"})


def test_the_shared_specs_are_there() -> None:
    assert len(SPECS) >= 7


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
async def test_each_shared_spec_imports_as_a_batch_of_endpoints(api: Api, spec: Path) -> None:
    await server(api)
    text = spec.read_text()
    body = await api.ok("POST", "/integration-servers/srv-oa/import-openapi", 201,
                        content=text, headers={"content-type": "application/yaml"})
    operations = sum(1 for item in yaml.safe_load(text)["paths"].values()
                     for method in item if method in {"get", "post", "put", "patch", "delete",
                                                      "head", "options"})
    assert body["imported"] == operations
    for endpoint in body["endpoints"]:
        assert endpoint["name"] and endpoint["method"] and endpoint["path"].startswith("/")
    listed = await api.ok("GET", "/integration-servers/srv-oa/endpoints")
    assert len(listed) == operations
    cache = await api.get_key(api.keys.server("srv-oa"))
    assert len(cache["endpoints"]) == operations
    assert len(await api.client.xrange(api.keys.registry)) == 2  # one event for the batch


async def test_the_petstore_import_keeps_route_query_and_body_params(api: Api) -> None:
    await server(api)
    text = next(p for p in SPECS if p.name == "petstore.yaml").read_text()
    # JSON works as well as YAML, and so does {"spec": ...}
    body = await api.ok("POST", "/integration-servers/srv-oa/import-openapi", 201,
                        json={"spec": yaml.safe_load(text)})
    by_name = {e["name"]: e for e in body["endpoints"]}
    assert by_name["showPetById"]["path"] == "/pets/{petId}"
    assert by_name["showPetById"]["params"][0] | {"description": None} == {
        "name": "petId", "in": "route", "required": True, "description": None}
    assert [(p["name"], p["in"]) for p in by_name["listPets"]["params"]] == [("limit", "query")]
    assert {p["name"] for p in by_name["createPets"]["params"]} == {"id", "name", "tag"}
    assert by_name["listPets"]["responses"]["200"] == "A paged array of pets"


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
