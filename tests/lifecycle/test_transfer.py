"""Export and import: diff-friendly files with secret placeholders, a plan, an idempotent
apply; and a round trip into a fresh ``chatflow up`` that gives the same definitions and the
same test results."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatflow.handlers.operations.embedded import free_port
from tests.api.support import Api
from tests.lifecycle.conftest import Shell
from tests.registry.defs import call_endpoint, call_tool, definition, ret, to
from tests.support.http import LoopbackServer
from tests.support.up import Up, start_up

SECRET = "Bearer src-secret-5e1f"
EP_SECRET = "ep-secret-77aa"
LLM_KEY = "sk-src-llm-0b3c"
ENV = {"CHATFLOW_SECRET_SRV_T_AUTHORIZATION": SECRET,
       "CHATFLOW_SECRET_SRV_T_EP_GET_X_API_KEY": EP_SECRET,
       "CHATFLOW_SECRET_CRED_T_APIKEY": LLM_KEY}


async def seed(api: Api, base: str) -> None:
    """A server with secrets, a credential, a child tool, a caller with positions whose
    draft moved on after its publish, and saved cases with mocks."""
    await api.ok("POST", "/integration-servers", 201, json={
        "id": "srv-t", "name": "People", "baseUrl": base,
        "headers": [{"name": "Authorization", "value": SECRET, "secret": True}]})
    await api.ok("POST", "/integration-servers/srv-t/endpoints", 201, json={
        "id": "ep-get", "name": "get", "path": "/people/{id}", "method": "GET",
        "params": [{"name": "id", "in": "route", "required": True}],
        "headers": [{"name": "X-Api-Key", "value": EP_SECRET, "secret": True}]})
    await api.ok("POST", "/llm-credentials", 201, json={
        "id": "cred-t", "name": "LLM", "apiKey": LLM_KEY, "baseUrl": "http://127.0.0.1:9/v1"})
    child = definition({"type": "executeScript", "id": "s", "source": "return n.toUpperCase()",
                        "inputVariables": [{"name": "n", "value": "{{name}}"}],
                        "outputVariable": "up", "defaultOutput": to("r")}, ret("{{up}}"))
    await api.ok("POST", "/tools", 201, json={"id": "t-child", "name": "Upper",
                                              "definition": child})
    pt_child = (await api.ok("POST", "/tools/t-child/publish"))["publishedToolId"]
    await api.ok("POST", "/tools/t-child/tests", 201, json={
        "id": "ana", "name": "upper", "inputs": {"name": "ana"}, "expect": {"result": "ANA"}})
    main = definition(
        call_endpoint("e", "srv-t", "ep-get", [{"name": "id", "in": "route", "value": "{{id}}"}],
                      nxt="c"),
        {**call_tool("c", "t-child", pt_child), "inputVariables": [
            {"name": "name", "value": "{{resp.name}}"}]},
        ret("{{child}}"), meta={"positions": {"e": {"x": 10, "y": 20}, "c": {"x": 200, "y": 20}}})
    await api.ok("POST", "/tools", 201, json={"id": "t-main", "name": "Lookup",
                                              "definition": main})
    await api.ok("POST", "/tools/t-main/tests", 201, json={
        "id": "bea", "name": "finds Bea", "inputs": {"id": "2"},
        "mocks": {"e": {"status": 200, "body": {"name": "bea"}}}, "expect": {"result": "BEA"}})
    await api.ok("POST", "/tools/t-main/tests", 201, json={
        "id": "down", "name": "upstream down", "inputs": {"id": "3"},
        "mocks": {"e": {"error": {"code": "http_timeout", "message": "no answer"}}},
        "expect": {"errorCode": "http_timeout"}})
    await api.ok("POST", "/tools/t-main/publish", json={"note": "first"})
    main["blocks"]["r"]["value"] = "[{{child}}]"  # the draft moves on after the publish
    await api.ok("PATCH", "/tools/t-main", json={"definition": main})


async def test_export_writes_one_sorted_file_per_object_with_placeholders_not_secrets(
        api: Api, shell: Shell, tmp_path: Path, http_server: LoopbackServer) -> None:
    await seed(api, http_server.base)
    out = tmp_path / "export"
    ran = await shell("export", str(out))
    assert ran.code == 0, ran.err
    assert ran.out.strip().endswith("2 tools, 1 servers, 1 credentials")
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*.json"))
    assert names == ["credentials/cred-t.json", "servers/srv-t.json", "tools/t-child.json",
                     "tools/t-main.json"]
    for path in out.rglob("*.json"):
        text = path.read_text()
        assert text == json.dumps(json.loads(text), ensure_ascii=False, indent=2,
                                  sort_keys=True) + "\n"
        for secret in (SECRET, EP_SECRET, LLM_KEY, "src-secret"):
            assert secret not in text
    server = json.loads((out / "servers/srv-t.json").read_text())
    assert server["headers"] == [{"name": "Authorization", "secret": True,
                                  "value": {"secret": "CHATFLOW_SECRET_SRV_T_AUTHORIZATION"}}]
    assert server["endpoints"][0]["headers"][0]["value"] == {
        "secret": "CHATFLOW_SECRET_SRV_T_EP_GET_X_API_KEY"}
    tool = json.loads((out / "tools/t-main.json").read_text())
    assert tool["positions"] == {"c": {"x": 200, "y": 20}, "e": {"x": 10, "y": 20}}
    assert "meta" not in tool["definition"] and tool["published"] is True
    assert tool["publishedDefinition"]["blocks"]["r"]["value"] == "{{child}}"
    assert [c["id"] for c in tool["tests"]] == ["bea", "down"]
    again = await shell("export", str(out))  # the same registry writes the same bytes
    assert again.code == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.json")) == names


async def test_import_plans_refuses_without_secrets_applies_and_is_idempotent(
        api: Api, shell: Shell, tmp_path: Path, http_server: LoopbackServer) -> None:
    await seed(api, http_server.base)
    out = tmp_path / "export"
    assert (await shell("export", str(out))).code == 0
    # Ids are global within a deployment: the copy goes to another (a fresh key prefix).
    other = {"CHATFLOW_PREFIX": api.settings.prefix.rstrip(":") + "b:"}
    refused = await shell("import", str(out), env=other)
    assert refused.code == 1
    assert "refused    credential credentials/cred-t.json: credentials/cred-t.json: set " \
           "CHATFLOW_SECRET_CRED_T_APIKEY in the environment" in refused.out
    assert "nothing applied" in refused.err
    dry = await shell("import", str(out), "--dry-run", "--publish", env={**other, **ENV})
    assert dry.code == 0, dry.out + dry.err
    lines = dry.out.splitlines()
    assert "create     server srv-t: 1 endpoint(s)" in lines
    assert "create     tool t-main" in lines and "create     test t-main/bea" in lines
    assert lines.index("publish    publish t-child: as " + _pt(out, "t-child")) < \
        lines.index("publish    publish t-main: as " + _pt(out, "t-main"))
    applied = await shell("import", str(out), "--publish", env={**other, **ENV})
    assert applied.code == 0, applied.out + applied.err
    assert applied.out.splitlines()[-1].startswith("applied:")
    second = await shell("import", str(out), "--publish", env={**other, **ENV})
    assert second.code == 0
    assert {line.split()[0] for line in second.out.splitlines()[:-1]} == {"unchanged"}
    changed_env = {**other, **ENV, "CHATFLOW_SECRET_SRV_T_AUTHORIZATION": "Bearer rotated"}
    third = await shell("import", str(out), "--dry-run", env=changed_env)
    assert "update     server srv-t: headers" in third.out.splitlines()


def _pt(out: Path, tool_id: str) -> str:
    return str(json.loads((out / f"tools/{tool_id}.json").read_text())["publishedToolId"])


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    """A fresh `chatflow up` (no examples: an empty workspace) in an empty folder."""
    cwd = tmp_path / "deployment"
    cwd.mkdir()
    with start_up(cwd, "--no-examples", port=free_port(), api_port=free_port()) as running:
        yield running


def results(report: dict[str, Any]) -> list[tuple[str, bool, str, Any]]:
    return [(c["id"], c["passed"], c["result"], (c["error"] or {}).get("code"))
            for c in report["cases"]]


async def test_a_round_trip_into_a_fresh_chatflow_up_gives_the_same_definitions_and_results(
        api: Api, shell: Shell, tmp_path: Path, http_server: LoopbackServer, up: Up) -> None:
    http_server.route("GET", "/people/5", {"name": "eve"})
    await seed(api, http_server.base)
    out = tmp_path / "export"
    assert (await shell("export", str(out))).code == 0
    imported = up.chatflow("import", str(out), "--publish", extra=ENV)
    assert imported.returncode == 0, imported.stdout + imported.stderr + "".join(up.lines[-20:])
    again = up.chatflow("import", str(out), "--publish", extra=ENV)
    assert {line.split()[0] for line in again.stdout.splitlines()[:-1]} == {"unchanged"}

    with up.admin(retries=8) as there:
        for tool_id in ("t-child", "t-main"):
            mine = await api.ok("GET", f"/tools/{tool_id}")
            theirs = there.get(f"/tools/{tool_id}").json()
            for key in ("name", "definition", "publishedToolId", "status"):
                assert theirs[key] == mine[key], (tool_id, key)
            assert theirs["publishedTool"]["definition"] == mine["publishedTool"]["definition"]
            here = await api.ok("POST", f"/tools/{tool_id}/tests/run")
            answer = there.post(f"/tools/{tool_id}/tests/run", json={})
            assert answer.status_code == 200, answer.text
            assert results(answer.json()) == results(here)
        # The placeholders were filled from the environment: a real call sends the secrets.
        hits = len(http_server.requests)
        called = there.post("/integration-servers/srv-t/endpoints/ep-get/test", json={
            "paramMappings": [{"name": "id", "in": "route", "value": "5"}]})
        assert called.status_code == 200 and called.json()["body"] == {"name": "eve"}
    sent = http_server.requests[hits]
    assert sent.headers["authorization"] == SECRET and sent.headers["x-api-key"] == EP_SECRET


async def test_export_of_one_workspace_writes_only_its_objects(
        api: Api, shell: Shell, tmp_path: Path) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-home", "definition": definition(ret())})
    await api.ok("POST", "/integration-servers", 201, json={
        "id": "srv-home", "name": "Home", "baseUrl": "http://127.0.0.1:9"})
    w2 = api.as_key(await api.new_key(workspace="w2", role="admin"))
    try:
        for path, body in (("/tools", {"id": "t-w2", "definition": definition(ret())}),
                           ("/integration-servers", {"id": "srv-w2", "name": "W2",
                                                     "baseUrl": "http://127.0.0.1:9"}),
                           ("/llm-credentials", {"id": "cred-w2", "name": "L", "apiKey": "sk-w2"})):
            made = await w2.post(path, json=body)
            assert made.status_code == 201, made.text
    finally:
        await w2.aclose()

    def written(out: Path) -> list[str]:
        return sorted(str(p.relative_to(out)) for p in out.rglob("*.json"))

    ran = await shell("export", str(tmp_path / "w2"), "--workspace", "w2")
    assert ran.code == 0, ran.err
    assert written(tmp_path / "w2") == ["credentials/cred-w2.json", "servers/srv-w2.json",
                                        "tools/t-w2.json"]
    assert (await shell("export", str(tmp_path / "home"))).code == 0  # default: "default"
    assert written(tmp_path / "home") == ["servers/srv-home.json", "tools/t-home.json"]
