"""What one execution can store is bounded: a script's result, the variables, the event log.

The red team's attack: a script returning 20 MB, in a loop of 5 hops, grew Valkey by
120-180 MiB from one command (the event log and the state, each hop). Over a cap is a block
error with its own code under the block's onError; the event log keeps a large value as a
note of its size.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chatflow.runtime.limits import bounded_entry, loggable
from chatflow.runtime.state import LogEntry
from tests.core.tools import call, ret, script, to, tool
from tests.harness import Harness
from tests.support.processes import worker_process

MIB = 1024 * 1024


def _loop(big: str, *, hops: int = 5) -> dict[str, Any]:
    """count -> big -> count ... until n reaches ``hops``: ``big`` runs ``hops`` times and its
    failure (onError continue) goes into ``err``."""
    count = script("count", "return (Number(n) || 0) + 1", "n", to("big"), inputs={"n": "{{n}}"})
    done = {"id": "done", "rules": [{"variable": "n", "operator": "greaterThanOrEqual",
                                     "value": str(hops)}], "target": to("r")}
    big_block = script("big", big, "big", to("count"), on_error="continue",
                       error_variable="err", conditions=[done])
    return tool("count", count, big_block, ret("r", "{{n}}:{{err}}"))


@pytest.fixture
async def small_caps(redis_url: str) -> AsyncIterator[Harness]:
    h = Harness(redis_url, f"t{uuid.uuid4().hex[:10]}:", variables_max_bytes=64 * 1024,
                script_result_max_bytes=48 * 1024, log_value_max_bytes=1024)
    try:
        await h.start_worker()
        yield h
    finally:
        await h.close()


def test_a_large_log_value_becomes_a_note_of_its_size() -> None:
    assert loggable("small", 100) == "small"
    note = loggable("x" * 5_000, 100)
    assert note["truncated"] is True and note["bytes"] == 5_002 and len(note["head"]) <= 100
    entry = LogEntry("block", "e-1", 1, writes={"big": "y" * 5_000, "n": 1}, result="z" * 5_000,
                     detail={"inputs": {"a": "w" * 5_000}, "defHash": "h"})
    kept = bounded_entry(entry, 100)
    assert kept.writes is not None and kept.writes["n"] == 1
    assert kept.writes["big"]["bytes"] == 5_002
    assert kept.detail is not None and kept.detail["inputs"]["a"]["truncated"] is True
    assert kept.detail["defHash"] == "h"
    assert kept.result is not None and kept.result.startswith("[truncated: 5002 bytes]")
    assert bounded_entry(LogEntry("started", "e-1", 1), 100) == LogEntry("started", "e-1", 1)


async def test_a_script_result_over_the_cap_is_a_block_error_under_on_error(
        small_caps: Harness) -> None:
    over = "return 'x'.repeat(60000)"
    await small_caps.put_tool("pt-block", tool("s", script("s", over, "v", to("r")),
                                               ret("r", "never")))
    failed = await small_caps.run("pt-block")
    assert failed.error is not None and failed.error.code == "script_result_too_large"
    assert "60002 bytes" in failed.error.message and "script_result_max_bytes" in failed.error.message
    await small_caps.put_tool("pt-loop", _loop(over, hops=2))
    result = await small_caps.run("pt-loop")
    assert result.error is None and result.result.startswith("2:script result of 60002 bytes")


async def test_variables_over_the_cap_are_a_block_error_and_the_log_keeps_sizes_only(
        small_caps: Harness) -> None:
    # Each result is under the script cap (48 KiB); the second takes the variables over 64 KiB.
    first = script("a", "return 'a'.repeat(40000)", "a", to("b"))
    second = script("b", "return 'b'.repeat(40000)", "b", to("r"), on_error="continue",
                    error_variable="err")
    await small_caps.put_tool("pt-vars", tool("a", first, second, ret("r", "{{err}}|{{b}}")))
    result = await small_caps.run("pt-vars")
    assert result.error is None
    assert result.result.startswith("the execution's variables would take") and result.result.endswith("|")
    trace = await small_caps.trace(result.executionId or "")
    (a,) = [e for e in trace if e.type == "block" and e.blockId == "a"]
    assert a.writes == {"a": {"truncated": True, "bytes": 40_002, "head": "\"" + "a" * 1023}}
    (b,) = [e for e in trace if e.type == "block" and e.blockId == "b"]
    assert b.error is not None and b.error.code == "variables_too_large"
    assert b.writes == {"b": ""}


async def test_a_child_result_that_takes_the_variables_over_the_cap_is_the_calltool_blocks_error(
        small_caps: Harness) -> None:
    # The child's result reaches the parent through the resume, not the block runner: the
    # variables cap holds there too. 40 KB is under the script cap, the parent's 40 KB + 40 KB
    # over the 64 KiB variables cap.
    await small_caps.put_tool("pt-child", tool("s", script("s", "return 'c'.repeat(40000)", "v",
                                                           to("r")), ret("r", "{{v}}")))
    first = script("a", "return 'a'.repeat(40000)", "a", to("c"))
    parent = tool("a", first, call("c", "pt-child", "got", to("r"), on_error="continue",
                                   error_variable="err"), ret("r", "{{err}}|{{got}}"))
    await small_caps.put_tool("pt-parent", parent)
    result = await small_caps.run("pt-parent")
    assert result.error is None
    assert result.result.startswith("the execution's variables would take") and result.result.endswith("|")


async def _used_memory(h: Harness) -> int:
    return int((await h.client.info("memory"))["used_memory"])


async def test_a_20_mb_script_result_in_a_loop_grows_valkey_only_within_the_caps(
        redis_url: str) -> None:
    """The red team's attack with real worker processes (in their own interpreters, each
    with its V8 sandbox process) and a real Valkey."""
    h = Harness(redis_url, f"t{uuid.uuid4().hex[:10]}:")
    try:
        await h.put_tool("pt-20mb", _loop("return 'x'.repeat(20 * 1000 * 1000)"))
        before = await _used_memory(h)
        with worker_process(h.url, h.settings.prefix, script_max_memory_mb="256",
                            script_timeout_ms="20000"), \
             worker_process(h.url, h.settings.prefix, script_max_memory_mb="256",
                            script_timeout_ms="20000"):
            result = await h.run("pt-20mb", timeout_s=240)
            grown = await _used_memory(h) - before
        assert result.error is None, result.error
        assert result.result.startswith("5:script result of 20000002 bytes")
        # Five 20 MB results stored as before would be 100 MB in the event log alone, and
        # 20 MB in the state. What the caps allow: the state under variables_max_bytes
        # (4 MiB; here it stays tiny, the result is refused before it reaches it) and ten
        # log entries whose values are at most log_value_max_bytes (16 KiB) each.
        print(f"valkey used_memory grew by {grown} bytes")
        assert grown < 4 * MIB, grown
    finally:
        await h.close()
