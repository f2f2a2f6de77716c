"""callAI: one model call through an LlmCredential, in the OpenAI wire format.

The credential is read from its cache projection (``llm:credential:{id}``, see
``schemas/llm.py``) through a :class:`CredentialSource`, like published tools
through ``ToolSource``; a missing one is ``llm_credential_not_found``.

Capabilities (``runtime/blocks/openai_wire.py`` has the shapes):

* ``transcribeAudio``: the base64 audio in ``inputVariable`` (MIME in ``mimeTypeVariable``)
  goes to ``/audio/transcriptions`` with ``model`` (default ``whisper-1``) and ``language``.
  ``maxTokens`` does not apply; ``outputFormat: "json"`` checks the transcript parses.
* ``analyzeImage``: chat completion with the image as a data URL plus ``prompt``
  (default "Descreva esta imagem.").
* ``analyzeDocument``: the PDF is cut to its first ``maxPages`` pages with pypdf and sent
  as a chat ``file`` part (``file_data`` data URL), plus ``prompt``. Sending the PDF itself,
  not its extracted text, keeps scanned pages, tables and images readable to vision
  models; an endpoint without file parts answers 4xx, which the block reports.
* ``generateText``: ``systemPrompt`` (optional) and ``userPrompt``, both interpolated.

``outputFormat: "json"`` sends ``response_format: {"type": "json_object"}`` and the reply
must parse as JSON (one surrounding Markdown code fence is tolerated, for compatible
endpoints that add one); the parsed value is written to ``outputVariable``. Otherwise the
text is. ``maxTokens`` is sent as ``max_tokens``.

Every model call the provider answered with 2xx emits one ``LlmUsageEvent`` on
``stream:llm-usage`` (through ``BlockOutcome.emits``, atomically with the step), even when
the reply then fails the JSON check: those tokens were spent. A call that failed
(4xx/5xx, timeout) spent none and emits nothing.

The call is bounded by ``llm_timeout_ms`` and by the tool's remaining deadline, whichever
is shorter. The API key only ever sits in the ``Authorization`` header: error messages are
scrubbed of it, and debug detail holds the URL, status and the model's output.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import filetype
import msgspec
import pypdf
from pypdf.errors import PyPdfError

from chatflow.schemas.definition import CallAIBlock
from chatflow.schemas.llm import LlmCredential, credential_decoder
from chatflow.schemas.wire import LlmUsageEvent

from ..errors import ErrorCode, ToolFailure
from ..events import iso
from ..interpolation import to_text
from ..limits import Limits
from ..origins import origin_of
from ..outbound import Outbound
from ..outcome import BlockOutcome
from ..state import Emit, ExecState
from ..tenancy import usable
from . import openai_wire as wire
from .common import remaining_ms, text_of
from .media import (
    MediaConfig,
    MediaFetcher,
    best_mime,
    media_type,
    scrub,
    size_text,
    variable_value,
)
from .runner import BlockRunner

DEFAULT_TRANSCRIPTION_MODEL = "whisper-1"
DEFAULT_IMAGE_PROMPT = "Descreva esta imagem."
_usage_encoder = msgspec.json.Encoder()


class CredentialSource(Protocol):
    """Where LLM credentials are read from (``llm:credential:{credentialId}``)."""

    async def get_credential(self, credential_id: str) -> bytes | None: ...


@dataclass(frozen=True, slots=True)
class AIConfig:
    timeout_ms: int = 60_000
    max_input_bytes: int = 25 * 1024 * 1024
    # The output kept in outputVariable, as UTF-8 bytes (CHATFLOW_AI_MAX_OUTPUT_BYTES): an
    # execution's variables are stored on every step, so one answer may not grow them unbounded.
    max_output_bytes: int = 1024 * 1024
    transcription_model: str = DEFAULT_TRANSCRIPTION_MODEL


@dataclass(frozen=True, slots=True)
class Media:
    data: bytes
    mime: str


class CallAI:
    """The callAI executor; ``run`` is what the BlockRunner calls."""

    def __init__(self, client: Outbound, credentials: CredentialSource,
                 config: AIConfig, limits: Limits,
                 clock: Callable[[], int] | None = None) -> None:
        self.client = client
        self.credentials = credentials
        self.config = config
        self.limits = limits
        self.clock = clock or (lambda: int(time.time() * 1000))

    async def run(self, state: ExecState, block: CallAIBlock, now_ms: int) -> BlockOutcome:
        started = time.perf_counter()
        outcome = BlockOutcome(debug={"method": "POST"})
        key = ""
        try:
            credential = await self._credential(block.llmCredentialId, state.root.workspace)
            key = credential.apiKey
            value = await self._call(state, block, credential, now_ms, outcome)
        except ToolFailure as exc:
            outcome.error = exc.reworded(scrub(exc.message, key))
            outcome.writes = {block.outputVariable: ""}
        else:
            outcome.writes = {block.outputVariable: value}
            outcome.debug["result"] = value
        outcome.duration_ms = _ms(started)
        return outcome

    async def _credential(self, credential_id: str, workspace: str) -> LlmCredential:
        # Another workspace's credential reads exactly as a missing one (runtime/tenancy.py).
        raw = usable(await self.credentials.get_credential(credential_id), workspace)
        if raw is None:
            raise ErrorCode.LLM_CREDENTIAL_NOT_FOUND.failure(credential=credential_id)
        try:
            credential = credential_decoder.decode(raw)
        except msgspec.DecodeError as exc:
            # The decoder's message names a field, never echoes a value.
            raise ErrorCode.LLM_CREDENTIAL_INVALID.failure(credential=credential_id,
                                                           cause=exc) from exc
        if credential.provider_name != "openai":
            raise ErrorCode.LLM_PROVIDER_UNSUPPORTED.failure(provider=credential.provider_name,
                                                             credential=credential_id)
        if not credential.apiKey:
            raise ErrorCode.LLM_CREDENTIAL_NO_KEY.failure(credential=credential_id)
        target = origin_of(credential.base_url)
        if credential.apiKeyOrigin is not None and credential.apiKeyOrigin != target:
            raise ErrorCode.SECRET_ORIGIN_MISMATCH.failure(
                what="callAI", saved=credential.apiKeyOrigin, target=target,
                secrets=f"apiKey de llmCredentialId={credential_id}")
        return credential

    async def _call(self, state: ExecState, block: CallAIBlock, credential: LlmCredential,
                    now_ms: int, outcome: BlockOutcome) -> Any:
        what = f"callAI {block.capability}"
        request = await self._request(state, block)
        outcome.debug["url"] = credential.base_url + request.path
        outcome.debug["model"] = request.model  # the span's gen_ai.request.model
        budget_ms = min(self.config.timeout_ms, remaining_ms(state, now_ms))
        call_started = time.perf_counter()
        try:
            async with asyncio.timeout(budget_ms / 1000):
                status, body, outcome.retry_after = await wire.post(
                    self.client, credential.base_url, credential.apiKey, request,
                    timeout_s=budget_ms / 1000, what=what)
        except TimeoutError as exc:
            raise ErrorCode.LLM_TIMEOUT.failure(what=what, seconds=budget_ms / 1000) from exc
        outcome.debug["status"] = status
        if status >= 400:
            raise wire.status_failure(status, body, credential.apiKey, what)
        if block.capability == "transcribeAudio":
            reply = wire.parse_transcription(body, request.model)
        else:
            reply = wire.parse_chat(body, request.model)
        outcome.emits.append(self._usage(state, block, reply, _ms(call_started)))
        # The span's gen_ai.usage.* and gen_ai.response.model (docs/operations.md "Tracing").
        outcome.debug["usage"] = {"inputTokens": reply.usage.prompt_tokens,
                                  "outputTokens": reply.usage.completion_tokens,
                                  "model": reply.model}
        size = len(reply.text.encode("utf-8", errors="replace"))
        if size > self.config.max_output_bytes:
            raise ErrorCode.AI_OUTPUT_TOO_LARGE.failure(
                what=what, size=size_text(size), cap=size_text(self.config.max_output_bytes))
        if block.outputFormat == "json":
            return parse_json_output(reply, what)
        return reply.text

    async def _request(self, state: ExecState, block: CallAIBlock) -> wire.WireRequest:
        cap = self.limits.max_rendered_chars
        json_mode = block.outputFormat == "json"
        model = block.model or ""
        if block.capability == "transcribeAudio":
            media = self._media(state, block)
            language = text_of(block.language, state, cap).strip() if block.language else None
            filename = wire.audio_filename(media.mime, _sniffed_extension(media.data))
            return wire.transcription_request(media.data, media.mime, filename,
                                              model or self.config.transcription_model,
                                              language or None)
        if block.capability == "analyzeImage":
            media = self._media(state, block)
            if not media.mime.startswith("image/"):
                raise _input_invalid(f"analyzeImage espera uma imagem; recebeu {media.mime}")
            prompt = text_of(block.prompt, state, cap) if block.prompt else ""
            content = [wire.text_part(prompt or DEFAULT_IMAGE_PROMPT),
                       wire.image_part(media.mime, _b64(media.data))]
            return wire.chat_request(model, [{"role": "user", "content": content}],
                                     max_tokens=block.maxTokens, json_mode=json_mode)
        if block.capability == "analyzeDocument":
            media = self._media(state, block)
            pdf = await asyncio.to_thread(first_pages, media, block.maxPages or 1)
            content = [wire.text_part(text_of(block.prompt or "", state, cap)),
                       wire.file_part("document.pdf", "application/pdf", _b64(pdf))]
            return wire.chat_request(model, [{"role": "user", "content": content}],
                                     max_tokens=block.maxTokens, json_mode=json_mode)
        messages: list[dict[str, Any]] = []
        system = text_of(block.systemPrompt, state, cap) if block.systemPrompt else ""
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": text_of(block.userPrompt or "", state, cap)})
        return wire.chat_request(model, messages, max_tokens=block.maxTokens, json_mode=json_mode)

    def _media(self, state: ExecState, block: CallAIBlock) -> Media:
        """The bytes in ``inputVariable`` (base64 or a base64 data URL) and their MIME type."""
        cap = self.limits.max_rendered_chars
        name = block.inputVariable or ""
        raw = to_text(variable_value(name, state, cap)).strip()
        stated = to_text(variable_value(block.mimeTypeVariable or "", state, cap))
        if raw.startswith("data:") and ";base64," in raw[:200]:
            header, raw = raw.split(",", 1)
            stated = stated or header[5:].split(";", 1)[0]
        if not raw:
            raise ErrorCode.AI_INPUT_MISSING.failure(capability=block.capability, name=name)
        if len(raw) * 3 // 4 > self.config.max_input_bytes:
            raise ErrorCode.AI_INPUT_TOO_LARGE.failure(
                capability=block.capability, cap=size_text(self.config.max_input_bytes))
        try:
            data = base64.b64decode("".join(raw.split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _input_invalid(f"a variável {name!r} não contém base64 válido") from exc
        return Media(data, best_mime(media_type(stated) or None, data))

    def _usage(self, state: ExecState, block: CallAIBlock, reply: wire.Reply,
               duration_ms: int) -> Emit:
        event = LlmUsageEvent(
            toolId=state.toolId, publishedToolId=state.publishedToolId,
            credentialId=block.llmCredentialId, capability=block.capability, model=reply.model,
            promptTokens=reply.usage.prompt_tokens,
            completionTokens=reply.usage.completion_tokens,
            totalTokens=reply.usage.total_tokens, durationMs=duration_ms,
            occurredAt=iso(self.clock()))
        return Emit("llm_usage", "", _usage_encoder.encode(event))


def first_pages(media: Media, max_pages: int) -> bytes:
    """The PDF cut to its first ``max_pages`` pages (unchanged when it has no more)."""
    if media.mime != "application/pdf" and not media.data.startswith(b"%PDF"):
        raise _input_invalid(f"analyzeDocument espera um PDF; recebeu {media.mime}")
    try:
        reader = pypdf.PdfReader(io.BytesIO(media.data))
        if reader.is_encrypted:
            reader.decrypt("")
        if len(reader.pages) <= max_pages:
            return media.data
        writer = pypdf.PdfWriter()
        for page in reader.pages[:max_pages]:
            writer.add_page(page)
        out = io.BytesIO()
        writer.write(out)
    except (PyPdfError, ValueError, KeyError, TypeError, NotImplementedError) as exc:
        raise _input_invalid(f"analyzeDocument: PDF ilegível ({type(exc).__name__})") from exc
    return out.getvalue()


def parse_json_output(reply: wire.Reply, what: str) -> Any:
    text = reply.text.strip()
    if text.startswith("```") and text.endswith("```"):
        text = text[3:-3].strip()
        if text[:4].lower() == "json":
            text = text[4:]
    try:
        return json.loads(text)
    except ValueError as exc:
        cut = " (resposta cortada por maxTokens)" if reply.finish_reason == "length" else ""
        raise ErrorCode.LLM_OUTPUT_NOT_JSON.failure(what=what, cut=cut,
                                                    start=reply.text[:120]) from exc


def register_media_and_ai(runner: BlockRunner, credentials: CredentialSource,
                          media: MediaConfig | None = None, ai: AIConfig | None = None) -> None:
    """Register the fetchMedia and callAI executors on ``runner``."""
    runner.register("fetchMedia", MediaFetcher(runner.http, media or MediaConfig(),
                                               runner.limits).run)
    runner.register("callAI", CallAI(runner.http, credentials, ai or AIConfig(),
                                     runner.limits).run)


def _input_invalid(detail: str) -> ToolFailure:
    return ErrorCode.AI_INPUT_INVALID.failure(cause=detail)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _sniffed_extension(data: bytes) -> str | None:
    ext: str | None = filetype.guess_extension(data[:8192])
    return ext


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
