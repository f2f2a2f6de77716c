"""The history projection end to end: real workers, a real Valkey, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from chatflow.handlers.dataplane.worker import Worker
from chatflow.handlers.history.db import engine_for
from chatflow.handlers.history.runner import HISTORY_GROUP
from chatflow.handlers.history.schema import definitions, runs, steps
from tests.core.tools import call, http, ret, script, to, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer

PLANTED = "PLANTED-5ecret-9f3a"


@pytest.fixture
async def hist(redis_url: str, prefix: str, migrated_url: str) -> AsyncIterator[Harness]:
    h = Harness(redis_url, prefix, history_url=migrated_url)
    try:
        await h.start_worker()
        yield h
    finally:
        await h.close()


def history_of(h: Harness) -> Any:
    worker: Worker = h.workers[0]
    assert worker.history is not None
    return worker.history


async def rows(url: str, table: sa.Table, *where: Any) -> list[dict[str, Any]]:
    engine = engine_for(url)
    try:
        async with engine.connect() as conn:
            result = await conn.execute(sa.select(table).where(*where))
            return [dict(r._mapping) for r in result]
    finally:
        await engine.dispose()


async def test_a_run_and_its_child_land_in_the_history_with_their_traces(
        hist: Harness) -> None:
    url = hist.settings.history_url
    await hist.put_tool("pt-child", tool("s", script("s", "return 'hi ' + name", "greet",
                                                      to("r"), inputs={"name": "{{name}}"}),
                                          ret("r", "{{greet}}")))
    await hist.put_tool("pt-root", tool("c", call("c", "pt-child", "g", to("r"),
                                                  inputs={"name": "{{who}}"}),
                                        ret("r", "{{g}}!")))
    result = await hist.run("pt-root", inputs={"who": "Ana"}, contact="5511000000001")
    assert result.ok and result.result == "hi Ana!"
    await history_of(hist).wait_caught_up()

    root_id = result.executionId
    (root,) = await rows(url, runs, runs.c.execution_id == root_id)
    assert root["status"] == "ok" and root["depth"] == 0 and root["trace"] == "stored"
    assert root["contact_id"] == "5511000000001" and root["tool_id"] == "t-pt-root"
    assert root["published_tool_id"] == "pt-root" and root["result"] == "hi Ana!"
    assert root["ended_ms"] >= root["started_ms"] and root["def_hash"]
    (child,) = await rows(url, runs, runs.c.parent_execution_id == root_id)
    assert child["root_execution_id"] == root_id and child["depth"] == 1
    assert child["contact_id"] == "5511000000001"  # read from the root's log

    trace = await rows(url, steps, steps.c.execution_id == root_id)
    assert [s["type"] for s in sorted(trace, key=lambda s: s["seq"])] == [
        "started", "spawned", "block", "block", "finished"]
    spawned = next(s for s in trace if s["type"] == "spawned")
    assert spawned["child_execution_id"] == child["execution_id"]
    child_trace = await rows(url, steps, steps.c.execution_id == child["execution_id"])
    script_step = next(s for s in child_trace if s["type"] == "block" and s["block_id"] == "s")
    assert script_step["writes"] == {"greet": "hi Ana"} and script_step["ok"] is True
    (definition,) = await rows(url, definitions, definitions.c.def_hash == root["def_hash"])
    published = definition["definition"]  # the published record: id, toolId, name, definition
    assert published["id"] == "pt-root" and published["definition"]["onboardingBlockId"] == "c"


@pytest.mark.parametrize("why", ["tool_not_found", "tool_not_published"])
async def test_a_run_that_ends_before_its_first_block_is_stored_with_its_contact(
        hist: Harness, why: str) -> None:
    """Issue 32: `chatflow exec --contact X` of a tool not (yet) published under that id was
    stored with no contact, so support searching by contact never found it."""
    if why == "tool_not_published":
        await hist.put_tool("pt-draft", {"blocks": {"r": {"type": "return", "id": "r"}}})
    result = await hist.run("pt-draft" if why == "tool_not_published" else "Order tier",
                            inputs={"order": "o-1"}, contact="5511000000042")
    assert result.error is not None and result.error.code == why
    await history_of(hist).wait_caught_up()
    (row,) = await rows(hist.settings.history_url, runs,
                        runs.c.execution_id == result.executionId)
    assert (row["contact_id"], row["error_code"]) == ("5511000000042", why)
    assert row["inputs"] == {"order": "o-1"}
    trace = await rows(hist.settings.history_url, steps,
                       steps.c.execution_id == result.executionId)
    assert [s["type"] for s in sorted(trace, key=lambda s: s["seq"])] == ["started", "finished"]


async def test_a_failed_run_is_stored_with_its_code_message_and_http_exchange(
        hist: Harness, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/down", ({"error": "nope"}, 503) and
                      (lambda _r: (503, {"content-type": "application/json"}, b'{"e":1}')))
    await hist.put_tool("pt-f", tool("h", http("h", http_server.base + "/down", to("r"),
                                                responseStatusVariable="st"),
                                     ret("r", "x")))
    result = await hist.run("pt-f")
    assert not result.ok
    await history_of(hist).wait_caught_up()
    (row,) = await rows(hist.settings.history_url, runs, runs.c.execution_id == result.executionId)
    assert row["status"] == "error" and row["error_code"] == "http_status"
    assert "HTTP 503" in row["error_message"]
    (step,) = await rows(hist.settings.history_url, steps,
                         steps.c.execution_id == result.executionId, steps.c.type == "block",
                         steps.c.block_id == "h")
    assert (step["http_method"], step["http_status"]) == ("GET", 503)
    assert step["http_url"].endswith("/down") and step["writes"] == {"st": 503}


async def test_secrets_never_reach_the_history(hist: Harness,
                                                http_server: LoopbackServer) -> None:
    http_server.route("GET", "/me", {"name": "Ana", "accessToken": PLANTED})
    await hist.put_tool("pt-s", tool(
        "h", http("h", http_server.base + "/me?api_key=" + PLANTED, to("s"),
                  headers={"Authorization": "Bearer " + PLANTED, "X-Api-Key": PLANTED},
                  responseBodyVariable="me"),
        script("s", "return 'ok'", "done", to("r"), inputs={"password": "{{password}}"}),
        ret("r", "{{me.name}}")))
    result = await hist.run("pt-s", variables={"apiToken": PLANTED, "password": PLANTED},
                            router={"id": "r-1", "secret": PLANTED})
    assert result.ok and result.result == "Ana"
    assert http_server.requests[0].headers["authorization"] == "Bearer " + PLANTED
    await history_of(hist).wait_caught_up()
    url = hist.settings.history_url
    dumped = json.dumps([await rows(url, t) for t in (runs, steps, definitions)], default=str)
    assert "pt-s" in dumped and "***" in dumped  # the rows are there, masked
    assert PLANTED not in dumped
    if url.startswith("sqlite"):  # and no page of the file (or its WAL) holds it either
        from pathlib import Path

        path = Path(url.removeprefix("sqlite:///"))
        for part in path.parent.glob(path.name + "*"):
            assert PLANTED.encode() not in part.read_bytes(), part


async def test_a_redelivered_or_replayed_event_is_stored_once(hist: Harness) -> None:
    await hist.put_tool("pt-d", tool("r", ret("r", "x")))
    for _ in range(3):
        assert (await hist.run("pt-d")).ok
    projection = history_of(hist)
    await projection.wait_caught_up()
    entries = await hist.client.xrange(hist.keys.executions)
    assert len(entries) == 3
    assert await projection.apply(entries) == 0  # a replay of the whole stream
    assert await projection.apply(entries[:1] * 2) == 0  # the same entry twice in a batch
    assert len(await rows(hist.settings.history_url, runs)) == 3


async def test_a_run_whose_log_expired_is_stored_without_a_trace(hist: Harness) -> None:
    # A recent time: a run ended longer ago than the run retention (90 days) is pruned.
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    event = {"toolId": "t-x", "publishedToolId": "pt-x", "durationMs": 12, "success": False,
             "occurredAt": now, "executionId": "1-gone",
             "rootExecutionId": "1-gone", "commandId": "cmd-gone", "errorCode": "tool_timeout"}
    await hist.client.xadd(hist.keys.executions, {"data": json.dumps(event)})
    await history_of(hist).wait_caught_up()
    (row,) = await rows(hist.settings.history_url, runs, runs.c.execution_id == "1-gone")
    assert (row["trace"], row["status"], row["duration_ms"]) == ("expired", "timeout", 12)
    assert row["ended_ms"] - row["started_ms"] == 12
    assert await rows(hist.settings.history_url, steps, steps.c.execution_id == "1-gone") == []


async def test_a_malformed_event_is_acked_and_skipped(hist: Harness) -> None:
    await hist.client.xadd(hist.keys.executions, {"data": b"{not json"})
    await hist.client.xadd(hist.keys.executions, {"other": b"x"})
    await history_of(hist).wait_caught_up()
    groups = {g["name"].decode(): g for g in await hist.client.xinfo_groups(hist.keys.executions)}
    assert groups[HISTORY_GROUP]["pending"] == 0
    assert await rows(hist.settings.history_url, runs) == []


async def test_verify_finds_every_event_stored_once_and_names_a_missing_row(
        hist: Harness) -> None:
    from chatflow.handlers.history.verify import verify

    await hist.put_tool("pt-v", tool("r", ret("r", "x")))
    ran = [await hist.run("pt-v") for _ in range(3)]
    await history_of(hist).wait_caught_up()
    engine = engine_for(hist.settings.history_url)
    try:
        found = await verify(hist.client, hist.keys, engine)
        assert (found.events, found.stored, found.missing) == (3, 3, [])
        async with engine.begin() as conn:
            await conn.execute(sa.delete(runs).where(runs.c.execution_id == ran[1].executionId))
        found = await verify(hist.client, hist.keys, engine)
        assert found.missing == [ran[1].executionId] and not found.ok
    finally:
        await engine.dispose()


async def projections_verify(h: Harness) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATFLOW_")}
    env.update(REDIS_URL=h.url, CHATFLOW_PREFIX=h.settings.prefix,
               CHATFLOW_PARTITIONS=str(h.settings.partitions),
               CHATFLOW_HISTORY_URL=h.settings.history_url)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "chatflow.handlers.cli", "projections", "rebuild", "--verify",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
    return int(proc.returncode or 0), out.decode()


async def test_projections_rebuild_verify_passes_a_consistent_history_and_names_what_differs(
        hist: Harness) -> None:
    await hist.put_tool("pt-rv", tool("r", ret("r", "x")), tool_id="t-rv")
    ran = [await hist.run("pt-rv") for _ in range(3)]
    await history_of(hist).wait_caught_up()
    await hist.workers[0].projection.wait_caught_up()
    code, out = await projections_verify(hist)
    assert code == 0, out
    assert "projections equal" in out and "3 executions in the stream, 3 stored" in out
    engine = engine_for(hist.settings.history_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.delete(runs).where(runs.c.execution_id == ran[0].executionId))
            await conn.execute(sa.update(runs).where(runs.c.execution_id == ran[1].executionId)
                               .values(status="error"))
    finally:
        await engine.dispose()
    code, out = await projections_verify(hist)
    assert code == 1, out
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert {"execution": ran[0].executionId, "history": "missing"} in lines
    assert {"execution": ran[1].executionId, "column": "status", "stream": "ok",
            "history": "error"} in lines
    assert "1 missing, 1 differ" in out


async def test_the_metrics_rebuild_from_the_history_once_the_stream_is_trimmed(
        hist: Harness) -> None:
    from chatflow.handlers.history.queries import metric_rows
    from chatflow.handlers.projections import rebuild, snapshot, tool_metrics

    await hist.put_tool("pt-ok", tool("r", ret("r", "x")), tool_id="t-ok")
    await hist.put_tool("pt-bad", tool("s", script("s", "throw new Error('no')", "v", to("r")),
                                       ret("r", "x")), tool_id="t-bad")
    for _ in range(3):
        assert (await hist.run("pt-ok")).ok
    assert not (await hist.run("pt-bad")).ok
    await history_of(hist).wait_caught_up()
    await hist.workers[0].projection.wait_caught_up()
    live = await snapshot(hist.client, hist.keys)
    await hist.client.xtrim(hist.keys.executions, maxlen=0, approximate=False)
    assert await rebuild(hist.client, hist.keys, ns="stream-only") == 0
    assert await tool_metrics(hist.client, hist.keys, ["t-ok"], ns="stream-only") == \
        {"t-ok": {"runs7d": 0, "avgMs": 0, "successRate": 0.0}}
    engine = engine_for(hist.settings.history_url)
    try:
        await rebuild(hist.client, hist.keys, ns="from-history",
                      history=metric_rows(engine, 0, page=2))  # pages of 2: the cursor works
    finally:
        await engine.dispose()
    assert await snapshot(hist.client, hist.keys, ns="from-history") == live
    assert live["t-ok"]["metrics"]["runs7d"] == 3 and live["t-bad"]["metrics"]["runs7d"] == 1
