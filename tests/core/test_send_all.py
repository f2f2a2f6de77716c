"""``send_all`` (handlers/redis_client.py): the store's batches in one write, without a
pipeline object, keeping what a pipeline promised: every reply read before an error is
raised, a lost connection never reused, NOSCRIPT reloaded once; and the commit's one call per
intake batch on one node."""

from __future__ import annotations

import contextlib

import pytest
from redis.exceptions import ConnectionError, ResponseError

from chatflow.handlers.keys import Keys
from chatflow.handlers.redis_client import make_client, send_all
from chatflow.handlers.store import Commit, Store, Targets, Verdict
from chatflow.runtime.state import Emit, LogEntry, Transition


async def test_a_failing_command_raises_after_every_reply_is_read_and_the_connection_stays_in_step(
        redis_url: str, prefix: str) -> None:
    client = make_client(redis_url, max_connections=1)  # one connection: the next call reuses it
    try:
        await client.set(f"{prefix}s", "a string")
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            await send_all(client, [("SET", f"{prefix}a", "1"), ("XLEN", f"{prefix}s"),
                                    ("SET", f"{prefix}b", "2")])
        # The commands around the failing one ran, and no reply was left unread.
        assert await send_all(client, [("GET", f"{prefix}a"), ("GET", f"{prefix}b")]) == [
            b"1", b"2"]
    finally:
        await client.aclose()


async def test_a_batch_whose_connection_the_server_closed_fails_and_the_next_one_reconnects(
        redis_url: str, prefix: str) -> None:
    """As a pipeline did: the lost batch raises ConnectionError (the worker leaves its entries
    pending, for reclaim), unless the pool saw the connection closed before handing it out
    (redis-py 8.2 checks, and reconnects); the dead connection is never used again."""
    client = make_client(redis_url, max_connections=1)
    other = make_client(redis_url)
    try:
        (mine,) = await send_all(client, [("CLIENT", "ID")])
        assert await other.execute_command("CLIENT", "KILL", "ID", mine) == 1
        # Either the batch met the closed connection and failed whole, or it ran on a new one.
        with contextlib.suppress(ConnectionError):
            assert await send_all(client, [("SET", f"{prefix}k", "v")]) == [b"OK"]
        assert await send_all(client, [("SET", f"{prefix}k", "v"), ("GET", f"{prefix}k")]) == [
            b"OK", b"v"]
        (again,) = await send_all(client, [("CLIENT", "ID")])
        assert again != mine  # a new connection
    finally:
        await client.aclose()
        await other.aclose()


def _answer(root: str, reply: str) -> Transition:
    return Transition(log=[LogEntry("block", root, 1, blockId="b")],
                      emits=[Emit("result", "", f'{{"r":"{reply}"}}'.encode())],
                      finishes_root=True)


async def test_an_intake_batch_of_several_partitions_commits_in_one_script_call_after_a_script_flush(
        redis_url: str, prefix: str) -> None:
    keys = Keys(prefix, 4)
    client = make_client(redis_url)
    store = Store(client, keys, state_ttl_s=60, dedup_ttl_s=60, marker_ttl_s=60, direct=True,
                  targets=Targets(keys))
    try:
        await store.load_scripts()
        # The server forgot the scripts (a restart, a failover): the commit reloads them once.
        await client.script_flush()
        commits = [Commit(n, f"{n}-e", _answer(f"{n}-e", f"r{n}"), None, command_guard=f"cmd-{n}")
                   for n in range(4)]
        await client.config_resetstat()
        assert await store.commit(commits) == [Verdict.COMMITTED] * 4
        stats = await client.info("commandstats")
        # One NOSCRIPT, then one call for the four partitions.
        assert stats["cmdstat_evalsha"]["calls"] == 2
        results = await client.xrange(keys.results)
        assert sorted(fields[b"data"] for _, fields in results) == [
            f'{{"r":"r{n}"}}'.encode() for n in range(4)]
        for n in range(4):
            assert await client.exists(keys.command_guard(n, f"cmd-{n}"))
        # Each record kept its own guard: the same batch again is four duplicates.
        assert await store.commit(commits) == [Verdict.DUPLICATE] * 4
    finally:
        await client.aclose()
