"""The commit script's guards: every expected version must hold, or nothing is written."""

from __future__ import annotations

from chatflow.handlers.dataplane.store import STALE, Commit, Store
from chatflow.handlers.keys import Keys
from chatflow.handlers.redis_client import make_client
from chatflow.runtime.state import LogEntry, Transition, decode_log
from tests.harness import Harness
from tests.support.http import LoopbackServer


async def test_a_fused_transition_is_dropped_whole_when_a_parent_moved_on(
        redis_url: str, prefix: str) -> None:
    keys = Keys(prefix, 1)
    client = make_client(redis_url)
    store = Store(client, keys, state_ttl_s=60, dedup_ttl_s=60, marker_ttl_s=60)
    try:
        await client.hset(keys.state(0, "0-parent"), mapping={"v": "4", "s": "{}"})
        fused = Transition(also_expect=[("0-parent", 3)],
                           log=[LogEntry("block", "0-child", 1, blockId="b")])
        (verdict,) = await store.commit([Commit(0, "0-parent", fused)])
        assert verdict == STALE
        assert not await client.exists(keys.log(0, "0-parent"))
        fused.also_expect[0] = ("0-parent", 4)
        (verdict,) = await store.commit([Commit(0, "0-parent", fused)])
        assert verdict == 1
        assert [e.execId for e in decode_log(await client.get(keys.log(0, "0-parent")))] == [
            "0-child"]
    finally:
        await client.aclose()


async def steps_added(harness: Harness) -> int:
    added = 0
    for n in range(harness.keys.partitions):
        info = await harness.client.xinfo_stream(harness.keys.steps(n))
        added += int(info["entries-added"])
    return added


async def test_a_tool_of_inert_blocks_answers_in_the_hop_that_took_its_command(
        harness: Harness) -> None:
    from tests.core.tools import call, ret, script, to, tool

    await harness.put_tool("pt-child", tool("s", script("s", "return n + '!'", "v", to("r"),
                                                              inputs={"n": "{{n}}"}),
                                            ret("r", "{{v}}")))
    await harness.put_tool("pt-parent", tool("c", call("c", "pt-child", "o", to("r"),
                                                       inputs={"n": "c"}),
                                             ret("r", "<{{o}}>")))
    # Warm up: the sandbox's first script starts its V8 process, which on a loaded machine
    # can outlast run-ahead's time budget, and the tree then rightly goes on in a step of
    # its own. The run measured is the next one.
    assert (await harness.run("pt-parent")).result == "<c!>"
    before = await steps_added(harness)
    result = await harness.run("pt-parent")
    assert result.result == "<c!>"
    # The callTool, the child's script and return, the parent's resume and its return are
    # all decided in the intake's commit: no step entry at all.
    assert await steps_added(harness) == before


async def test_an_http_block_still_takes_its_own_hop_and_inert_blocks_after_it_ride_along(
        harness: Harness, http_server: LoopbackServer) -> None:
    from tests.core.tools import http, ret, script, to, tool

    http_server.route("GET", "/n", {"n": 4})
    await harness.put_tool("pt-mixed", tool(
        "a", script("a", "return 1", "a", to("h")),
        http("h", http_server.base + "/n", to("b"), responseBodyVariable="resp"),
        script("b", "return Number(n) * 10", "b", to("r"), inputs={"n": "{{resp.n}}"}),
        ret("r", "{{a}}-{{b}}")))
    result = await harness.run("pt-mixed")
    assert result.result == "1-40"
    # The script before the httpCall runs at intake; the httpCall is the one step entry
    # (side effects never run at intake); the script and return after it ride its commit.
    assert await steps_added(harness) == 1
    assert len(http_server.requests) == 1


async def test_run_ahead_stops_at_its_budget_and_the_rest_goes_on_as_step_entries(
        redis_url: str, prefix: str) -> None:
    from tests.core.tools import ret, script, to, tool

    slow = "const t = Date.now(); while (Date.now() - t < 60) {} return 1"
    h = Harness(redis_url, prefix, claim_idle_ms=400)  # run-ahead budget: 100 ms
    try:
        await h.start_worker()
        await h.put_tool("pt-slow", tool(
            "a", script("a", slow, "a", to("b")), script("b", slow, "b", to("c")),
            script("c", slow, "c", to("d")), script("d", slow, "d", to("r")),
            ret("r", "{{a}}{{b}}{{c}}{{d}}")))
        result = await h.run("pt-slow")
        assert result.result == "1111"
        # Four 60 ms scripts do not fit one 100 ms budget: at least one hop more.
        assert await steps_added(h) >= 1
    finally:
        await h.close()


async def test_the_started_entry_keeps_the_variables_an_execution_started_with(
        harness: Harness) -> None:
    from tests.core.tools import ret, script, to, tool

    # The script runs at intake, ahead of the commit that records "started": once the
    # machine updated the very dict that entry held, so it showed the script's write.
    await harness.put_tool("pt-start", tool("s", script("s", "return 'written'", "v", to("r")),
                                            ret("r", "{{v}}")))
    result = await harness.run("pt-start", variables={"v": "given"})
    assert result.result == "written"
    started = (await harness.trace(result.executionId))[0]
    assert started.type == "started" and started.detail is not None
    assert started.detail["variables"]["v"] == "given"
