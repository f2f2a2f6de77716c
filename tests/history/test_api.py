"""``GET /api/executions?state=...`` and ``GET /api/executions/{id}/history``: finding runs in
the history through the HTTP API (real API, real worker, SQLite)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from chatflow.handlers.history.db import engine_for, upgrade
from chatflow.handlers.operations.embedded import EmbeddedServer
from tests.api.support import Api, api_settings, running_api
from tests.core.tools import http, ret, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer


@pytest.fixture
async def both(redis_url: str, prefix: str, tmp_path: Path) -> AsyncIterator[tuple[Harness, Api]]:
    async with _both(redis_url, prefix, tmp_path) as pair:
        yield pair


@asynccontextmanager
async def _both(redis_url: str, prefix: str, tmp_path: Path) -> AsyncIterator[tuple[Harness, Api]]:
    url = f"sqlite:///{tmp_path / 'history.db'}"
    engine = engine_for(url)
    await upgrade(engine)
    await engine.dispose()
    h = Harness(redis_url, prefix, history_url=url)
    try:
        await h.start_worker()
        async with running_api(api_settings(redis_url, prefix, history_url=url)) as api:
            yield h, api
    finally:
        await h.close()


async def caught_up(h: Harness) -> None:
    assert h.workers[0].history is not None
    await h.workers[0].history.wait_caught_up()


async def test_a_failed_run_is_found_by_contact_and_time_then_opened_with_its_trace(
        both: tuple[Harness, Api]) -> None:
    h, api = both
    await h.put_tool("pt-ok", tool("r", ret("r", "fine")))
    await h.put_tool("pt-bad", tool("h", http("h", "http://127.0.0.1:1/none", to("r")),
                                    ret("r", "x")))
    mark = await api.ok("GET", "/executions", params={"state": "finished"})
    assert mark == {"executions": [], "nextCursor": None}
    assert (await h.run("pt-ok", contact="c-1")).ok
    failed = await h.run("pt-bad", contact="c-1")
    assert not failed.ok
    assert (await h.run("pt-ok", contact="c-2")).ok
    await caught_up(h)

    found = await api.ok("GET", "/executions", params={
        "state": "finished", "contactId": "c-1", "status": "error", "since": "0"})
    (run,) = found["executions"]
    assert run["executionId"] == failed.executionId and run["errorCode"] == failed.error.code
    by_contact = await api.ok("GET", "/executions", params={"state": "all", "contactId": "c-1"})
    assert by_contact["executions"][0]["executionId"] == failed.executionId  # newest first
    assert len(by_contact["executions"]) == 2
    by_code = await api.ok("GET", "/executions", params={"state": "finished",
                                                         "errorCode": failed.error.code})
    assert [r["executionId"] for r in by_code["executions"]] == [failed.executionId]
    later = await api.ok("GET", "/executions", params={"state": "finished",
                                                       "since": "2999-01-01T00:00:00Z"})
    assert later["executions"] == []

    detail = await api.ok("GET", f"/executions/{failed.executionId}/history")
    assert detail["status"] == "error" and detail["published"]["id"] == "pt-bad"
    block = next(s for s in detail["steps"] if s["type"] == "block" and s["blockId"] == "h")
    assert block["error"]["code"] == failed.error.code and block["http"]["method"] == "GET"


async def test_pages_follow_the_cursor_newest_first_without_repeats(
        both: tuple[Harness, Api]) -> None:
    h, api = both
    await h.put_tool("pt-p", tool("r", ret("r", "x")))
    ids = [(await h.run("pt-p")).executionId for _ in range(5)]
    await caught_up(h)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"state": "finished", "publishedToolId": "pt-p", "limit": "2"}
        if cursor:
            params["cursor"] = cursor
        page = await api.ok("GET", "/executions", params=params)
        seen += [r["executionId"] for r in page["executions"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages == 3 and sorted(seen) == sorted(ids) and len(set(seen)) == 5
    started = [r["startedMs"] for r in (await api.ok("GET", "/executions", params={
        "state": "finished", "limit": "5"}))["executions"]]
    assert started == sorted(started, reverse=True)


async def test_bad_filters_and_cursors_are_refused_naming_them(
        both: tuple[Harness, Api]) -> None:
    _h, api = both
    body = await api.fails("GET", "/executions", 400, params={"state": "finished",
                                                              "cursor": "%%%garbage"})
    assert "cursor" in body["message"]
    body = await api.fails("GET", "/executions", 400, params={"state": "finished",
                                                              "since": "yesterday"})
    assert "since" in body["message"]
    body = await api.fails("GET", "/executions", 400, params={"state": "sideways"})
    assert "query.state" in body["message"]
    await api.fails("GET", "/executions/0-nothing/history", 404)


async def test_another_workspaces_runs_are_neither_listed_nor_opened(
        both: tuple[Harness, Api]) -> None:
    h, api = both
    async with api.as_key(await api.new_key(workspace="b", role="editor")) as b:
        created = await b.post("/tools", json={"id": "t-b", "definition": tool("r", ret("r", "b"))})
        assert created.status_code == 201, created.text
        assert (await b.post("/tools/t-b/publish")).status_code == 200
        pt_b = (await b.get("/tools/t-b")).json()["publishedToolId"]
        run_b = await h.run(pt_b)
        await h.put_tool("pt-d", tool("r", ret("r", "d")))
        run_d = await h.run("pt-d")
        await caught_up(h)
        mine = (await b.get("/executions", params={"state": "finished"})).json()
        assert [r["executionId"] for r in mine["executions"]] == [run_b.executionId]
        assert (await b.get(f"/executions/{run_d.executionId}/history")).status_code == 404
        theirs = await api.ok("GET", "/executions", params={"state": "finished"})
        assert [r["executionId"] for r in theirs["executions"]] == [run_d.executionId]
        await api.fails("GET", f"/executions/{run_b.executionId}/history", 404)


async def test_without_state_the_route_still_answers_the_list_in_flight(
        both: tuple[Harness, Api]) -> None:
    _h, api = both
    assert await api.ok("GET", "/executions") == []
    assert await api.ok("GET", "/executions", params={"state": "running"}) == {
        "executions": [], "nextCursor": None}


async def test_a_test_run_of_a_saved_tool_is_kept_with_its_trace_and_only_its_workspace_opens_it(
        both: tuple[Harness, Api]) -> None:
    _h, api = both
    server = LoopbackServer()
    server.route("GET", "/echo", {"fine": True})
    server.start()
    definition = tool("h", http("h", f"{server.base}/echo", to("r"),
                                headers={"Authorization": "Bearer sk-test-run-secret"}),
                      ret("r", "checked {{who}}"))
    try:
        await _test_run_kept(api, definition)
    finally:
        server.stop()


async def _test_run_kept(api: Api, definition: dict[str, Any]) -> None:
    async with api.as_key(await api.new_key(workspace="b", role="editor")) as b:
        created = await b.post("/tools", json={"id": "t-tb", "definition": definition})
        assert created.status_code == 201, created.text
        answer = await b.post("/tools/test-flow", json={"toolId": "t-tb",
                                                         "inputs": {"who": "Ana"}})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["ok"] and body["inHistory"] is True
        run_id = body["executionId"]
        opened = await b.get(f"/executions/{run_id}/history")
        assert opened.status_code == 200, opened.text
        run = opened.json()
        assert run["status"] == "ok" and run["toolId"] == "t-tb"
        assert [s["blockId"] for s in run["steps"] if s["type"] == "block"] == ["h", "r"]
        assert run["published"]["definition"]["blocks"]["h"]["type"] == "httpCall"
        assert "sk-test-run-secret" not in opened.text
        listed = (await b.get("/executions", params={"state": "finished"})).json()
        assert [r["executionId"] for r in listed["executions"]] == [run_id]
    # The default workspace neither opens nor lists workspace b's test run.
    await api.fails("GET", f"/executions/{run_id}/history", 404)
    theirs = await api.ok("GET", "/executions", params={"state": "finished"})
    assert run_id not in [r["executionId"] for r in theirs["executions"]]


async def test_a_test_run_of_an_unsaved_definition_is_answered_but_not_kept(
        both: tuple[Harness, Api]) -> None:
    _h, api = both
    body = await api.ok("POST", "/tools/test-flow",
                        json={"definition": tool("r", ret("r", "adhoc"))})
    assert body["ok"] and body["result"] == "adhoc" and body["inHistory"] is False
    await api.fails("GET", f"/executions/{body['executionId']}/history", 404)


@pytest.fixture
async def own_both(prefix: str, tmp_path: Path) -> AsyncIterator[tuple[Harness, Api]]:
    """``both`` on a Valkey of this test alone: it gets flushed."""
    server = EmbeddedServer().start()
    try:
        async with _both(server.url, prefix, tmp_path) as pair:
            yield pair
    finally:
        server.stop()


async def test_the_history_survives_valkey_losing_everything(
        own_both: tuple[Harness, Api]) -> None:
    """A Valkey restart without persistence (FLUSHALL: every key, stream and API key gone):
    the finished run is still found and opened, with its trace, from the history."""
    h, api = own_both
    await h.put_tool("pt-kept", tool("r", ret("r", "kept")))
    done = await h.run("pt-kept", contact="c-restart")
    assert done.ok
    await caught_up(h)
    await h.client.flushall()
    assert await h.client.get(h.keys.tool("pt-kept")) is None  # the running worker may
    # already have recreated its consumer groups: the tool and the run's keys are gone
    # The old key went with Valkey: an operator makes a new one, as after any such loss.
    async with api.as_key(await api.new_key(workspace="default", role="viewer")) as viewer:
        found = await viewer.get("/executions", params={"state": "finished",
                                                        "contactId": "c-restart"})
        assert found.status_code == 200, found.text
        assert [r["executionId"] for r in found.json()["executions"]] == [done.executionId]
        opened = await viewer.get(f"/executions/{done.executionId}/history")
        assert opened.status_code == 200, opened.text
        assert [s["blockId"] for s in opened.json()["steps"] if s["type"] == "block"] == ["r"]
