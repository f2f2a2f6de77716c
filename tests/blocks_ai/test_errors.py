"""Each failure of fetchMedia and callAI is a clear block error that follows onError."""

from __future__ import annotations

import json
import time

import msgspec
import structlog

from chatflow.runtime.blocks.ai import AIConfig, CallAI
from chatflow.runtime.egress import DEFAULT_POLICY
from chatflow.runtime.limits import Limits
from chatflow.runtime.outbound import Outbound
from chatflow.runtime.state import ExecState, RootInfo
from chatflow.schemas.definition import CallAIBlock
from chatflow.schemas.wire import ExecuteToolAction
from tests.blocks_ai.conftest import WA_TOKEN, Fakes, Opener
from tests.blocks_ai.fakes import openai_error, wav_bytes
from tests.blocks_ai.helpers import (
    call_ai,
    command,
    entries,
    everything_stored,
    fetch_media,
    returns,
    run,
    tool,
)
from tests.harness import Harness


def continuing(block: dict[str, object]) -> dict[str, object]:
    return {**block, "onError": "continue", "errorVariable": "err"}


GENERATE = call_ai("ask", "done", "generateText", model="gpt-4o-mini", userPrompt="Oi")
REPORT = returns("[{{answer}}] {{err}}")


async def test_a_provider_4xx_is_a_block_error_naming_the_status_and_the_provider_message(
        ai: Harness, fakes: Fakes) -> None:
    fakes.openai.failure = openai_error(
        429, "Rate limit reached for gpt-4o-mini in organization org-x on requests per min "
             "(RPM): Limit 3, Used 3, Requested 1.", type_="requests", code="rate_limit_exceeded")

    result = await run(ai, "pt-429", tool(GENERATE, REPORT), errorMessage="Falhou, {{name}}",
                       variables={"name": "Ana"})

    assert not result.ok
    assert result.error is not None
    assert result.error.code == "llm_http_status"
    assert result.error.message == (
        "callAI generateText: o provedor respondeu HTTP 429: Rate limit reached for "
        "gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, "
        "Requested 1.")
    assert result.next == "handoff"
    assert result.errorMessage == "Falhou, Ana"


async def test_a_provider_5xx_with_on_error_continue_fills_the_error_variable(
        ai: Harness, fakes: Fakes) -> None:
    fakes.openai.failure = openai_error(
        500, "The server had an error while processing your request. Sorry about that!",
        type_="server_error")

    result = await run(ai, "pt-500", tool(continuing(GENERATE), REPORT))

    assert result.ok, result.error
    assert result.result == ("[] callAI generateText: o provedor respondeu HTTP 500: The server "
                             "had an error while processing your request. Sorry about that!")


async def test_a_wrong_api_key_is_reported_without_ever_showing_the_key(
        ai: Harness, fakes: Fakes) -> None:
    wrong = "sk-proj-WRONGwrongWRONGwrong0000111122223333"
    credential = {"id": "cred-bad", "provider": "openai", "baseUrl": f"{fakes.openai.url}/v1",
                  "apiKey": wrong, "name": "bad"}
    await ai.client.set(ai.keys.llm_credential("cred-bad"), json.dumps(credential))

    result = await run(ai, "pt-401", tool({**GENERATE, "llmCredentialId": "cred-bad"}, REPORT))

    assert result.error is not None
    assert result.error.code == "llm_http_status"
    assert "HTTP 401: Incorrect API key provided: sk-" in result.error.message
    assert wrong not in result.error.message


async def test_a_provider_that_does_not_answer_times_out_at_llm_timeout(
        open_ai: Opener, fakes: Fakes) -> None:
    ai = await open_ai(llm_timeout_ms=300)
    fakes.openai.hang = True

    result = await run(ai, "pt-hang", tool(continuing(GENERATE), REPORT))

    assert result.ok, result.error
    assert result.result == "[] callAI generateText: o provedor não respondeu em 0.3s"


async def test_the_model_call_is_cut_at_the_tools_remaining_deadline(fakes: Fakes) -> None:
    fakes.openai.hang = True

    class Credentials:
        async def get_credential(self, credential_id: str) -> bytes:
            return json.dumps({"id": credential_id, "apiKey": fakes.api_key,
                               "baseUrl": f"{fakes.openai.url}/v1"}).encode()

    now = int(time.time() * 1000)
    root = RootInfo("cmd-1", msgspec.convert({"id": "a", "toolId": "t", "publishedToolId": "p"},
                                             ExecuteToolAction), None, {}, "c", {}, {}, now)
    state = ExecState(execId="0-x", rootId="0-x", partition=0, depth=0, toolId="t",
                      publishedToolId="p", defHash="", block="ask", variables={}, context={},
                      root=root, startedMs=now, deadlineMs=now + 300)
    block = CallAIBlock.model_validate(GENERATE)
    async with Outbound(DEFAULT_POLICY) as client:
        executor = CallAI(client, Credentials(), AIConfig(timeout_ms=60_000), Limits())
        outcome = await executor.run(state, block, now)

    assert outcome.error is not None
    assert outcome.error.code == "llm_timeout"
    assert outcome.error.message == "callAI generateText: o provedor não respondeu em 0.3s"
    assert outcome.writes == {"answer": ""}
    assert outcome.emits == []


async def test_output_that_is_not_json_fails_the_block_yet_its_usage_is_reported(
        ai: Harness, fakes: Fakes) -> None:
    fakes.openai.replies.append('{"city": "São Paulo", "zip": "01001-000"}')
    block = continuing(call_ai("ask", "done", "generateText", model="gpt-4o-mini",
                               outputFormat="json", maxTokens=2, userPrompt="Cidade em JSON"))

    result = await run(ai, "pt-notjson", tool(block, REPORT))

    assert result.ok, result.error
    assert result.result == ("[] callAI generateText: a resposta do modelo não é JSON (resposta "
                             "cortada por maxTokens): '{\"city\": \"São'")
    (usage,) = await entries(ai, ai.keys.llm_usage, 1)
    assert usage["completionTokens"] == 2


async def test_a_missing_credential_is_llm_credential_not_found(
        ai: Harness, fakes: Fakes) -> None:
    block = {**GENERATE, "llmCredentialId": "cred-nope"}

    result = await run(ai, "pt-nocred", tool(block, REPORT))

    assert result.error is not None
    assert result.error.code == "llm_credential_not_found"
    assert result.error.message == ("callAI: credencial LLM não encontrada: "
                                    "llmCredentialId=cred-nope")
    assert fakes.openai.requests == []


async def test_media_larger_than_the_cap_fails_with_a_clear_error(
        open_ai: Opener, fakes: Fakes) -> None:
    ai = await open_ai(media_max_bytes=1_048_576)
    block = continuing(fetch_media("fetch", "done", mode="url", urlVariable="u"))

    result = await run(ai, "pt-big", tool(block, returns("[{{media}}{{mime}}] {{err}}")),
                       inputs={"u": f"{fakes.graph.url}/files/big.bin"})

    assert result.ok, result.error
    assert result.result == ("[] fetchMedia: mídia maior que o limite de 1 MB (1048576 bytes): "
                             f"GET {fakes.graph.url}/files/big.bin")


async def test_whatsapp_media_announced_larger_than_the_cap_is_never_downloaded(
        open_ai: Opener, fakes: Fakes) -> None:
    ai = await open_ai(media_max_bytes=1000)
    fakes.graph.media["wamid-big"] = (wav_bytes(seconds=1.0), "audio/wav")

    result = await run(ai, "pt-big-wa", tool(fetch_media("fetch", "done"), returns()),
                       inputs={"mediaId": "wamid-big"})

    assert result.error is not None
    assert result.error.code == "media_too_large"
    assert result.error.message == ("fetchMedia: mídia maior que o limite de 1000 bytes: "
                                    "mediaId=wamid-big tem 16044 bytes")
    assert [r["path"] for r in fakes.graph.requests] == ["/v21.0/wamid-big"]


async def test_a_graph_api_error_names_the_status_and_graphs_message(
        ai: Harness, fakes: Fakes) -> None:
    result = await run(ai, "pt-nomedia", tool(fetch_media("fetch", "done"), returns()),
                       inputs={"mediaId": "wamid-gone"})

    assert result.error is not None
    assert result.error.code == "media_http_status"
    assert result.error.message.startswith(
        f"fetchMedia: Graph API GET {fakes.graph.url}/v21.0/wamid-gone: HTTP 400: Unsupported "
        "get request. Object with ID 'wamid-gone' does not exist")


async def test_a_rejected_whatsapp_token_never_appears_in_the_error(
        ai: Harness, fakes: Fakes) -> None:
    result = await run(ai, "pt-badtoken", tool(fetch_media("fetch", "done"), returns()),
                       router_token="EAAGrevokedToken999", inputs={"mediaId": "wamid-x"})

    assert result.error is not None
    assert result.error.message.endswith("HTTP 401: Invalid OAuth access token - Cannot parse "
                                         "access token")
    assert "EAAGrevokedToken999" not in result.error.message


async def test_without_any_whatsapp_token_fetch_media_says_where_to_put_one(
        ai: Harness, fakes: Fakes) -> None:
    result = await run(ai, "pt-notoken", tool(fetch_media("fetch", "done"), returns()),
                       router_token=None, inputs={"mediaId": "wamid-x"})

    assert result.error is not None
    assert result.error.code == "media_token_missing"
    assert "router.accessToken" in result.error.message
    assert fakes.graph.requests == []


async def test_an_input_that_is_not_base64_is_rejected_before_any_model_call(
        ai: Harness, fakes: Fakes) -> None:
    block = call_ai("look", "done", "analyzeImage", model="gpt-4o")

    result = await run(ai, "pt-b64", tool(block, returns()),
                       inputs={"media": "not base64!", "mime": "image/png"})

    assert result.error is not None
    assert result.error.code == "ai_input_invalid"
    assert fakes.openai.requests == []


async def test_the_api_key_never_reaches_debug_events_results_traces_logs_or_redis(
        ai: Harness, fakes: Fakes) -> None:
    fakes.graph.media["wamid-s"] = (wav_bytes(), "audio/wav")
    fakes.openai.replies.append("segredo nenhum")
    definition = tool(fetch_media("fetch", "transcribe"),
                      call_ai("transcribe", "ask", "transcribeAudio"),
                      continuing({**GENERATE, "id": "ask", "defaultOutput":
                                  {"type": "block", "blockId": "done"}}),
                      returns("{{answer}} {{err}}"))
    await ai.put_tool("pt-secret", definition)
    fakes.openai.failure = None

    with structlog.testing.capture_logs() as logs:
        ok = await ai.run_command(command(ai, "pt-secret", debug=True,
                                          inputs={"mediaId": "wamid-s"}))
        fakes.openai.failure = openai_error(400, f"echo {fakes.api_key}")
        fakes.openai.failure_path = "/chat/completions"
        failed = await ai.run_command(command(ai, "pt-secret", debug=True,
                                              inputs={"mediaId": "wamid-s"}))

    assert ok.ok and failed.ok
    assert failed.result.endswith("HTTP 400: echo ***")
    debug = await entries(ai, ai.keys.debug("5511999990000"), 2 * (2 + 4))
    assert {e["actionType"] for e in debug} >= {"executeTool:fetchMedia", "executeTool:callAI"}
    traces = [await ai.trace(r.executionId or "") for r in (ok, failed)]
    key, token = fakes.api_key.encode(), WA_TOKEN.encode()
    for text in (json.dumps(debug).encode(), msgspec.json.encode(traces),
                 msgspec.json.encode([ok, failed]), repr(logs).encode()):
        assert key not in text
        assert token not in text
    stored = await everything_stored(ai, skip={ai.keys.llm_credential("cred-1")})
    assert b"segredo nenhum" in stored
    assert key not in stored
