"""Issue 21.2: a callAI answer longer than CHATFLOW_AI_MAX_OUTPUT_BYTES is not kept: the block
fails with ``ai_output_too_large``, under its onError."""

from __future__ import annotations

from tests.blocks_ai.conftest import Fakes, Opener
from tests.blocks_ai.helpers import call_ai, returns, run, tool

GENERATE = call_ai("ask", "done", "generateText", model="gpt-4o-mini", userPrompt="Oi")


async def test_an_ai_answer_over_the_output_cap_is_ai_output_too_large(
        open_ai: Opener, fakes: Fakes) -> None:
    h = await open_ai(ai_max_output_bytes=100)
    fakes.openai.replies = ["palavra " * 20, "curta"]  # 160 bytes, then 5

    over = await run(h, "pt-long", tool(GENERATE, returns()))
    fits = await run(h, "pt-short", tool(GENERATE, returns()))

    assert over.error is not None and over.error.code == "ai_output_too_large"
    assert "CHATFLOW_AI_MAX_OUTPUT_BYTES" in over.error.message
    assert fits.error is None and fits.result == "curta"


async def test_an_oversized_answer_with_on_error_continue_fills_the_error_variable(
        open_ai: Opener, fakes: Fakes) -> None:
    h = await open_ai(ai_max_output_bytes=10)
    fakes.openai.replies = ["uma resposta longa demais"]

    result = await run(h, "pt-long-continue", tool(
        {**GENERATE, "onError": "continue", "errorVariable": "err"}, returns("[{{answer}}] {{err}}")))

    assert result.error is None, result.error
    assert isinstance(result.result, str) and result.result.startswith("[] callAI generateText:")
