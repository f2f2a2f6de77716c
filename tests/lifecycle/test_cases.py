"""Saved test cases over the API: CRUD, runs with mocks that reach nothing outside, and the
same writes, conditions and trace as a real answer."""

from __future__ import annotations

import base64
from typing import Any

from tests.api.support import Api
from tests.registry.defs import definition, ret, to
from tests.support.http import LoopbackServer


def lookup(url: str) -> dict[str, Any]:
    """httpCall -> a condition on the status -> a script on the body -> return."""
    http = {"type": "httpCall", "id": "h", "url": url + "/people/{{id}}", "method": "GET",
            "responseStatusVariable": "st", "responseBodyVariable": "resp",
            "outputConditions": [{"id": "found", "rules": [
                {"variable": "st", "operator": "equals", "value": "200"}], "target": to("s")}],
            "defaultOutput": to("missing")}
    script = {"type": "executeScript", "id": "s", "source": "return p.name.toUpperCase()",
              "inputVariables": [{"name": "p", "value": "{{resp}}"}], "outputVariable": "name",
              "defaultOutput": to("r")}
    return definition(http, script, ret("{{name}}"), ret("nobody", "missing"))


ANA = {"name": "Ana", "id": 7}


async def test_a_mocked_http_call_passes_and_the_upstream_receives_nothing(
        api: Api, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/people/7", ANA)
    await api.ok("POST", "/tools", 201, json={"id": "t-m", "definition": lookup(http_server.base)})
    case = await api.ok("POST", "/tools/t-m/tests", 201, json={
        "id": "ana", "name": "finds Ana", "inputs": {"id": "7"},
        "mocks": {"h": {"status": 200, "body": ANA}}, "expect": {"result": "ANA"}})
    assert case["version"] == 1 and case["toolId"] == "t-m"
    missing = await api.ok("POST", "/tools/t-m/tests", 201, json={
        "id": "gone", "name": "404 goes to missing", "inputs": {"id": "8"},
        "mocks": {"h": {"status": 404, "body": {"error": "no"}}},
        "expect": {"errorCode": "http_status", "path": ["h"]}})
    assert missing["expect"] == {"errorCode": "http_status", "path": ["h"]}

    report = await api.ok("POST", "/tools/t-m/tests/run")
    assert (report["passed"], report["failed"], report["against"]) == (2, 0, "draft")
    assert http_server.requests == []  # no hit: every answer was a mock
    ana = report["cases"][0]
    assert ana["path"] == ["h", "s", "r"] and ana["unusedMocks"] == []

    # The same tool against the real upstream, answering the same: the same block entry.
    real = await api.ok("POST", "/tools/test-flow", json={"toolId": "t-m", "inputs": {"id": "7"}})
    assert len(http_server.requests) == 1 and real["result"] == "ANA"
    mocked_h = next(e for e in ana["trace"] if e["type"] == "block" and e["blockId"] == "h")
    real_h = next(e for e in real["trace"] if e["type"] == "block" and e["blockId"] == "h")
    for field in ("ok", "error", "matchedConditionId", "next", "writes"):
        assert mocked_h.get(field) == real_h.get(field), field
    assert mocked_h["detail"] == {**real_h["detail"], "mocked": True}


async def test_a_failing_case_reports_each_difference(api: Api, http_server: LoopbackServer
                                                     ) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-d", "definition": lookup(http_server.base)})
    await api.ok("POST", "/tools/t-d/tests", 201, json={
        "id": "wrong", "name": "expects another name", "inputs": {"id": "7"},
        "mocks": {"h": {"status": 200, "body": ANA}, "ghost": {"status": 200}},
        "expect": {"result": "BEA", "resultMatches": "^B", "path": ["h", "r"]}})
    await api.ok("POST", "/tools/t-d/tests", 201, json={
        "id": "down", "name": "upstream down", "mocks": {
            "h": {"error": {"code": "http_timeout", "message": "GET: sem resposta em 10.0s"}}},
        "expect": {"errorCode": "http_timeout"}})
    await api.ok("POST", "/tools/t-d/tests", 201, json={
        "id": "kind", "name": "an AI answer for an httpCall",
        "mocks": {"h": {"result": "x"}}, "expect": {"result": "ANA"}})
    report = await api.ok("POST", "/tools/t-d/tests/run")
    by_id = {c["id"]: c for c in report["cases"]}
    assert (report["passed"], report["failed"]) == (1, 2)
    assert by_id["down"]["passed"] and by_id["down"]["error"]["message"] == \
        "GET: sem resposta em 10.0s"
    wrong = by_id["wrong"]
    assert [d["field"] for d in wrong["differences"]] == ["result", "resultMatches", "path"]
    assert wrong["differences"][0] == {"field": "result", "expected": "BEA", "actual": "ANA"}
    assert wrong["unusedMocks"] == ["ghost"]
    kind = by_id["kind"]
    assert kind["differences"][0]["field"] == "mocks.h"
    assert "{status, body, headers}" in kind["differences"][0]["expected"]
    assert kind["error"]["code"] == "mock_invalid"
    assert http_server.requests == []
    only = await api.ok("POST", "/tools/t-d/tests/run", json={"cases": ["down"]})
    assert [c["id"] for c in only["cases"]] == ["down"]
    await api.fails("POST", "/tools/t-d/tests/run", 404, json={"cases": ["nope"]})


async def test_ai_and_media_mocks_are_written_as_real_answers(api: Api) -> None:
    await api.ok("POST", "/llm-credentials", 201, json={
        "id": "cred-m", "name": "never called", "apiKey": "sk-never",
        "baseUrl": "http://127.0.0.1:9/v1"})
    ai = {"type": "callAI", "id": "ai", "llmCredentialId": "cred-m", "outputVariable": "verdict",
          "outputFormat": "json", "capability": "generateText", "model": "gpt-4o-mini",
          "userPrompt": "{{text}}",
          "defaultOutput": to("m")}
    media = {"type": "fetchMedia", "id": "m", "mode": "url", "mediaIdVariable": "",
             "urlVariable": "http://127.0.0.1:9/file.txt", "base64Variable": "b64",
             "mimeTypeVariable": "mime", "defaultOutput": to("r")}
    await api.ok("POST", "/tools", 201, json={"id": "t-ai", "definition": definition(
        ai, media, ret("{{verdict.mood}} {{mime}} {{b64}}"))})
    data = base64.b64encode(b"hello").decode()
    await api.ok("POST", "/tools/t-ai/tests", 201, json={
        "id": "c", "name": "mood and file", "inputs": {"text": "great"},
        "mocks": {"ai": {"result": {"mood": "happy"}},
                  "m": {"base64": data, "mimeType": "text/plain"}},
        "expect": {"result": f"happy text/plain {data}"}})
    report = await api.ok("POST", "/tools/t-ai/tests/run")
    assert report["passed"] == 1, report["cases"][0]["differences"]


async def test_cases_are_validated_versioned_and_deleted(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-c", "definition": definition(ret())})
    bad = await api.fails("POST", "/tools/t-c/tests", 400, json={
        "name": "x", "mocks": {"h": {"status": 999}}})
    assert "h: status" in bad["message"]
    bad = await api.fails("POST", "/tools/t-c/tests", 400, json={
        "name": "x", "mocks": {"h": {"weird": 1}}})
    assert "{status, body, headers}" in bad["message"]
    bad = await api.fails("POST", "/tools/t-c/tests", 400, json={
        "name": "x", "expect": {"resultMatches": "(?<=a)b"}})
    assert "RE2" in bad["message"]
    await api.fails("POST", "/tools/t-c/tests", 400, json={"name": "x", "unknown": 1})
    await api.fails("POST", "/tools/t-c/tests", 400, json={"name": "x", "mocks": {
        "m": {"base64": "***", "mimeType": "image/png"}}})
    made = await api.ok("POST", "/tools/t-c/tests", 201, json={"name": "plain",
                                                               "expect": {"result": "ok"}})
    assert made["id"].startswith("case-")
    await api.fails("POST", "/tools/t-c/tests", 409, json={"id": made["id"], "name": "again"})
    put = await api.ok("PUT", f"/tools/t-c/tests/{made['id']}", json={
        "name": "renamed", "expect": {"result": "ok"}, "version": 1})
    assert put["version"] == 2 and put["name"] == "renamed"
    await api.fails("PUT", f"/tools/t-c/tests/{made['id']}", 409, json={
        "name": "stale", "version": 1})
    assert [c["name"] for c in await api.ok("GET", "/tools/t-c/tests")] == ["renamed"]
    assert (await api.ok("GET", f"/tools/t-c/tests/{made['id']}"))["version"] == 2
    await api.ok("DELETE", f"/tools/t-c/tests/{made['id']}")
    await api.fails("GET", f"/tools/t-c/tests/{made['id']}", 404)
    assert await api.ok("GET", "/tools/t-c/tests") == []
    trail = await api.ok("GET", "/audit", params={"objectId": made["id"]})
    assert [e["type"] for e in trail] == ["test.created", "test.updated", "test.deleted"]
    assert {e["actor"] for e in trail} == {api.key_id}
    assert trail[0]["object"] == {"kind": "test", "id": made["id"], "toolId": "t-c"}


async def test_two_api_processes_see_each_others_versions_and_cases(api: Api) -> None:
    from tests.api.support import running_api

    async with running_api(api.settings) as second:
        await api.ok("POST", "/tools", 201, json={"id": "t-two", "definition": definition(ret())})
        await second.ok("POST", "/tools/t-two/tests", 201, json={
            "id": "c", "name": "made on the second", "expect": {"result": "ok"}})
        assert [c["id"] for c in await api.ok("GET", "/tools/t-two/tests")] == ["c"]
        published = await api.ok("POST", "/tools/t-two/publish", json={"note": "on the first"})
        assert published["tests"]["passed"] == 1
        listed = await second.ok("GET", "/tools/t-two/versions")
        assert [(v["version"], v["note"]) for v in listed["versions"]] == [(1, "on the first")]
        # A case saved on one process after the other ran the gate is seen by the next gate.
        await second.ok("PUT", "/tools/t-two/tests/c", json={
            "name": "now failing", "expect": {"result": "not ok"}})
        refused = await api.fails("POST", "/tools/t-two/publish", 409)
        assert refused["error"] == "tests_failed"


async def test_saved_cases_are_capped_per_tool_per_key_and_in_size(
        redis_url: str, prefix: str) -> None:
    from tests.api.support import api_settings, running_api

    settings = api_settings(redis_url, prefix, tests_max_per_tool=2, tests_max_per_key=3,
                            tests_max_case_bytes=2048)
    async with running_api(settings) as capped:
        for tool_id in ("t-a", "t-b"):
            await capped.ok("POST", "/tools", 201, json={"id": tool_id,
                                                         "definition": definition(ret())})
        for i in range(2):
            await capped.ok("POST", "/tools/t-a/tests", 201, json={"name": f"a{i}"})
        full = await capped.fails("POST", "/tools/t-a/tests", 409, json={"name": "a2"})
        assert full["error"] == "too_many_test_cases" and "PER_TOOL" in full["message"]
        await capped.ok("POST", "/tools/t-b/tests", 201, json={"name": "b0"})
        mine = await capped.fails("POST", "/tools/t-b/tests", 409, json={"name": "b1"})
        assert "PER_KEY" in mine["message"]
        big = await capped.fails("POST", "/tools/t-b/tests", 400, json={
            "name": "big", "inputs": {"text": "x" * 4000}})
        assert big["error"] == "test_case_too_large"


async def test_a_cases_variables_and_contact_id_reach_the_run(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-v", "definition": definition(
        ret("{{greeting}} {{who}} from {{contact.id}}"))})
    await api.ok("POST", "/tools/t-v/tests", 201, json={
        "id": "ctx", "name": "variables and contact", "inputs": {"who": "Ana"},
        "variables": {"greeting": "oi"}, "contactId": "5511999",
        "expect": {"result": "oi Ana from 5511999"}})
    (case,) = (await api.ok("POST", "/tools/t-v/tests/run"))["cases"]
    assert case["passed"] and case["result"] == "oi Ana from 5511999", case


async def test_saved_cases_are_capped_per_workspace_whichever_key_made_them(
        redis_url: str, prefix: str) -> None:
    from tests.api.support import api_settings, running_api

    settings = api_settings(redis_url, prefix, tests_max_per_workspace=2)
    async with running_api(settings) as capped:
        other_key = capped.as_key(await capped.new_key(role="editor"))
        other_workspace = capped.as_key(await capped.new_key(workspace="w2", role="admin"))
        for client, tool_id in ((capped.http, "t-w"), (other_workspace, "t-w2")):
            made = await client.post("/tools", json={"id": tool_id,
                                                     "definition": definition(ret())})
            assert made.status_code == 201, made.text
        await capped.ok("POST", "/tools/t-w/tests", 201, json={"name": "one"})
        second = await other_key.post("/tools/t-w/tests", json={"name": "two"})
        assert second.status_code == 201, second.text
        full = await other_key.post("/tools/t-w/tests", json={"name": "three"})
        assert full.status_code == 409, full.text
        assert full.json()["error"] == "too_many_test_cases"
        assert "PER_WORKSPACE" in full.json()["message"]
        elsewhere = await other_workspace.post("/tools/t-w2/tests", json={"name": "w2's own"})
        assert elsewhere.status_code == 201, elsewhere.text  # another workspace's count
        await other_key.aclose()
        await other_workspace.aclose()
