"""The routes the Studio reads (no browser): the debug flag, the debug stream as server-sent
events resumed by Last-Event-ID, executions, a tool's days, the definition check, the files."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from chatflow.handlers.api.studio_routes import daily
from chatflow.handlers.operations.serving import announce, api_server
from chatflow.handlers.projections.metrics import HOUR_MS
from chatflow.handlers.settings import Settings
from tests.api.support import Api

DAY_MS = 24 * HOUR_MS


async def frames(response: httpx.Response) -> AsyncIterator[dict[str, str]]:
    frame: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if frame:
                yield frame
            frame = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            frame[name] = value


async def read(api: Api, contact: str, count: int, **headers: str) -> tuple[str, list[dict[str, str]]]:
    """The ready frame's id and the next ``count`` debug frames."""
    async with api.http.stream("GET", f"/debug/{contact}/stream", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        got: list[dict[str, str]] = []
        ready = ""

        async def collect() -> None:
            nonlocal ready
            async for frame in frames(response):
                if frame.get("event") == "ready":
                    ready = frame["id"]
                    ready_seen.set()
                else:
                    got.append(frame)
                    if len(got) == count:
                        return

        ready_seen = asyncio.Event()
        task = asyncio.create_task(collect())
        await asyncio.wait_for(ready_seen.wait(), 10)
        await writes_after_ready(api, contact)
        await asyncio.wait_for(task, 10)
        return ready, got


pending: dict[str, list[dict[str, Any]]] = {}


async def writes_after_ready(api: Api, contact: str) -> None:
    for event in pending.pop(contact, []):
        await api.client.xadd(api.keys.debug(contact), {"data": json.dumps(event)})


def event(n: int, tool: str = "t-mine", workspace: str | None = None) -> dict[str, Any]:
    """A debug event as the runtime writes it: its tree's workspace rides in it, left out for
    ``default``."""
    found = {"type": "action_result", "n": n, "payload": {"toolId": tool}}
    return {**found, "workspace": workspace} if workspace else found


async def test_the_debug_stream_resumes_from_last_event_id_without_duplicates_or_gaps(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-mine"})
    stream = api.keys.debug("c1")
    for n in range(2):
        await api.client.xadd(stream, {"data": json.dumps(event(n))})
    ready, first = await read(api, "c1", 2, **{"Last-Event-ID": "0-0"})
    assert ready == "0-0" and [json.loads(f["data"])["n"] for f in first] == [0, 1]
    pending["c1"] = [event(n) for n in range(2, 5)]
    ready, rest = await read(api, "c1", 3, **{"Last-Event-ID": first[-1]["id"]})
    assert ready == first[-1]["id"]
    stored = [i.decode() for i, _ in await api.client.xrange(stream)]
    assert [f["id"] for f in first + rest] == stored
    assert [json.loads(f["data"])["n"] for f in rest] == [2, 3, 4]


async def test_a_new_debug_stream_starts_at_the_current_end_and_names_it(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-mine"})
    stream = api.keys.debug("c2")
    old = (await api.client.xadd(stream, {"data": json.dumps(event(0))})).decode()
    pending["c2"] = [event(1)]
    ready, got = await read(api, "c2", 1)
    assert ready == old
    assert json.loads(got[0]["data"]) == event(1)


async def test_another_workspaces_debug_events_are_left_out_but_their_ids_advance(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-mine"})
    async with api.as_key(await api.new_key(workspace="other", role="admin")) as other:
        (await other.post("/tools", json={"id": "t-theirs", "name": "secret plans"})).raise_for_status()
    # The tree's workspace decides, not the tool an event names (which may be purged or
    # re-created since): another workspace's events, and one of no workspace there is.
    pending["c3"] = [event(0, "t-theirs", "other"), event(1, "t-theirs"),
                     event(2, "t-mine", "nobody")]
    _ready, got = await read(api, "c3", 3)
    assert [f["event"] for f in got] == ["skipped", "debug", "skipped"]
    assert all(f["data"] == "{}" for f in got if f["event"] == "skipped")
    stored = [i.decode() for i, _ in await api.client.xrange(api.keys.debug("c3"))]
    assert [f["id"] for f in got] == stored


async def test_a_viewer_reads_debug_but_cannot_switch_it(api: Api) -> None:
    async with api.as_key(await api.new_key(role="viewer")) as viewer:
        assert (await viewer.get("/debug/5511")).status_code == 200
        assert (await viewer.put("/debug/5511")).status_code == 403
        assert (await viewer.delete("/debug/5511")).status_code == 403
    assert not await api.client.exists(api.keys.debug_flag("5511"))


async def test_a_bad_last_event_id_or_contact_is_a_400(api: Api) -> None:
    body = await api.fails("GET", "/debug/c1/stream", 400, headers={"Last-Event-ID": "nope"})
    assert body["error"] == "invalid_event_id"
    await api.fails("PUT", "/debug/has%20space", 400)


async def test_the_debug_flag_is_switched_on_and_off(api: Api) -> None:
    flag = api.keys.debug_flag("5511")
    assert (await api.ok("GET", "/debug/5511"))["enabled"] is False
    assert (await api.ok("PUT", "/debug/5511"))["enabled"] is True
    assert await api.client.exists(flag)
    assert (await api.ok("GET", "/debug/5511"))["enabled"] is True
    await api.ok("DELETE", "/debug/5511")
    assert not await api.client.exists(flag)


async def test_no_executions_in_flight_is_an_empty_list_and_an_unknown_one_a_404(api: Api) -> None:
    assert await api.ok("GET", "/executions") == []
    await api.fails("GET", "/executions/0-nothing/events", 404)
    await api.fails("GET", "/executions/garbage/events", 404)


def test_daily_sums_hourly_buckets_per_utc_day_oldest_first() -> None:
    now = 20_000 * DAY_MS + 5 * HOUR_MS
    today, yesterday = now // HOUR_MS, now // HOUR_MS - 24
    buckets = {f"{today}:n".encode(): b"2", f"{today}:ok".encode(): b"1", f"{today}:ms".encode(): b"300",
               f"{yesterday}:n".encode(): b"1", f"{yesterday}:ok".encode(): b"1",
               f"{yesterday}:ms".encode(): b"50", f"{today - 24 * 7}:n".encode(): b"9"}
    days = daily(buckets, now)
    assert len(days) == 7
    assert days[-1] == {"day": "2024-10-04", "runs": 2, "avgMs": 150, "successRate": 0.5}
    assert days[-2]["runs"] == 1 and days[-2]["avgMs"] == 50
    assert sum(d["runs"] for d in days) == 3  # the eighth day back is outside


async def test_a_tools_days_are_a_404_for_an_unknown_tool(api: Api) -> None:
    await api.fails("GET", "/tools/t-none/daily", 404)


async def test_the_definition_check_names_each_problem_by_its_path(api: Api) -> None:
    body = await api.ok("POST", "/definitions/check", json={"onboardingBlockId": "h", "blocks": {
        "h": {"type": "httpCall", "id": "h", "method": "GET", "defaultOutput": {"type": "end"}}}})
    assert body["ok"] is False
    assert "definition.blocks.h.url" in [p["path"] for p in body["problems"]]


async def test_studio_files_and_docs_are_served_with_a_strict_policy(api: Api) -> None:
    for path in ("/studio/", "/studio/js/main.js", "/studio/studio.css", "/api/docs",
                 "/studio/swagger-ui/swagger-ui-bundle.js"):
        response = await api.root.get(path)
        assert response.status_code == 200, path
        csp = response.headers["content-security-policy"]
        assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp
    assert (await api.root.get("/studio")).status_code == 308
    assert (await api.root.get("/studio/config.json")).json() == {"apiBase": "/api"}


def test_chatflow_up_prints_the_studio_url(capsys: pytest.CaptureFixture[str]) -> None:
    announce(Settings(redis_url="redis://127.0.0.1:1"), api_server(
        Settings(redis_url="redis://127.0.0.1:1"), "127.0.0.1", 8091))
    assert "Studio on http://127.0.0.1:8091/studio/" in capsys.readouterr().err
