"""A rolling upgrade: this version's worker finishes executions a worker of the previous
version started.

``tests/fixtures/rolling_upgrade/in_flight.json`` is what the previous version left in Valkey
(recorded by ``record.py`` beside it, before the commit format changed): two tools waiting
on an httpCall step, two parents waiting on a child whose httpCall is a step. It is loaded
into a fresh prefix as it was, the loopback URL pointed at this test's server.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ResponseError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chatflow.handlers.cli.replay_cmd import replay_execution
from chatflow.handlers.keys import STEPS_GROUP
from tests.harness import Harness
from tests.support.http import serve_asgi_in_thread

FIXTURE = Path(__file__).parent.parent / "fixtures" / "rolling_upgrade" / "in_flight.json"


async def _echo(request: Request) -> Response:
    return JSONResponse({"n": request.query_params.get("n", "0")})


@pytest.fixture
def echo() -> Iterator[str]:
    with serve_asgi_in_thread(Starlette(routes=[Route("/echo", _echo)])) as base:
        yield base


async def load(h: Harness, base: str) -> dict[str, Any]:
    """Write the recorded keys under ``h``'s prefix, as they were; returns the fixture."""
    fixture: dict[str, Any] = json.loads(FIXTURE.read_text())
    old_prefix, old_base = fixture["prefix"], fixture["base"]

    def text(value: str) -> str:
        return value.replace(old_base, base)

    for name, item in fixture["keys"].items():
        key = h.keys.prefix + name.removeprefix(old_prefix)
        kind, value = item["type"], item["value"]
        if kind == "string":
            await h.client.set(key, text(value))
        elif kind == "hash":
            await h.client.hset(key, mapping={k: text(v) for k, v in value.items()})
        elif kind == "zset":
            await h.client.zadd(key, {member: score for member, score in value})
        elif kind == "stream":
            for entry_id, fields in value["entries"]:
                await h.client.xadd(key, {k: text(v) for k, v in fields.items()}, id=entry_id)
            for group in value["groups"]:
                with contextlib.suppress(ResponseError):  # BUSYGROUP: the worker made it
                    await h.client.xgroup_create(key, group, id="0", mkstream=True)
    return fixture


async def test_a_worker_of_this_version_finishes_what_the_previous_version_left_in_flight(
        redis_url: str, prefix: str, echo: str) -> None:
    h = Harness(redis_url, prefix)
    try:
        await h.start_worker()
        # The sandbox's engine starts before the recorded steps are read: two scripts on a
        # cold engine at once crashed one of them (runtime/sandbox, seen while writing this).
        await h.put_tool("warm", {"onboardingBlockId": "s", "blocks": {"s": {
            "type": "executeScript", "id": "s", "source": "return 'w'", "outputVariable": "o",
            "onError": "blocking", "outputConditions": [],
            "defaultOutput": {"type": "block", "blockId": "r"}},
            "r": {"type": "return", "id": "r", "value": "{{o}}"}}})
        assert (await h.run("warm")).result == "w"
        after = await h.mark()
        fixture = await load(h, echo)  # the worker's groups exist: its entries are new to it
        expected: dict[str, str] = fixture["expected"]
        found = await h.results_after(after, set(expected), timeout_s=60)
        assert {cid: [r.result for r in rs] for cid, rs in found.items()} == {
            cid: [value] for cid, value in expected.items()}
        assert all(r.ok for rs in found.values() for r in rs)
        for n in range(h.keys.partitions):
            await h.drained(h.keys.steps(n), STEPS_GROUP)
        # The trace joins the previous version's per-execution entries to this version's
        # lines, and replays to the same decisions.
        nested = next(rs[0] for cid, rs in found.items() if cid.startswith("rup-"))
        report = await replay_execution(h.client, h.keys, nested.executionId or "")
        assert report.ok, report.first
        assert report.executions == 2
        assert [e.type for e in report.trace if e.execId == nested.executionId] == [
            "started", "spawned", "block", "block", "finished"]
        assert len(await h.results_after(after, set(expected), timeout_s=5)) == len(expected)
    finally:
        await h.close()
