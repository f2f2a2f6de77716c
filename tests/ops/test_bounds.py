"""Streams stay bounded: acked commands leave stream:tool-commands, and the public streams
nobody in the runtime consumes (results, dead letters, LLM usage) are capped by default."""

from __future__ import annotations

import uuid

from chatflow.handlers.dataplane.store import Publish, Store, Targets
from chatflow.handlers.keys import COMMANDS_GROUP, Keys
from chatflow.handlers.settings import Settings
from tests.harness import Harness
from tests.ops.tools import returning


async def test_an_answered_command_leaves_no_bytes_in_the_command_stream(
        harness: Harness) -> None:
    await harness.put_tool("pt-big", returning("{{blob.size}}"))
    blob = "x" * (4 * 1024 * 1024)
    result = await harness.run("pt-big", variables={"blob": {"size": "4MiB", "data": blob}})
    assert result.ok and result.result == "4MiB"
    await harness.drained(harness.keys.commands, COMMANDS_GROUP)
    assert await harness.client.xlen(harness.keys.commands) == 0
    usage = await harness.client.memory_usage(harness.keys.commands)
    assert usage is not None and usage < 64 * 1024, usage


def test_the_public_streams_are_bounded_unless_told_otherwise() -> None:
    defaults = {name: Settings.model_fields[name].default
                for name in ("results_maxlen", "dead_letters_maxlen", "llm_usage_maxlen")}
    assert all(bound > 0 for bound in defaults.values()), defaults


async def test_results_and_dead_letters_stop_growing_at_their_bound(bare: Harness) -> None:
    await bare.start_worker(results_maxlen=10, dead_letters_maxlen=10)
    await bare.put_tool("pt-tiny", returning("ok"))
    commands = [bare.command("pt-tiny") for _ in range(300)]
    after = await bare.mark()
    for command in commands:
        await bare.send(command)
    for _ in range(300):  # entries without a 'data' field are dead-lettered
        await bare.publish_raw({"junk": "1"})
    await bare.results_after(after, {c.commandId for c in commands[-5:]})
    await bare.drained(bare.keys.commands, COMMANDS_GROUP)
    # MAXLEN ~ trims whole radix-tree nodes (100 entries each): at most bound + one node
    assert await bare.client.xlen(bare.keys.results) <= 110
    assert await bare.client.xlen(bare.keys.dead_letters) <= 110
    assert await bare.client.xlen(bare.keys.commands) == 0


async def test_a_contacts_debug_stream_expires_after_its_last_event(bare: Harness) -> None:
    # Any command may name a new contact with debug on: each such stream must not stay for ever.
    await bare.start_worker(debug_ttl_s=120)
    await bare.put_tool("pt-traced", returning("ok"))
    contact = f"55119{uuid.uuid4().int % 10**8:08d}"
    result = await bare.run("pt-traced", debug=True, contact=contact)
    assert result.ok
    stream = bare.keys.debug(contact)
    assert await bare.client.xlen(stream) > 0
    assert 0 < await bare.client.ttl(stream) <= 120


async def test_a_relayed_debug_event_renews_its_streams_ttl_and_other_streams_get_none(
        bare: Harness) -> None:
    # The relay (the path a cluster takes) publishes through publish_once.lua.
    store = Store(bare.client, bare.keys, state_ttl_s=60, dedup_ttl_s=60, marker_ttl_s=60,
                  targets=Targets(bare.keys, debug_ttl_s=90))
    debug, results = bare.keys.debug("5511000000001"), bare.keys.results
    verdicts = await store.publish_once([
        Publish(debug, Keys.sent_marker(debug, "m1"), b"{}", 0, store.targets.ttl("debug")),
        Publish(results, Keys.sent_marker(results, "m2"), b"{}", 0, store.targets.ttl("result"))])
    assert verdicts == [1, 1]
    assert 0 < await bare.client.ttl(debug) <= 90
    assert await bare.client.ttl(results) == -1  # a stream without an expiry
