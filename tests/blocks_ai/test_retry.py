"""callAI and fetchMedia with a retry policy, against the loopback fake of OpenAI and a
scripted loopback upstream: a provider's 429 with Retry-After is waited out and tried again,
a media URL's 503 is tried again; the attempts are in the block's trace."""

from __future__ import annotations

import threading
import time

from starlette.responses import JSONResponse

from tests.blocks_ai.conftest import Fakes
from tests.blocks_ai.fakes import png_bytes
from tests.blocks_ai.helpers import call_ai, fetch_media, returns, run, tool
from tests.harness import Harness
from tests.support.http import LoopbackServer, Reply, Request, json_reply

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


class Unavailable:
    """Answers 503 the first time, then a PNG; counts the requests."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0

    def __call__(self, request: Request) -> Reply:
        with self.lock:
            self.count += 1
            if self.count == 1:
                return json_reply({"error": "unavailable"}, 503)
        return 200, {"Content-Type": "image/png"}, png_bytes()


async def test_a_media_url_s_503_then_200_is_fetched_in_two_requests(
        ai: Harness, http_server: LoopbackServer) -> None:
    upstream = Unavailable()
    http_server.route("GET", "/photo.png", upstream)
    fetch = fetch_media("fetch", "done", mode="url", urlVariable="u", retry=RETRY)
    result = await run(ai, "pt-media-retry", tool(fetch, returns("{{mime}}")),
                       inputs={"u": f"{http_server.base}/photo.png"})
    assert (result.ok, result.result) == (True, "image/png"), result
    assert upstream.count == 2
    (block,) = [e for e in await ai.trace(result.executionId)
                if e.type == "block" and e.blockId == "fetch"]
    attempts = (block.detail or {})["attempts"]
    assert [a.get("status") for a in attempts] == [503, 200], attempts
    assert attempts[0]["waitMs"] == 0 and attempts[1]["waitMs"] >= 10, attempts


async def test_without_a_policy_a_provider_429_fails_the_block_at_once(
        ai: Harness, fakes: Fakes) -> None:
    fakes.openai.failure = JSONResponse({"error": {"message": "Rate limit reached"}},
                                        status_code=429, headers={"retry-after": "1"})
    fakes.openai.failures_left = 1
    ask = call_ai("ask", "done", "generateText", model="gpt-4o-mini", userPrompt="Oi")
    result = await run(ai, "pt-once", tool(ask, returns()))
    assert result.error is not None and result.error.code == "llm_http_status"
    assert "tentativa" not in result.error.message
