"""commit.lua, called directly: one test per verdict, and no record ever fails halfway.

The verdicts are one enum (``handlers.dataplane.store.Verdict``) that the script's source is rendered
from; each test below makes the script return one of them and checks what it wrote.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from chatflow.handlers.dataplane.store import COMMIT, Commit, Store, Targets, Verdict
from chatflow.handlers.keys import STEPS_GROUP, Keys
from chatflow.handlers.redis_client import Client, make_client
from chatflow.runtime.state import Emit, LogEntry, Transition, decode_log


@dataclass
class Script:
    client: Client
    keys: Keys
    store: Store

    async def step(self) -> bytes:
        """A step entry delivered to a consumer: pending until a commit acks it."""
        stream = self.keys.steps(0)
        await self.client.xgroup_create(stream, STEPS_GROUP, id="0", mkstream=True)
        entry_id: bytes = await self.client.xadd(stream, {"d": "x"})
        await self.client.xreadgroup(STEPS_GROUP, "c", {stream: ">"})
        return entry_id

    async def pending(self) -> int:
        info = await self.client.xpending(self.keys.steps(0), STEPS_GROUP)
        return int(info["pending"])

    async def logged(self, root_id: str = "0-e") -> int:
        """Log entries committed for the tree of ``root_id``."""
        return len(decode_log(await self.client.get(self.keys.log(0, root_id)) or b""))


@pytest.fixture
async def script(redis_url: str, prefix: str) -> AsyncIterator[Script]:
    keys = Keys(prefix, 1)
    client = make_client(redis_url)
    store = Store(client, keys, state_ttl_s=60, dedup_ttl_s=60, marker_ttl_s=60, direct=True,
                  targets=Targets(keys))
    await store.load_scripts()
    try:
        yield Script(client, keys, store)
    finally:
        await client.aclose()


def logging_transition(**kw: object) -> Transition:
    return Transition(log=[LogEntry("block", "0-e", 1, blockId="b")], **kw)  # type: ignore[arg-type]


def test_the_script_reads_the_verdicts_from_the_python_enum() -> None:
    header = COMMIT.source.splitlines()[0]
    assert all(f"{v.name} = {int(v)}" in header for v in Verdict)


async def test_a_transition_whose_checks_hold_is_committed_and_its_step_acked(
        script: Script) -> None:
    entry = await script.step()
    await script.client.hset(script.keys.state(0, "0-e"), mapping={"v": "3", "s": "{}"})
    t = logging_transition(expect=("0-e", 3))
    (verdict,) = await script.store.commit([Commit(0, "0-e", t, entry)])
    assert verdict == Verdict.COMMITTED
    assert await script.logged() == 1
    assert await script.pending() == 0


async def test_a_transition_of_an_answered_tree_is_dropped_and_its_step_acked(
        script: Script) -> None:
    entry = await script.step()
    await script.client.set(script.keys.done(0, "0-e"), "1")
    (verdict,) = await script.store.commit([Commit(0, "0-e", logging_transition(), entry)])
    assert verdict == Verdict.ALREADY_ANSWERED
    assert await script.logged() == 0
    assert await script.pending() == 0


async def test_a_stale_transition_writes_nothing_and_leaves_the_command_guard_unset(
        script: Script) -> None:
    await script.client.hset(script.keys.state(0, "0-p"), mapping={"v": "4", "s": "{}"})
    t = logging_transition(also_expect=[("0-p", 3)])
    (verdict,) = await script.store.commit([Commit(0, "0-e", t, None, command_guard="cmd-1")])
    assert verdict == Verdict.STALE
    assert await script.logged() == 0
    # The guard is checked and set with the writes: a refused record must not mark the
    # command as run (it would never run again, and never be answered).
    assert not await script.client.exists(script.keys.command_guard(0, "cmd-1"))


async def test_a_second_transition_for_one_command_id_is_a_duplicate(script: Script) -> None:
    first = Commit(0, "0-e", logging_transition(), None, command_guard="cmd-2")
    second = Commit(0, "0-f", Transition(log=[LogEntry("block", "0-f", 1, blockId="b")]), None,
                    command_guard="cmd-2")
    assert await script.store.commit([first, second]) == [Verdict.COMMITTED, Verdict.DUPLICATE]
    assert await script.logged("0-f") == 0


async def test_a_transition_meeting_a_reply_stream_of_the_wrong_type_writes_nothing_and_stays_pending(
        script: Script) -> None:
    entry = await script.step()
    reply = f"{script.keys.prefix}stream:tool-results:mine"
    await script.client.set(reply, "someone's string")
    t = logging_transition(emits=[Emit("result", reply, b"{}")], finishes_root=True)
    # One call of the script as Store.commit makes it, before its redirect.
    keys, args = script.store._batch_args(0, [Commit(0, "0-e", t, entry, command_guard="cmd-3")])
    async with script.client.pipeline(transaction=False) as pipe:
        COMMIT.queue(pipe, keys, args)
        ((verdict,),) = await pipe.execute()
    assert verdict == Verdict.WRONG_TYPE
    assert await script.logged() == 0
    assert not await script.client.exists(script.keys.command_guard(0, "cmd-3"))
    assert not await script.client.exists(script.keys.done(0, "0-e"))
    assert await script.pending() == 1  # not acked: Store.commit redirects and retries it


async def test_keys_the_runtime_owns_are_not_type_checked(script: Script) -> None:
    await script.client.hset(script.keys.state(0, "0-e"), mapping={"v": "3", "s": "{}"})
    await script.store.commit([Commit(0, "0-e", logging_transition(expect=("0-e", 3)))])
    await script.client.config_resetstat()
    await script.store.commit([Commit(0, "0-e", logging_transition(expect=("0-e", 3)))])
    stats = await script.client.info("commandstats")
    assert stats["cmdstat_evalsha"]["calls"] == 1 and "cmdstat_type" not in stats


async def test_an_answer_for_a_reply_stream_that_became_a_string_goes_to_the_default_stream(
        script: Script) -> None:
    reply = f"{script.keys.prefix}stream:tool-results:mine"
    await script.client.set(reply, "someone's string")
    t = logging_transition(emits=[Emit("result", reply, b'{"commandId":"cmd-4"}'),
                                  Emit("debug", "5511", b"{}")],
                           finishes_root=True)
    (verdict,) = await script.store.commit([Commit(0, "0-e", t, None, command_guard="cmd-4")])
    assert verdict == Verdict.COMMITTED
    assert await script.client.get(reply) == b"someone's string"
    (entry,) = await script.client.xrange(script.keys.results)
    assert entry[1][b"data"] == b'{"commandId":"cmd-4"}'
    assert await script.client.exists(script.keys.command_guard(0, "cmd-4"))
