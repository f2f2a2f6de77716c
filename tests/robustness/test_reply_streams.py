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


async def test_a_native_tool_call_cannot_reply_into_the_registry_log(harness: Harness) -> None:
    from chatflow.handlers.dataplane.native import load_native_tools
    from chatflow.handlers.dataplane.worker import Worker

    worker = Worker(harness.settings, harness.url,
                    native_tools=load_native_tools(["tests.bridge.native_tools"]))
    await worker.start()
    harness.workers.append(worker)
    await harness.client.xadd(harness.keys.registry, {"event": "server-1"})
    before = await harness.client.xrange(harness.keys.registry)
    after = await harness.mark(harness.keys.native_results)
    call = {"callId": "call-1", "tool": "openTicket", "arguments": {"subject": "s"},
            "replyTo": harness.keys.registry}
    await harness.client.xadd(harness.keys.native_calls("openTicket"),
                              {"data": msgspec.json.encode(call)})
    reply = await harness.client.xread({harness.keys.native_results: after}, block=15_000)
    (_stream, entries), = reply
    assert msgspec.json.decode(entries[0][1][b"data"])["callId"] == "call-1"
    assert await harness.client.xrange(harness.keys.registry) == before


async def test_a_refused_reply_stream_follows_the_actions_on_error_continue(
        harness: Harness) -> None:
    await harness.put_tool("pt-ok", tool("r", ret("r", "v")))
    command = msgspec.structs.replace(
        harness.command("pt-ok", onError="continue", errorVariable="why"),
        replyTo=harness.keys.registry)
    after = await harness.mark()
    await harness.send(command)
    (result,) = (await harness.results_after(after, {command.commandId}, timeout_s=15))[
        command.commandId]
    assert result.error is not None and result.error.code == "invalid_command"
    assert result.next == "continue" and not result.ok
    assert result.variables == {"out": "", "why": result.error.message}
    assert "replyTo" in result.error.message


async def test_a_refused_reply_stream_with_a_blocking_action_hands_off_as_error_handoff_says(
        harness: Harness) -> None:
    await harness.put_tool("pt-ok", tool("r", ret("r", "v")))
    command = msgspec.structs.replace(
        harness.command("pt-ok", errorHandoff=False, errorMessage="sorry"),
        replyTo=harness.keys.registry)
    after = await harness.mark()
    await harness.send(command)
    (result,) = (await harness.results_after(after, {command.commandId}, timeout_s=15))[
        command.commandId]
    assert result.error is not None and result.error.code == "invalid_command"
    assert result.next == "defaultException" and result.variables == {}
    assert result.errorMessage == "sorry"


async def test_a_command_that_does_not_fit_follows_its_readable_actions_on_error(
        harness: Harness) -> None:
    command = msgspec.to_builtins(harness.command("pt-ok", onError="continue",
                                                  errorVariable="why"))
    command["context"] = "not an object"
    after = await harness.mark()
    await harness.publish_raw({"data": msgspec.json.encode(command)})
    (result,) = (await harness.results_after(after, {command["commandId"]}, timeout_s=15))[
        command["commandId"]]
    assert result.error is not None and result.error.code == "invalid_command"
    assert result.next == "continue" and result.variables["why"] == result.error.message
