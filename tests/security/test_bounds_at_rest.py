"""Issue 29's medium and low findings that are not about one workspace reaching another:
what forks leave behind, filters that overflowed the database, and where /metrics listens."""

from __future__ import annotations

import base64
import os

import psutil

from chatflow.handlers.history.writer import HistoryWriter
from chatflow.handlers.operations.embedded import free_port
from tests.harness import Harness
from tests.registry.defs import definition, ret
from tests.security.tenants import Tenants, ok, tenants

__all__ = ["tenants"]


async def test_a_forks_reply_stream_expires_and_its_definition_is_capped_and_pruned(
        tenants: Tenants) -> None:
    t = tenants
    run = await t.run_a()
    started = await ok(t.a, "POST", f"/executions/{run}/fork", 202, json={"fromBlockId": "e"})
    reply = started["replyTo"]
    answered = await t.h.client.xread({reply: "0-0"}, block=30_000)
    assert answered, "the fork answered on its own reply stream"
    # Nobody waited for it: the stream goes away by itself.
    assert 0 < await t.h.client.ttl(reply) <= t.api.settings.state_ttl_s

    huge = definition(ret("x" * (300 * 1024), block_id="e"))
    too_big = await t.a.post(f"/executions/{run}/fork",
                             json={"fromBlockId": "e", "definition": huge})
    assert too_big.status_code == 400, too_big.text
    assert too_big.json()["error"] == "definition_too_large"
    assert "CHATFLOW_DEFINITION_MAX_BYTES" in too_big.json()["message"]

    # An edited definition a fork ran is stored once, and goes with the runs that used it.
    edited = definition(ret("edited", block_id="e"))
    forked = await ok(t.a, "POST", f"/executions/{run}/fork", params={"wait": "true"},
                      json={"fromBlockId": "e", "definition": edited})
    await t.caught_up()
    fork_run = await ok(t.a, "GET", f"/executions/{forked['executionId']}/history")
    assert fork_run["published"]["definition"]["blocks"]["e"]["value"] == "edited"
    writer = HistoryWriter(t.h.workers[0].history.engine)  # type: ignore[union-attr]
    far = 10**15
    pruned = await writer.prune(now_ms=far, trace_retention_ms=1, run_retention_ms=1)
    assert pruned.runs >= 3 and pruned.definitions >= 2, pruned


async def test_a_time_or_cursor_past_what_the_database_holds_is_a_400_naming_it(
        tenants: Tenants) -> None:
    api = tenants.api
    finished = {"state": "finished"}
    for name, value in (("since", "9" * 20), ("until", "99999999999999999999")):
        response = await api.http.get("/executions", params={**finished, name: value})
        assert response.status_code == 400, response.text
        assert name in response.json()["message"]
    cursor = base64.urlsafe_b64encode(f"{2**63}:0-x".encode()).decode().rstrip("=")
    response = await api.http.get("/executions", params={**finished, "cursor": cursor})
    assert response.status_code == 400, response.text
    assert "cursor" in response.json()["message"]
    audit = await api.http.get("/audit", params={"since": "9" * 25})
    assert audit.status_code == 400 and "since" in audit.json()["message"]


async def test_metrics_listen_where_the_api_does_unless_told(redis_url: str, prefix: str) -> None:
    port = free_port()
    h = Harness(redis_url, prefix)
    try:
        await h.start_worker(metrics_port=port)
        mine = psutil.Process(os.getpid()).net_connections(kind="tcp")
        (listening,) = [c for c in mine
                        if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
        assert listening.laddr.ip == "127.0.0.1"  # CHATFLOW_API_HOST's default, not 0.0.0.0
    finally:
        await h.close()
