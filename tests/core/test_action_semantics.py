"""The executeTool action's outputVariable / onError / errorMessage / errorHandoff (SPEC)."""

from __future__ import annotations

from tests.core.tools import ret, script, to, tool
from tests.harness import Harness

FAILING = tool("s", script("s", "throw new Error('down')", "v", to("r")), ret("r", "x"))


async def test_continue_writes_empty_output_and_the_error_variable(harness: Harness) -> None:
    await harness.put_tool("pt-f", FAILING)
    result = await harness.run("pt-f", onError="continue", errorVariable="addressError",
                               outputVariable="address")
    assert result.next == "continue" and not result.ok and result.result == ""
    assert result.error is not None
    assert result.variables == {"address": "", "addressError": result.error.message}
    assert result.errorMessage is None


async def test_blocking_hands_off_by_default(harness: Harness) -> None:
    await harness.put_tool("pt-f", FAILING)
    result = await harness.run("pt-f", onError="blocking", variables={"name": "Ana"},
                               errorMessage="Sorry {{name}}, try later")
    assert result.next == "handoff"
    assert result.errorMessage == "Sorry Ana, try later"
    assert result.variables == {}


async def test_blocking_with_handoff_false_recovers_in_default_exception(harness: Harness) -> None:
    await harness.put_tool("pt-f", FAILING)
    result = await harness.run("pt-f", onError="blocking", errorHandoff=False)
    assert result.next == "defaultException"


async def test_blocking_with_handoff_true_hands_off(harness: Harness) -> None:
    await harness.put_tool("pt-f", FAILING)
    assert (await harness.run("pt-f", errorHandoff=True)).next == "handoff"


async def test_tool_local_writes_never_appear_in_result_variables(harness: Harness) -> None:
    await harness.put_tool("pt-ok", tool("s", script("s", "return 5", "local", to("r")),
                                         ret("r", "{{local}}")))
    result = await harness.run("pt-ok", outputVariable="answer")
    assert result.variables == {"answer": "5"}


async def test_result_echoes_command_and_action_ids(harness: Harness) -> None:
    await harness.put_tool("pt-ok", tool("r", ret("r", "v")))
    command = harness.command("pt-ok", command_id="cmd-42")
    result = await harness.run_command(command)
    assert (result.commandId, result.actionId) == ("cmd-42", "act-1")
    assert result.durationMs >= 0


async def test_results_go_to_the_reply_stream_the_command_names(harness: Harness) -> None:
    await harness.put_tool("pt-ok", tool("r", ret("r", "v")))
    reply = harness.keys.prefix + "stream:tool-results:my-replies"
    import msgspec

    command = msgspec.structs.replace(harness.command("pt-ok"), replyTo=reply)
    after = await harness.mark(reply)
    await harness.send(command)
    found = await harness.results_after(after, {command.commandId}, stream=reply)
    assert found[command.commandId][0].result == "v"
