"""The OpenAI wire format, as callAI speaks it to any compatible endpoint.

Request builders and response parsers are pure; :func:`post` is the one
network call, made through ``Outbound.send`` (runtime/outbound.py) (size-capped read) with
the key in the ``Authorization`` header only. Every failure becomes a
``ToolFailure`` with a stable ``llm_*`` code whose message never holds the key.

Shapes used (OpenAI API reference):

* ``POST {baseUrl}/audio/transcriptions``: multipart ``file`` (named with an extension the
  API accepts: it picks the decoder by extension), ``model``, optional ``language`` (ISO-639-1),
  ``response_format=json``; answers ``{"text", "usage"?}``, where ``usage`` is
  ``{"type": "tokens", "input_tokens", "output_tokens", "total_tokens"}`` or
  ``{"type": "duration", "seconds"}`` (no tokens: counted as zero).
* ``POST {baseUrl}/chat/completions``: ``{"model", "messages", "max_tokens"?,
  "response_format"?}``; an image is an ``image_url`` part holding a data URL, a PDF a
  ``file`` part with ``file_data`` as a ``data:application/pdf;base64,...`` URL. With
  ``response_format: {"type": "json_object"}`` the API demands the word "JSON" somewhere in
  the messages; :func:`with_json_instruction` adds a system line when the prompts lack it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from ..errors import ErrorCode, ToolFailure
from ..outbound import Outbound
from .media import error_message_of, scrub

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
JSON_INSTRUCTION = "Respond with a single valid JSON object."
# Outbound's failures as callAI names them; any other is llm_unreachable.
_RELAYED: dict[str, ErrorCode] = {
            ErrorCode.HTTP_TIMEOUT: ErrorCode.LLM_TIMEOUT,
            ErrorCode.HTTP_INVALID_URL: ErrorCode.LLM_INVALID_URL,
            ErrorCode.HTTP_RESPONSE_TOO_LARGE: ErrorCode.LLM_RESPONSE_TOO_LARGE,
            ErrorCode.EGRESS_DENIED: ErrorCode.EGRESS_DENIED,
            ErrorCode.EXECUTION_CANCELLED: ErrorCode.EXECUTION_CANCELLED}

_AUDIO_EXTENSIONS = {
    "audio/ogg": "ogg", "audio/opus": "ogg", "application/ogg": "ogg",
    "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mpga": "mpga",
    "audio/mp4": "m4a", "audio/m4a": "m4a", "audio/x-m4a": "m4a", "video/mp4": "mp4",
    "audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/vnd.wave": "wav",
    "audio/webm": "webm", "video/webm": "webm", "audio/flac": "flac", "audio/x-flac": "flac",
    "audio/aac": "aac", "audio/amr": "amr",
}


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    model: str
    usage: Usage
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class WireRequest:
    """A request ready to send: path under baseUrl, body bytes, content type."""

    path: str
    body: bytes
    content_type: str
    model: str


# -- requests ------------------------------------------------------------------------

def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_part(mime: str, b64: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{b64}"}}


def file_part(filename: str, mime: str, b64: str) -> dict[str, Any]:
    return {"type": "file", "file": {"filename": filename,
                                     "file_data": f"data:{mime};base64,{b64}"}}


def with_json_instruction(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API refuses json_object unless some message says "json"; add it when none does."""
    if any("json" in _text_of(m.get("content")).lower() for m in messages):
        return messages
    return [{"role": "system", "content": JSON_INSTRUCTION}, *messages]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content
                        if isinstance(p, dict) and p.get("type") == "text")
    return ""


def chat_request(model: str, messages: list[dict[str, Any]], *, max_tokens: int | None,
                 json_mode: bool) -> WireRequest:
    body: dict[str, Any] = {"model": model,
                            "messages": with_json_instruction(messages) if json_mode else messages}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if json_mode:
        body["response_format"] = {"type": "json_object"}
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return WireRequest("/chat/completions", data, "application/json", model)


def audio_filename(mime: str, fallback_ext: str | None) -> str:
    ext = _AUDIO_EXTENSIONS.get(mime) or fallback_ext or "bin"
    return f"audio.{ext}"


def transcription_request(audio: bytes, mime: str, filename: str, model: str,
                          language: str | None) -> WireRequest:
    fields: dict[str, str] = {"model": model, "response_format": "json"}
    if language:
        fields["language"] = language
    # httpx encodes the multipart body (boundary included); we only borrow the encoder.
    encoder = httpx.Request("POST", "http://multipart.invalid/", data=fields,
                            files={"file": (filename, audio, mime or "application/octet-stream")})
    body = encoder.read()
    return WireRequest("/audio/transcriptions", body, encoder.headers["content-type"], model)


# -- responses -----------------------------------------------------------------------

def _bad(what: str) -> ToolFailure:
    return ErrorCode.LLM_BAD_RESPONSE.failure(what=what)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise _bad("não é JSON") from exc
    if not isinstance(data, dict):
        raise _bad("não é um objeto JSON")
    return data


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_chat(body: bytes, requested_model: str) -> Reply:
    data = _json_object(body)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _bad("sem 'choices'")
    choice = choices[0]
    message = _dict(choice.get("message"))
    content = message.get("content")
    if content is None and message.get("refusal"):
        raise ErrorCode.LLM_REFUSED.failure(refusal=message["refusal"])
    if not isinstance(content, str):
        raise _bad("choices[0].message.content ausente")
    usage = _dict(data.get("usage"))
    prompt, completion = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
    total = _int(usage.get("total_tokens")) or prompt + completion
    model = data.get("model") if isinstance(data.get("model"), str) else requested_model
    finish = choice.get("finish_reason")
    return Reply(content, model or requested_model, Usage(prompt, completion, total),
                 finish if isinstance(finish, str) else None)


def parse_transcription(body: bytes, requested_model: str) -> Reply:
    data = _json_object(body)
    text = data.get("text")
    if not isinstance(text, str):
        raise _bad("transcrição sem 'text'")
    usage = _dict(data.get("usage"))
    if usage.get("type") == "tokens":
        prompt, completion = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
        counted = Usage(prompt, completion, _int(usage.get("total_tokens")) or prompt + completion)
    else:
        counted = Usage()
    return Reply(text, requested_model, counted)


# -- transport -----------------------------------------------------------------------

async def post(client: Outbound, base_url: str, api_key: str, request: WireRequest,
               *, timeout_s: float, what: str) -> tuple[int, bytes, str | None]:
    """POST ``request``: status, body and, on a failed status, its Retry-After header; a
    transport failure raises ToolFailure (``llm_timeout``, ``llm_unreachable``,
    ``llm_invalid_url``, ``llm_response_too_large``)."""
    url = base_url.rstrip("/") + request.path
    headers = {"Authorization": f"Bearer {api_key}", "Content-Type": request.content_type,
               "Accept": "application/json"}
    try:
        reply = await client.exchange("POST", url, headers=headers, content=request.body,
                                      timeout_s=timeout_s, max_bytes=MAX_RESPONSE_BYTES)
    except ToolFailure as exc:
        code = _RELAYED.get(exc.code, ErrorCode.LLM_UNREACHABLE)
        raise code.with_message(scrub(f"{what}: {exc.message}", api_key)) from exc
    retry_after = reply.headers.get("retry-after") if reply.status >= 400 else None
    return reply.status, reply.body, retry_after


def status_failure(status: int, body: bytes, api_key: str, what: str) -> ToolFailure:
    detail = scrub(error_message_of(body), api_key)
    return ErrorCode.LLM_HTTP_STATUS.failure(detail, what=what, status=status)
