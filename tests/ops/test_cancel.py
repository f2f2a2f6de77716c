"""`chatflow executions` sees a nested execution in flight; `chatflow cancel` and
`POST /api/executions/{id}/cancel` stop its tree, counted on every process's /metrics."""

from __future__ import annotations

import asyncio
import os
import sys

import httpx

from chatflow.handlers.cli.cancel_cmd import cancel_execution
from chatflow.handlers.cli.executions_cmd import in_flight, render
from chatflow.handlers.dataplane.trees import trees_ended
from chatflow.handlers.interfaces.client import last_id, wait_results
from chatflow.handlers.keys import STEPS_GROUP
from chatflow.handlers.operations.embedded import free_port
from tests.api.support import api_settings, running_api
from tests.harness import Harness
from tests.ops.conftest import GatedServer
from tests.ops.test_metrics import families, value
from tests.ops.tools import calling, http_then_return, returning


async def start_nested(h: Harness, gated: GatedServer) -> tuple[str, bytes, str]:
    await h.put_tool("pt-slow", http_then_return(gated.url))
    await h.put_tool("pt-outer", calling("pt-slow", on_error="continue"))
    after = await last_id(h.client, h.keys.results)
    command = h.command("pt-outer")
    await h.send(command)
    await asyncio.wait_for(gated.arrived.wait(), timeout=30)
    return command.commandId, after, "pt-outer"


async def test_executions_lists_a_nested_execution_at_its_current_block(
        harness: Harness, gated: GatedServer) -> None:
    command_id, _after, _pt = await start_nested(harness, gated)
    rows = await in_flight(harness.client, harness.keys)
    assert len(rows) == 1
    row = rows[0]
    assert (row.commandId, row.tool, row.toolId) == (command_id, "pt-outer", "t-pt-outer")
    assert (row.activeTool, row.block, row.depth) == ("pt-slow", "call", 1)
    assert row.activeExecutionId.startswith(row.executionId + ".")
    assert row.ageMs >= 0 and 0 < row.deadlineInMs <= 30_000
    header, line = render(rows).splitlines()
    assert header.split()[:4] == ["EXECUTION", "TOOL", "RUNNING", "NOW"]
    assert line.split()[:5] == [row.executionId, "pt-outer", "pt-slow", "›", "call"]
    gated.release.set()


async def test_cancel_stops_the_whole_tree_and_the_caller_gets_one_cancellation(
        harness: Harness, gated: GatedServer) -> None:
    command_id, after, _pt = await start_nested(harness, gated)
    (row,) = await in_flight(harness.client, harness.keys)
    outcome = await cancel_execution(harness.client, harness.keys, row.executionId,
                                     settings=harness.settings)
    assert outcome.cancelled and outcome.leafId == row.activeExecutionId
    found = await wait_results(harness.client, harness.keys.results, {command_id}, after=after)
    (result,) = found[command_id]
    assert not result.ok and result.error is not None
    # fatal: the parent's onError "continue" does not swallow a cancellation
    assert result.error.code == "execution_cancelled"
    assert "cancelada" in result.error.message
    assert await in_flight(harness.client, harness.keys) == []
    # The child's HTTP call now completes; its transition must commit nothing.
    gated.release.set()
    await asyncio.wait_for(gated.answered.wait(), timeout=30)
    # The step that made the call is acked once its (dropped) transition is done.
    partition = harness.keys.partition_of_exec(row.activeExecutionId)
    await harness.drained(harness.keys.steps(partition), STEPS_GROUP)
    again = await cancel_execution(harness.client, harness.keys, row.executionId)
    assert not again.cancelled and again.why == "already answered"
    everything = await harness.client.xrange(harness.keys.results)
    assert sum(1 for _id, f in everything if command_id.encode() in f[b"data"]) == 1
    events = await harness.stream(harness.keys.executions)
    cancelled = {e["executionId"] for e in events if e["errorCode"] == "execution_cancelled"}
    assert cancelled == {row.executionId, row.activeExecutionId}


async def test_cancelling_an_unknown_execution_says_so(harness: Harness) -> None:
    outcome = await cancel_execution(harness.client, harness.keys, "0-nope")
    assert not outcome.cancelled and "no such execution" in outcome.why
    assert not (await cancel_execution(harness.client, harness.keys, "garbage")).cancelled


async def scrape(port: int) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        response = await http.get("/metrics")
    assert response.status_code == 200
    return families(response.text)


async def test_a_cancel_from_another_process_is_counted_on_the_workers_metrics(
        bare: Harness, gated: GatedServer) -> None:
    port = free_port()
    await bare.start_worker(metrics_port=port, metrics_host="127.0.0.1")
    command_id, after, _pt = await start_nested(bare, gated)
    (row,) = await in_flight(bare.client, bare.keys)
    before = value(await scrape(port), "chatflow_trees_ended_total", reason="cancelled")
    env = {**os.environ, "REDIS_URL": bare.url, "CHATFLOW_PREFIX": bare.settings.prefix}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "from chatflow.handlers.cli import main; main()", "cancel",
        row.executionId, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, (out, err)
    await bare.results_after(after, {command_id})
    fams = await scrape(port)
    assert value(fams, "chatflow_trees_ended_total", reason="cancelled") == before + 1
    assert await trees_ended(bare.client, bare.keys) == {
        "deadline_timeout": 0, "dead_lettered": 0, "cancelled": 1}
    gated.release.set()


async def test_the_api_cancels_an_execution_and_answers_clear_errors_otherwise(
        harness: Harness, gated: GatedServer) -> None:
    command_id, after, _pt = await start_nested(harness, gated)
    (row,) = await in_flight(harness.client, harness.keys)
    settings = api_settings(harness.url, harness.settings.prefix)
    async with running_api(settings) as api:
        path = f"/executions/{row.executionId}/cancel"
        async with api.anonymous() as anonymous:
            assert (await anonymous.post(path)).status_code == 401
        async with api.as_key(await api.new_key(role="viewer")) as viewer:
            assert (await viewer.post(path)).status_code == 403
        async with api.as_key(await api.new_key(workspace="other", role="editor")) as other:
            response = await other.post(path)  # another workspace's tree: as if missing
            assert response.status_code == 404 and response.json()["error"] == "not_found"
        assert [r.executionId for r in await in_flight(harness.client, harness.keys)] == [
            row.executionId]
        body = await api.ok("POST", f"/executions/{row.activeExecutionId}/cancel",
                            json={"reason": "operator said so"})
        assert body == {"executionId": row.activeExecutionId, "rootExecutionId": row.executionId,
                        "activeExecutionId": row.activeExecutionId, "cancelled": True}
        (result,) = (await harness.results_after(after, {command_id}))[command_id]
        assert result.error is not None and result.error.code == "execution_cancelled"
        assert "operator said so" in result.error.message
        again = await api.fails("POST", f"/executions/{row.executionId}/cancel", 409)
        assert "already" in again["message"]
        missing = await api.fails("POST", "/executions/0-nope/cancel", 404)
        assert missing["error"] == "not_found"
        bad = await api.fails("POST", "/executions/garbage/cancel", 400)
        assert "executionId" in bad["message"]
        scrape = await api.root.get("/metrics/")  # the API's own exposition agrees too
        assert scrape.status_code == 200
        assert value(families(scrape.text), "chatflow_trees_ended_total", reason="cancelled") == 1
    assert (await trees_ended(harness.client, harness.keys))["cancelled"] == 1
    gated.release.set()


async def test_a_tree_belongs_to_the_workspace_of_its_published_tool_not_its_toolid_label(
        harness: Harness, gated: GatedServer) -> None:
    # A command's toolId is a free label: naming a tool of workspace a in it must not hand a's
    # editors workspace b's execution, nor hide it from b.
    settings = api_settings(harness.url, harness.settings.prefix)
    async with running_api(settings) as api, \
            api.as_key(await api.new_key(workspace="a", role="editor")) as a, \
            api.as_key(await api.new_key(workspace="b", role="editor")) as b:
        for client, tool, definition in [(a, "t-a", returning("a")),
                                          (b, "t-b", http_then_return(gated.url))]:
            created = await client.post("/tools", json={"id": tool, "definition": definition})
            assert created.status_code == 201, created.text
            published = await client.post(f"/tools/{tool}/publish")
            assert published.status_code == 200, published.text
        pt_b = (await b.get("/tools/t-b")).json()["publishedToolId"]
        command = harness.command(pt_b, toolId="t-a")
        await harness.send(command)
        await asyncio.wait_for(gated.arrived.wait(), timeout=30)
        (row,) = await in_flight(harness.client, harness.keys)
        path = f"/executions/{row.executionId}/cancel"
        assert (await a.get("/executions")).json() == []
        assert (await a.get(f"/executions/{row.executionId}/events")).status_code == 404
        assert (await a.post(path)).status_code == 404
        assert [r["executionId"] for r in (await b.get("/executions")).json()] == [row.executionId]
        cancelled = await b.post(path)
        assert cancelled.status_code == 200, cancelled.text
    gated.release.set()


async def test_events_of_a_cancelled_tree_carry_each_executions_depth(
        harness: Harness, gated: GatedServer) -> None:
    await harness.put_tool("pt-mid", calling("pt-slow"))
    await harness.put_tool("pt-slow", http_then_return(gated.url))
    await harness.put_tool("pt-top", calling("pt-mid"))
    after = await harness.mark()
    command = harness.command("pt-top")
    await harness.send(command)
    await asyncio.wait_for(gated.arrived.wait(), timeout=30)
    (row,) = await in_flight(harness.client, harness.keys)
    assert row.depth == 2
    assert (await cancel_execution(harness.client, harness.keys, row.executionId)).cancelled
    await harness.results_after(after, {command.commandId})
    events = await harness.stream(harness.keys.executions)
    depths = {e["publishedToolId"]: e["depth"] for e in events
              if e["errorCode"] == "execution_cancelled"}
    assert depths == {"pt-top": 0, "pt-mid": 1, "pt-slow": 2}
    gated.release.set()


async def test_a_timed_out_tree_emits_one_failed_event_per_execution_with_its_depth(
        harness: Harness, gated: GatedServer) -> None:
    command_id, after, _pt = await start_nested(harness, gated)
    (row,) = await in_flight(harness.client, harness.keys)
    # The deadline falls due now, while the child's HTTP call is still in flight: the reaper
    # ends the tree (a real timeout would race with the block's own timeout).
    partition = harness.keys.partition_of_exec(row.executionId)
    await harness.client.zadd(harness.keys.deadlines(partition), {row.executionId: 1})
    (result,) = (await harness.results_after(after, {command_id}))[command_id]
    assert result.error is not None and result.error.code == "tool_timeout"
    events = await harness.stream(harness.keys.executions)
    depths = {e["publishedToolId"]: e["depth"] for e in events if e["errorCode"] == "tool_timeout"}
    assert depths == {"pt-outer": 0, "pt-slow": 1}
    # the reaper counts right after the commit that answered: one round trip behind the result
    deadline = asyncio.get_running_loop().time() + 10
    while (await trees_ended(harness.client, harness.keys))["deadline_timeout"] != 1:
        assert asyncio.get_running_loop().time() < deadline, "the timeout was not counted"
        await asyncio.sleep(0.02)  # polling a counter on the server, bounded above
    gated.release.set()
