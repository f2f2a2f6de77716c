"""callAI and fetchMedia with a retry policy, against the loopback fakes of OpenAI and the
Graph API: a provider's 429 with Retry-After is waited out and tried again; the attempts are
in the block's trace."""

from __future__ import annotations

import time

from starlette.responses import JSONResponse

from tests.blocks_ai.conftest import Fakes
from tests.blocks_ai.helpers import call_ai, returns, run, tool
from tests.harness import Harness

RETRY = {"maxAttempts": 3, "initialIntervalMs": 20, "maxIntervalMs": 100}


async def test_a_provider_429_with_retry_after_is_waited_out_and_tried_again(
        ai: Harness, fakes: Fakes) -> None:
    throttled = JSONResponse({"error": {"message": "Rate limit reached", "type": "requests",
                                        "param": None, "code": "rate_limit_exceeded"}},
                             status_code=429, headers={"retry-after": "1"})
    fakes.openai.failure, fakes.openai.failures_left = throttled, 1
    fakes.openai.replies = ["Olá!"]
    started = time.monotonic()
    ask = call_ai("ask", "done", "generateText", model="gpt-4o-mini", userPrompt="Oi",
                  retry=RETRY)
    result = await run(ai, "pt-retry", tool(ask, returns()))
    assert (result.ok, result.result) == (True, "Olá!"), result
    assert time.monotonic() - started >= 1.0  # Retry-After, longer than the 20 ms backoff
    assert fakes.openai.failures_left == 0  # the 429 was sent, once
    (block,) = [e for e in await ai.trace(result.executionId)
                if e.type == "block" and e.blockId == "ask"]
    assert [a.get("status") for a in (block.detail or {})["attempts"]] == [429, 200]


async def test_without_a_policy_a_provider_429_fails_the_block_at_once(
        ai: Harness, fakes: Fakes) -> None:
    fakes.openai.failure = JSONResponse({"error": {"message": "Rate limit reached"}},
                                        status_code=429, headers={"retry-after": "1"})
    fakes.openai.failures_left = 1
    ask = call_ai("ask", "done", "generateText", model="gpt-4o-mini", userPrompt="Oi")
    result = await run(ai, "pt-once", tool(ask, returns()))
    assert result.error is not None and result.error.code == "llm_http_status"
    assert "tentativa" not in result.error.message
