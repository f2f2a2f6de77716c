"""replyTo names a result stream from CHATFLOW_REPLY_STREAMS, never an internal key; a reply
stream of the wrong type still gets its command answered."""

from __future__ import annotations

import msgspec

from chatflow.schemas.wire import ToolResult
from tests.core.tools import ret, tool
from tests.harness import Harness


async def _answer_on_default_stream(h: Harness, reply_to: str) -> ToolResult:
    await h.put_tool("pt-ok", tool("r", ret("r", "v")))
    command = msgspec.structs.replace(h.command("pt-ok"), replyTo=reply_to)
    after = await h.mark()
    await h.send(command)
    found = await h.results_after(after, {command.commandId}, timeout_s=15)
    (result,) = found[command.commandId]
    return result


async def test_a_reply_to_the_registry_log_is_refused_and_the_log_is_untouched(
        redis_url: str, prefix: str) -> None:
    # With a results bound set, the old code also trimmed the registry's log to it.
    h = Harness(redis_url, prefix, results_maxlen=1)
    try:
        await h.start_worker()
        for n in range(3):
            await h.client.xadd(h.keys.registry, {"event": f"server-{n}"})
        before = await h.client.xrange(h.keys.registry)
        result = await _answer_on_default_stream(h, h.keys.registry)
        assert result.error is not None and result.error.code == "invalid_command"
        assert result.error.message.startswith("replyTo: ")
        assert "CHATFLOW_REPLY_STREAMS" in result.error.message
        assert await h.client.xrange(h.keys.registry) == before
    finally:
        await h.close()


async def test_a_reply_stream_that_is_a_string_key_gets_the_command_answered(
        harness: Harness) -> None:
    reply = harness.keys.prefix + "stream:tool-results:taken"
    await harness.client.set(reply, "a string")
    result = await _answer_on_default_stream(harness, reply)
    assert result.error is not None and result.error.code == "invalid_command"
    assert "replyTo" in result.error.message and "string" in result.error.message
    assert await harness.client.get(reply) == b"a string"


async def test_the_reply_streams_setting_opens_other_streams(redis_url: str, prefix: str) -> None:
    h = Harness(redis_url, prefix, reply_streams="stream:tool-results,stream:flow-replies:*")
    try:
        await h.start_worker()
        await h.put_tool("pt-ok", tool("r", ret("r", "v")))
        reply = prefix + "stream:flow-replies:f1"
        command = msgspec.structs.replace(h.command("pt-ok"), replyTo=reply)
        after = await h.mark(reply)
        await h.send(command)
        found = await h.results_after(after, {command.commandId}, stream=reply)
        assert found[command.commandId][0].result == "v"
    finally:
        await h.close()
