"""The publish gate, and a test case saved from a recorded run (real worker, real API, the run
history on SQLite: the ``both`` fixture of tests/history/test_api.py): the case fails until the
draft is fixed, then the gate lets it publish."""

from __future__ import annotations

from typing import Any

from tests.api.support import Api
from tests.harness import Harness
from tests.registry.defs import definition, ret, to
from tests.support.http import LoopbackServer


def first_name(url: str, source: str) -> dict[str, Any]:
    http = {"type": "httpCall", "id": "h", "url": url + "/people?q={{q}}", "method": "GET",
            "headers": {"Authorization": "Bearer {{token}}"},
            "responseStatusVariable": "st", "responseBodyVariable": "resp",
            "defaultOutput": to("s")}
    script = {"type": "executeScript", "id": "s", "source": source,
              "inputVariables": [{"name": "resp", "value": "{{resp}}"}],
              "outputVariable": "name", "defaultOutput": to("r")}
    return definition(http, script, ret("{{name}}"))


BROKEN = "return resp.items[0].name"
FIXED = "return resp.items.length ? resp.items[0].name : 'nobody'"


async def test_a_case_saved_from_a_failed_run_guards_the_publish_until_the_draft_is_fixed(
        both: tuple[Harness, Api], http_server: LoopbackServer) -> None:
    h, api = both
    http_server.route("GET", "/people", {"items": []})  # what broke the tool in production
    await api.ok("POST", "/tools", 201, json={"id": "t-g", "name": "First name",
                                              "definition": first_name(http_server.base, BROKEN)})
    pt = (await api.ok("POST", "/tools/t-g/publish"))["publishedToolId"]
    failed = await h.run(pt, inputs={"q": "zed", "token": "s3cret-token"})
    assert not failed.ok and failed.error is not None
    assert h.workers[0].history is not None
    await h.workers[0].history.wait_caught_up()
    hits = len(http_server.requests)

    saved = await api.ok("POST", f"/executions/{failed.executionId}/test-case", 201,
                         json={"name": "empty search"})
    assert saved["toolId"] == "t-g" and saved["inputs"]["q"] == "zed"
    assert saved["mocks"] == {"h": {"status": 200, "body": {"items": []}, "headers": {}}}
    assert saved["expect"] == {}  # a failed run's case expects success
    assert any("the run failed" in n for n in saved["notes"])
    # The token input is a secret: the history masked it, and the case says so.
    assert saved["inputs"]["token"] == "***"
    assert saved["needs"] == ["inputs.token: masked in the history; put in a value"]
    assert "s3cret" not in str(saved)

    refused = await api.fails("POST", "/tools/t-g/publish", 409, json={"note": "again"})
    assert refused["error"] == "tests_failed" and refused["failed"] == 1
    (failure,) = refused["failures"]
    assert failure["id"] == saved["id"] and failure["differences"][0]["field"] == "ok"
    run = await api.ok("GET", f"/executions/{failure['executionId']}/history")
    assert run["status"] == "error"  # the run the failing case produced has its page

    await api.ok("PATCH", "/tools/t-g", json={"definition": first_name(http_server.base, FIXED)})
    report = await api.ok("POST", "/tools/t-g/tests/run")
    assert report["passed"] == 1 and report["cases"][0]["result"] == "nobody"
    published = await api.ok("POST", "/tools/t-g/publish", json={"note": "handles no items"})
    assert published["publishedVersion"] == 2
    assert published["tests"] == {"passed": 1, "failed": 0, "forced": False}
    assert len(http_server.requests) == hits  # the case runs reached nothing outside
    # The old version still fails its case; version 2 passes it.
    old = await api.ok("POST", "/tools/t-g/tests/run", json={"version": 1})
    assert (old["against"], old["failed"]) == (1, 1)


async def test_an_editor_forces_a_publish_past_failing_cases_with_a_note(
        both: tuple[Harness, Api], http_server: LoopbackServer) -> None:
    _h, api = both
    await api.ok("POST", "/tools", 201, json={"id": "t-f",
                                              "definition": first_name(http_server.base, BROKEN)})
    await api.ok("POST", "/tools/t-f/tests", 201, json={
        "id": "empty", "name": "no items", "mocks": {"h": {"status": 200, "body": {"items": []}}},
        "expect": {"result": "nobody"}})
    editor = api.as_key(await api.new_key(role="editor"))
    refused = await editor.post("/tools/t-f/publish", json={})
    assert refused.status_code == 409 and refused.json()["error"] == "tests_failed"
    forced = await editor.post("/tools/t-f/publish", json={"force": True,
                                                             "note": "hotfix, case next"})
    assert forced.status_code == 200, forced.text
    assert forced.json()["tests"] == {"passed": 0, "failed": 1, "forced": True}
    (version,) = (await api.ok("GET", "/tools/t-f/versions"))["versions"]
    assert version["note"] == "hotfix, case next" and version["forced"] == {"failed": ["empty"]}
    assert http_server.requests == []
    await editor.aclose()


async def test_a_case_saved_from_a_successful_run_expects_its_result_and_passes(
        both: tuple[Harness, Api], http_server: LoopbackServer) -> None:
    h, api = both
    http_server.route("GET", "/people", {"items": [{"name": "Ana"}]})
    await api.ok("POST", "/tools", 201, json={"id": "t-ok",
                                              "definition": first_name(http_server.base, FIXED)})
    pt = (await api.ok("POST", "/tools/t-ok/publish"))["publishedToolId"]
    done = await h.run(pt, inputs={"q": "ana", "token": "t"})
    assert done.ok and done.result == "Ana", done
    assert h.workers[0].history is not None
    await h.workers[0].history.wait_caught_up()
    hits = len(http_server.requests)

    saved = await api.ok("POST", f"/executions/{done.executionId}/test-case", 201,
                         json={"name": "finds Ana"})
    assert saved["expect"] == {"result": "Ana"}
    assert saved["mocks"]["h"]["body"] == {"items": [{"name": "Ana"}]}
    report = await api.ok("POST", "/tools/t-ok/tests/run")
    assert (report["passed"], report["failed"]) == (1, 0), report["cases"]
    published = await api.ok("POST", "/tools/t-ok/publish", json={"note": "guarded"})
    assert published["tests"] == {"passed": 1, "failed": 0, "forced": False}
    assert len(http_server.requests) == hits  # the case ran on its mock
