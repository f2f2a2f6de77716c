"""Issue 29's attacks, performed against a real API, a real worker and recording upstreams:
a workspace is fixed when an execution starts, and every lookup a block makes resolves in
it, whatever way the execution was started (fork, fork of a child, test-flow, test-block,
publish, a producer's command). Each test fails on the code before the fix."""

from __future__ import annotations

import contextlib
import json
import uuid
from typing import Any

import pytest

from chatflow.handlers.operations import metrics
from tests.registry.defs import call_ai, call_endpoint, call_tool, definition, ret
from tests.security.tenants import Tenants, ok, tenants

__all__ = ["tenants"]

FOREIGN = {"callEndpoint": ("srv-b", "srv-zz"), "callAI": ("cred-b", "cred-zz"),
           "callTool": ("t-b", "t-zz")}


def naming(kind: str, ref: str, pt_b: str) -> dict[str, Any]:
    """A block of ``kind`` naming ``ref`` (b's object, or one that exists nowhere)."""
    if kind == "callEndpoint":
        return call_endpoint("x", ref, "ep-b", [])
    if kind == "callAI":
        return call_ai("x", ref)
    pt = pt_b if ref == "t-b" else "pt-zz"
    return call_tool("x", ref, pt)


async def child_of_a_run(t: Tenants) -> str:
    """A run of ``a``'s tool that calls ``a``'s own child tool; the child's execution id."""
    await ok(t.a, "POST", "/tools", 201, json={"id": "t-child", "definition": definition(
        ret("child"))})
    child_pt = (await ok(t.a, "POST", "/tools/t-child/publish"))["publishedToolId"]
    await ok(t.a, "POST", "/tools", 201, json={"id": "t-parent", "definition": definition(
        call_tool("c", "t-child", child_pt), ret("{{child}}"))})
    parent_pt = (await ok(t.a, "POST", "/tools/t-parent/publish"))["publishedToolId"]
    parent = await t.run_a(parent_pt)
    run = await ok(t.a, "GET", f"/executions/{parent}/history")
    (child,) = run["children"]
    return str(child)


async def attempt(t: Tenants, way: str, block: dict[str, Any], target: str) -> Any:
    """``a``'s editor tries to run ``block`` through ``way``; the response."""
    body = definition(block, ret("{{resp}}{{text}}{{child}}"))
    if way in ("fork", "fork-child"):
        return await t.a.post(f"/executions/{target}/fork",
                              json={"fromBlockId": "x", "definition": body})
    if way == "test-flow":
        return await t.a.post("/tools/test-flow", json={"definition": body})
    if way == "test-block":
        return await t.a.post("/tools/test-block", json={"block": block})
    tool = f"t-try-{uuid.uuid4().hex[:10]}"
    await ok(t.a, "POST", "/tools", 201, json={"id": tool, "definition": body})
    return await t.a.post(f"/tools/{tool}/publish")


@pytest.mark.parametrize("kind", sorted(FOREIGN))
async def test_no_way_in_reaches_another_workspaces_server_llm_or_tool(
        tenants: Tenants, kind: str) -> None:
    t = tenants
    run = await t.run_a()
    child = await child_of_a_run(t)
    for way, target in [("fork", run), ("fork-child", child), ("test-flow", ""),
                        ("test-block", ""), ("publish", run)]:
        foreign, missing = FOREIGN[kind]
        theirs = await attempt(t, way, naming(kind, foreign, t.pt_b), target)
        nobodys = await attempt(t, way, naming(kind, missing, t.pt_b), target)
        assert theirs.status_code == 400, (way, theirs.text)
        # Another workspace's object reads exactly as one that does not exist.
        shown = theirs.json()
        shown = json.loads(json.dumps(shown["problems"]).replace(t.pt_b, "pt-zz")
                           .replace(foreign, missing)), shown["error"]
        assert (theirs.status_code, shown) == (
            nobodys.status_code, (nobodys.json()["problems"], nobodys.json()["error"])), way
    t.b_untouched()


async def test_the_runtime_resolves_inside_the_trees_workspace_whatever_started_it(
        tenants: Tenants) -> None:
    """No API at all: a record of workspace ``a`` (set straight in Valkey, as tests and old
    publishers may) naming ``b``'s server, credential and tool runs as if they did not exist."""
    t = tenants
    for kind, (foreign, missing) in FOREIGN.items():
        answers = []
        for ref in (foreign, missing):
            pt = f"pt-rogue-{kind}-{ref}"
            record = {"id": pt, "toolId": "t-rogue", "workspace": "a",
                      "definition": definition(naming(kind, ref, t.pt_b), ret("no"))}
            await t.h.client.set(t.h.keys.tool(pt), json.dumps(record))
            result = await t.h.run(pt)
            assert not result.ok and result.error is not None, result
            answers.append((result.error.code,
                            result.error.message.replace(t.pt_b, "REF").replace("pt-zz", "REF")
                            .replace(ref, "REF")))
        assert answers[0] == answers[1], (kind, answers)
    t.b_untouched()


async def test_a_fork_runs_in_its_callers_workspace_and_its_record_is_no_callable_tool(
        tenants: Tenants) -> None:
    t = tenants
    # b forks one of its own runs: a record fork:<pt_b>:<id> exists for one command.
    b_run = (await t.h.run(t.pt_b)).executionId
    await t.caught_up()
    forked = await ok(t.b, "POST", f"/executions/{b_run}/fork", 202, json={"fromBlockId": "r"})
    record = forked["publishedToolId"]
    assert record.startswith("fork:")
    # a's test-block naming it: refused before anything runs, exactly as a missing tool ...
    theirs = await t.a.post("/tools/test-block", json={"block": call_tool("x", "t-b", record)})
    nobodys = await t.a.post("/tools/test-block", json={"block": call_tool(
        "x", "t-b", "fork:pt-zz:000000000000")})
    assert theirs.status_code == nobodys.status_code == 400
    assert theirs.json()["problems"][0]["message"].replace(record, "R") == \
        nobodys.json()["problems"][0]["message"].replace("fork:pt-zz:000000000000", "R")
    # ... and b itself cannot name its own fork record either (internal ids are not tools).
    own = await t.b.post("/tools/test-block", json={"block": call_tool("x", "t-b", record)})
    assert own.status_code == 400
    # A producer's command naming the record is not the fork's command: tool not found.
    result = await t.h.run(record)
    assert result.error is not None and result.error.code == "tool_not_found", result


async def test_forks_and_their_runs_stay_in_their_workspace_and_count_under_their_tool(
        tenants: Tenants) -> None:
    t = tenants
    run = await t.run_a()
    # The label pt_a counts under (its own, or "other" once this test process has seen the
    # 50 tools the per-tool labels admit): the fork must add to it.
    label = metrics.tool_label(t.pt_a)
    before = metrics.EXECUTIONS.labels(label, "success")._value.get()
    fork = await ok(t.a, "POST", f"/executions/{run}/fork", params={"wait": "true"},
                    json={"fromBlockId": "e"})
    assert fork["result"]["ok"], fork
    fork_id = fork["executionId"]
    await t.caught_up()
    # default's keys see nothing of it; a's do.
    for client in (t.d_viewer, t.d_editor, t.b):
        assert (await client.get(f"/executions/{fork_id}/history")).status_code == 404
        assert (await client.get(f"/executions/{fork_id}/events")).status_code == 404
        listed = await ok(client, "GET", "/executions", params={"state": "finished"})
        assert fork_id not in {r["executionId"] for r in listed["executions"]}
    mine = await ok(t.a_viewer, "GET", f"/executions/{fork_id}/history")
    assert mine["forkedFrom"] == {"executionId": run, "blockId": "e"}
    assert mine["workspace"] == "a"
    # default's editor cannot fork a's fork (it is no run of default's).
    assert (await t.d_editor.post(f"/executions/{fork_id}/fork",
                                  json={"fromBlockId": "e"})).status_code == 404
    # /metrics names no fork: the fork counted under the tool it forked.
    exposed = (await t.api.root.get("/metrics/")).text
    assert "fork:" not in exposed
    assert metrics.EXECUTIONS.labels(label, "success")._value.get() == before + 1


async def test_a_fork_in_flight_is_listed_and_cancelled_only_by_its_workspace(
        tenants: Tenants) -> None:
    t = tenants
    gate = t.up_a.hold()  # a's upstream answers only once released
    gate.set()
    run = await t.run_a()
    gate.clear()
    started = await ok(t.a, "POST", f"/executions/{run}/fork", 202, json={"fromBlockId": "e"})
    try:
        await t.up_a.until(lambda: t.up_a.waiting > 0)
        mine = await ok(t.a_viewer, "GET", "/executions")
        (fork,) = [r for r in mine if r["commandId"] == started["commandId"]]
        for client in (t.d_viewer, t.d_editor, t.b):
            assert started["commandId"] not in {r["commandId"] for r in
                                                await ok(client, "GET", "/executions")}
        assert (await t.d_editor.post(f"/executions/{fork['executionId']}/cancel")
                ).status_code == 404
        await ok(t.a, "POST", f"/executions/{fork['executionId']}/cancel")
    finally:
        gate.set()


async def test_purging_a_tool_moves_none_of_its_runs_and_a_new_tool_of_that_id_inherits_none(
        tenants: Tenants) -> None:
    t = tenants
    b_run = (await t.h.run(t.pt_b)).executionId
    tested = await ok(t.b, "POST", "/tools/test-flow", json={"toolId": "t-b"})
    assert tested["inHistory"], tested
    await t.caught_up()
    await ok(t.b, "DELETE", "/tools/t-b")
    await ok(t.b, "DELETE", "/tools/t-b/permanent")
    for run_id in (b_run, tested["executionId"]):
        assert (await t.b.get(f"/executions/{run_id}/history")).status_code == 200
        for client in (t.d_viewer, t.d_editor, t.a):
            assert (await client.get(f"/executions/{run_id}/history")).status_code == 404
        assert (await t.d_editor.post(f"/executions/{run_id}/fork",
                                      json={"fromBlockId": "r"})).status_code == 404
    # a takes the freed tool id: none of b's runs or test runs come with it.
    await ok(t.a, "POST", "/tools", 201, json={"id": "t-b", "definition": definition(ret())})
    listed = await ok(t.a, "GET", "/executions", params={"state": "finished", "toolId": "t-b"})
    assert listed["executions"] == []
    t.b_untouched()


async def test_a_waiting_fork_over_its_keys_cap_is_refused_before_it_runs(
        tenants: Tenants) -> None:
    """``?wait=true`` holds a connection, so it counts against the caps; a fork refused for
    it must not have run (the client is told to try again, and a retry would repeat its
    calls). Before, the fork was published first and the 429 came after."""
    from tests.security.test_held_connections import next_event, stream

    t = tenants
    run = await t.run_a()
    seen = len(t.up_a.requests)
    per_key = t.api.settings.api_held_per_key

    async def forks() -> int:
        return len([k async for k in t.api.client.scan_iter(match=f"{t.api.keys.prefix}*fork:*")
                    if b"tool:" in k])

    before = await forks()
    async with contextlib.AsyncExitStack() as held:
        kept = []
        for _ in range(per_key):
            response, lines = await held.enter_async_context(stream(t.a))
            assert response.status_code == 200
            await next_event(lines, "event: ready")
            kept.append(lines)
        refused = await t.a.post(f"/executions/{run}/fork", params={"wait": "true"},
                                 json={"fromBlockId": "e"})
        assert refused.status_code == 429, refused.text
        assert refused.json()["setting"] == "CHATFLOW_API_HELD_PER_KEY"
        assert await forks() == before  # no fork record was made, no command sent
    # With the streams closed, the same fork runs: the upstream gets its one call, and only
    # that one (a refused fork that had been sent would have made a second).
    fork = await ok(t.a, "POST", f"/executions/{run}/fork", params={"wait": "true"},
                    json={"fromBlockId": "e"})
    assert fork["result"]["ok"], fork
    await t.caught_up()
    assert len(t.up_a.requests) == seen + 1
