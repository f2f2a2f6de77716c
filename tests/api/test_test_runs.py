"""The builder's test runs (test-flow, test-block) and the internal execute route."""

from __future__ import annotations

from tests.api.support import INTERNAL_SECRET, Api, Upstream
from tests.registry.defs import definition, ret, returning, to

SCRIPT = {"type": "executeScript", "id": "s", "source": "return a * 2",
          "inputVariables": [{"name": "a", "value": "{{n}}"}], "outputVariable": "double",
          "defaultOutput": to("r")}


async def test_test_flow_runs_a_saved_tool_from_a_chosen_block_and_returns_the_trace(
        api: Api) -> None:
    first = {**SCRIPT, "id": "first", "source": "return 'never'", "defaultOutput": to("s")}
    await api.ok("POST", "/tools", 201, json={"id": "t-flow", "definition": definition(
        first, SCRIPT, ret("{{double}}"))})
    run = await api.ok("POST", "/tools/test-flow", json={"toolId": "t-flow",
                                                         "startBlockId": "s",
                                                         "variables": {"n": 21}})
    assert run["ok"] and run["result"] == "42"
    blocks = [e["blockId"] for e in run["trace"] if e["type"] == "block"]
    assert blocks == ["s", "r"]
    assert run["variables"]["double"] == 42


async def test_test_flow_runs_an_unsaved_definition_and_reports_failures(api: Api) -> None:
    boom = {**SCRIPT, "source": "throw new Error('nope')"}
    run = await api.ok("POST", "/tools/test-flow", json={"definition": definition(boom, ret())})
    assert run["ok"] is False and run["error"]["code"]
    assert "nope" in run["error"]["message"]


async def test_test_flow_answers_400_and_404(api: Api) -> None:
    await api.fails("POST", "/tools/test-flow", 400, json={})
    body = await api.fails("POST", "/tools/test-flow", 400, json={
        "definition": returning(), "startBlockId": "ghost"})
    assert body["problems"][0]["path"] == "definition.onboardingBlockId"
    await api.fails("POST", "/tools/test-flow", 404, json={"toolId": "t-none"})


async def test_test_block_runs_one_block_alone(api: Api, upstream: Upstream) -> None:
    block = {"type": "httpCall", "id": "h", "url": upstream.url + "/ping?x={{x}}",
             "method": "GET", "responseBodyVariable": "resp", "responseStatusVariable": "st",
             "defaultOutput": to("elsewhere"),
             "outputConditions": [{"id": "ok", "rules": [
                 {"variable": "st", "operator": "equals", "value": "200"}], "target": to("n")}]}
    run = await api.ok("POST", "/tools/test-block", json={"block": block, "variables": {"x": 1}})
    assert run["ok"] and run["result"] == ""
    assert run["variables"]["st"] == 200 and run["variables"]["resp"]["query"] == {"x": "1"}
    (entry,) = [e for e in run["trace"] if e["type"] == "block"]
    assert entry["matchedConditionId"] == "ok"


async def test_test_block_answers_400_for_a_broken_block(api: Api) -> None:
    body = await api.fails("POST", "/tools/test-block", 400, json={
        "block": {"type": "httpCall", "id": "h", "defaultOutput": {"type": "end"}}})
    assert "block.url" in [p["path"] for p in body["problems"]]
    await api.fails("POST", "/tools/test-block", 400, json={"variables": {}})


async def test_internal_execute_needs_the_secret_and_runs_with_empty_variables(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-int", "definition": definition(
        ret("[{{cep}}|{{name}}]"))})
    pt = (await api.ok("POST", "/tools/t-int/publish"))["publishedToolId"]
    url = "/internal/tools/execute"
    body = {"publishedToolId": pt, "inputs": {"cep": "01001000"}}
    assert (await api.root.post(url, json=body)).status_code == 401
    wrong = await api.root.post(url, json=body, headers={"x-internal-secret": "nope"})
    assert wrong.status_code == 401
    ok = await api.root.post(url, json=body, headers={"x-internal-secret": INTERNAL_SECRET})
    assert ok.status_code == 200, ok.text
    assert ok.json()["result"] == "[01001000|]"
    executions = await api.client.xrange(api.keys.executions)
    assert len(executions) == 1
    missing = await api.root.post(url, json={"publishedToolId": "pt-none"},
                                  headers={"x-internal-secret": INTERNAL_SECRET})
    assert missing.status_code == 404
    assert missing.json()["message"] == "tool não encontrada: publishedToolId=pt-none"
    bad = await api.root.post(url, json={}, headers={"x-internal-secret": INTERNAL_SECRET})
    assert bad.status_code == 400
    assert (await api.http.post(url, json=body)).status_code == 404  # not under /api


async def test_test_block_runs_a_fetch_media_block_like_the_workers_do(
        api: Api, upstream: Upstream) -> None:
    block = {"type": "fetchMedia", "id": "m", "mode": "url", "mediaIdVariable": "mid",
             "urlVariable": "u", "base64Variable": "b64", "mimeTypeVariable": "mime",
             "defaultOutput": to("elsewhere")}
    run = await api.ok("POST", "/tools/test-block",
                       json={"block": block, "variables": {"u": upstream.url + "/ping"}})
    assert run["ok"], run
    assert run["variables"]["b64"] and run["variables"]["mime"]
