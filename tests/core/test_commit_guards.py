"""The commit script's guards: every expected version must hold, or nothing is written."""

from __future__ import annotations

from handlers.keys import Keys
from handlers.redis_client import make_client
from handlers.store import STALE, Commit, Store
from runtime.state import LogEntry, Transition
from tests.harness import Harness


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
        assert await client.xlen(keys.events(0, "0-child")) == 0
        fused.also_expect[0] = ("0-parent", 4)
        (verdict,) = await store.commit([Commit(0, "0-parent", fused)])
        assert verdict == 1
        assert await client.xlen(keys.events(0, "0-child")) == 1
    finally:
        await client.aclose()


async def test_a_nested_tool_resumes_its_parent_without_another_step(harness: Harness) -> None:
    from tests.core.tools import call, ret, to, tool

    await harness.put_tool("pt-child", tool("r", ret("r", "c")))
    await harness.put_tool("pt-parent", tool("c", call("c", "pt-child", "o", to("r")),
                                             ret("r", "<{{o}}>")))
    result = await harness.run("pt-parent")
    assert result.result == "<c>"
    added = 0
    for n in range(harness.keys.partitions):
        info = await harness.client.xinfo_stream(harness.keys.steps(n))
        added += int(info["entries-added"])
    # One step entry: the callTool block. The child's return, the parent's resume and its
    # return are all decided in that step's commit.
    assert added == 1
