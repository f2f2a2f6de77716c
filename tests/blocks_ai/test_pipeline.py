"""fetchMedia and callAI end to end: one tool through the stream runtime, fakes on loopback."""

from __future__ import annotations

import base64
import json

from tests.blocks_ai.conftest import WA_TOKEN, Fakes
from tests.blocks_ai.fakes import pdf_bytes, png_bytes, wav_bytes
from tests.blocks_ai.helpers import call_ai, entries, fetch_media, returns, run, tool
from tests.harness import Harness


async def test_a_whatsapp_voice_note_is_downloaded_transcribed_and_returned(
        ai: Harness, fakes: Fakes) -> None:
    audio = wav_bytes()
    fakes.graph.media["wamid-audio-1"] = (audio, "audio/wav")
    fakes.openai.replies.append("Olá, quero saber do meu pedido")
    definition = tool(fetch_media("fetch", "transcribe"),
                      call_ai("transcribe", "done", "transcribeAudio", language="{{lang}}"),
                      returns())

    result = await run(ai, "pt-voice", definition, inputs={"mediaId": "wamid-audio-1"},
                       variables={"lang": "pt"})

    assert result.ok, result.error
    assert result.result == "Olá, quero saber do meu pedido"
    assert result.variables == {"out": "Olá, quero saber do meu pedido"}
    meta, download = fakes.graph.requests
    assert meta["path"] == "/v21.0/wamid-audio-1"
    assert download["path"] == "/whatsapp_business/attachments/"
    assert download["query"]["mid"] == "wamid-audio-1"
    assert meta["authorization"] == download["authorization"] == f"Bearer {WA_TOKEN}"
    (sent,) = fakes.openai.requests
    assert sent["file"] == audio
    assert sent["filename"] == "audio.wav"
    assert sent["file_type"] == "audio/wav"
    assert sent["fields"] == {"model": "whisper-1", "response_format": "json", "language": "pt"}


async def test_every_model_call_reports_its_usage_on_the_llm_usage_stream(
        ai: Harness, fakes: Fakes) -> None:
    fakes.graph.media["wamid-audio-2"] = (wav_bytes(), "audio/ogg")
    fakes.openai.replies += ["bom dia pessoal", "Saudação matinal"]
    definition = tool(
        fetch_media("fetch", "transcribe"),
        call_ai("transcribe", "summarise", "transcribeAudio", model="gpt-4o-transcribe",
                outputVariable="transcript"),
        call_ai("summarise", "done", "generateText", model="gpt-4o-mini",
                systemPrompt="Resuma em duas palavras.", userPrompt="{{transcript}}"),
        returns())

    result = await run(ai, "pt-usage", definition, inputs={"mediaId": "wamid-audio-2"})

    assert result.ok, result.error
    assert result.result == "Saudação matinal"
    events = {e["capability"]: e for e in await entries(ai, ai.keys.llm_usage, 2)}
    transcription, summary = events["transcribeAudio"], events["generateText"]
    for event in (transcription, summary):
        assert event["toolId"] == "t-pt-usage"
        assert event["publishedToolId"] == "pt-usage"
        assert event["credentialId"] == "cred-1"
        assert event["durationMs"] >= 0
        assert event["occurredAt"].endswith("+00:00")
    assert transcription["model"] == "gpt-4o-transcribe"
    assert (transcription["promptTokens"], transcription["completionTokens"],
            transcription["totalTokens"]) == (14, 3, 17)
    assert summary["model"] == "gpt-4o-mini-2024-08-06"
    assert summary["promptTokens"] == 4 + 3
    assert summary["completionTokens"] == 2
    assert summary["totalTokens"] == 9
    assert fakes.openai.requests[0]["filename"] == "audio.ogg"
    chat = fakes.openai.requests[1]["json"]
    assert chat["messages"] == [{"role": "system", "content": "Resuma em duas palavras."},
                                {"role": "user", "content": "bom dia pessoal"}]
    assert "response_format" not in chat and "max_tokens" not in chat


async def test_an_image_fetched_by_url_without_a_content_type_is_sniffed_and_described(
        ai: Harness, fakes: Fakes) -> None:
    image = png_bytes()
    fakes.graph.media["photo"] = (image, "")
    fakes.openai.replies.append("Um quadrado vermelho")
    definition = tool(
        fetch_media("fetch", "look", mode="url", urlVariable="photoUrl"),
        call_ai("look", "done", "analyzeImage", model="gpt-4o",
                prompt="O que {{name}} enviou?", maxTokens=60),
        returns("{{mime}}: {{answer}}"))

    result = await run(ai, "pt-image", definition, variables={"name": "Ana"},
                       inputs={"photoUrl": f"{fakes.graph.url}/files/photo"})

    assert result.ok, result.error
    assert result.result == "image/png: Um quadrado vermelho"
    assert fakes.graph.requests[0]["authorization"] is None
    (sent,) = fakes.openai.requests
    assert sent["image"] == image
    assert sent["json"]["max_tokens"] == 60
    (message,) = sent["json"]["messages"]
    text, picture = message["content"]
    assert text == {"type": "text", "text": "O que Ana enviou?"}
    assert picture["image_url"]["url"].startswith("data:image/png;base64,")


async def test_a_pdf_is_cut_to_max_pages_and_sent_as_a_file_part(
        ai: Harness, fakes: Fakes) -> None:
    fakes.graph.media["wamid-doc"] = (pdf_bytes(5), "application/pdf")
    fakes.openai.replies.append("Contrato de aluguel")
    definition = tool(
        fetch_media("fetch", "read"),
        call_ai("read", "done", "analyzeDocument", model="gpt-4o", maxPages=2,
                prompt="Que documento é este?"),
        returns())

    result = await run(ai, "pt-pdf", definition, inputs={"mediaId": "wamid-doc"})

    assert result.ok, result.error
    assert result.result == "Contrato de aluguel"
    (sent,) = fakes.openai.requests
    assert sent["pdf_pages"] == 2
    text, document = sent["json"]["messages"][0]["content"]
    assert text["text"] == "Que documento é este?"
    assert document["type"] == "file"
    assert document["file"]["filename"] == "document.pdf"
    assert document["file"]["file_data"].startswith("data:application/pdf;base64,")


async def test_a_pdf_shorter_than_max_pages_is_sent_unchanged(ai: Harness, fakes: Fakes) -> None:
    pdf = pdf_bytes(1)
    fakes.graph.media["short.pdf"] = (pdf, "application/pdf")
    definition = tool(
        fetch_media("fetch", "read", mode="url", urlVariable="docUrl"),
        call_ai("read", "done", "analyzeDocument", model="gpt-4o", maxPages=3,
                prompt="Resuma"),
        returns())

    result = await run(ai, "pt-pdf-short", definition,
                       inputs={"docUrl": f"{fakes.graph.url}/files/short.pdf"})

    assert result.ok, result.error
    assert fakes.openai.requests[0]["pdf"] == pdf


async def test_json_output_sends_json_object_and_stores_the_parsed_value(
        ai: Harness, fakes: Fakes) -> None:
    fakes.openai.replies.append('{"city": "São Paulo", "zip": "01001-000"}')
    definition = tool(
        call_ai("extract", "done", "generateText", model="gpt-4o-mini", outputFormat="json",
                maxTokens=50, userPrompt="Extraia a cidade de: {{text}}"),
        returns("{{answer.city}} / {{answer}}"))

    result = await run(ai, "pt-json", definition, variables={"text": "Praça da Sé, SP"})

    assert result.ok, result.error
    assert result.result == 'São Paulo / {"city":"São Paulo","zip":"01001-000"}'
    body = fakes.openai.requests[0]["json"]
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == 50
    assert body["messages"][0] == {"role": "system",
                                   "content": "Respond with a single valid JSON object."}


async def test_json_output_keeps_prompts_that_already_ask_for_json(
        ai: Harness, fakes: Fakes) -> None:
    fakes.openai.replies.append("[1, 2]")
    definition = tool(
        call_ai("extract", "done", "generateText", model="gpt-4o-mini", outputFormat="json",
                userPrompt="Answer in JSON: the first two numbers"),
        returns("{{answer.1}}"))

    result = await run(ai, "pt-json-2", definition)

    assert result.ok, result.error
    assert result.result == "2"
    assert fakes.openai.requests[0]["json"]["messages"] == [
        {"role": "user", "content": "Answer in JSON: the first two numbers"}]


async def test_fetch_media_takes_the_token_from_auth_header_when_given(
        ai: Harness, fakes: Fakes) -> None:
    fakes.graph.media["wamid-3"] = (b"%PDF-1.4 not really", "application/pdf")
    definition = tool(fetch_media("fetch", "done", authHeader="Bearer {{waToken}}"),
                      returns("{{mime}} {{media}}"))

    result = await run(ai, "pt-auth", definition, router_token="wrong-token",
                       inputs={"mediaId": "wamid-3", "waToken": WA_TOKEN})

    assert result.ok, result.error
    encoded = base64.b64encode(b"%PDF-1.4 not really").decode()
    assert result.result == f"application/pdf {encoded}"
    assert {r["authorization"] for r in fakes.graph.requests} == {f"Bearer {WA_TOKEN}"}


async def test_url_mode_sends_a_bare_auth_header_token_as_a_bearer_token(
        ai: Harness, fakes: Fakes) -> None:
    fakes.graph.media["note.json"] = (json.dumps({"a": 1}).encode(), "application/json")
    definition = tool(fetch_media("fetch", "done", mode="url", urlVariable="u",
                                  authHeader="{{tok}}"),
                      returns("{{mime}}"))

    result = await run(ai, "pt-url-auth", definition,
                       inputs={"u": f"{fakes.graph.url}/files/note.json", "tok": "abc123"})

    assert result.ok, result.error
    assert result.result == "application/json"
    assert fakes.graph.requests[0]["authorization"] == "Bearer abc123"
