"""Loopback fakes of the OpenAI API and the WhatsApp Graph API.

Each is a real HTTP server (Starlette on uvicorn, in the test's event loop) that
checks every request the way the real API does, records what it received, and
answers with the real API's shapes, errors included: OpenAI's
``{"error": {"message", "type", "param", "code"}}`` and Graph's
``{"error": {"message", "type", "code", "fbtrace_id"}}``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import re
import struct
import uuid
import wave
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pypdf
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

# -- servers ---------------------------------------------------------------------------


# -- OpenAI ----------------------------------------------------------------------------

CHAT_KEYS = {"model", "messages", "max_tokens", "max_completion_tokens", "response_format",
             "temperature", "top_p", "n", "stop", "user", "seed"}
TRANSCRIPTION_KEYS = {"file", "model", "language", "prompt", "response_format", "temperature",
                      "timestamp_granularities[]", "chunking_strategy", "include[]"}
AUDIO_FORMATS = ["flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"]
IMAGE_DATA_URL = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,(.+)$", re.S)
PDF_DATA_URL = re.compile(r"^data:application/pdf;base64,(.+)$", re.S)


def openai_error(status: int, message: str, type_: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": type_, "param": param,
                                   "code": code}}, status_code=status)


class InvalidRequest(Exception):
    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


def _words(text: str) -> int:
    return len(text.split())


@dataclass
class FakeOpenAI:
    """``/v1/chat/completions`` and ``/v1/audio/transcriptions``."""

    api_key: str
    replies: list[str] = field(default_factory=list)
    failure: JSONResponse | None = None
    failure_path: str | None = None  # None: every route fails
    failures_left: int | None = None  # None: every request fails; n: only the next n
    hang: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    released: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/audio/transcriptions", self.transcribe, methods=["POST"]),
        ])

    def _auth(self, request: Request) -> JSONResponse | None:
        header = request.headers.get("authorization", "")
        if not header:
            return openai_error(401, "You didn't provide an API key. You need to provide your "
                                     "API key in an Authorization header using Bearer auth "
                                     "(i.e. Authorization: Bearer YOUR_KEY).")
        given = header.removeprefix("Bearer ")
        if header == given or given != self.api_key:
            masked = f"{given[:3]}{'*' * max(0, len(given) - 7)}{given[-4:]}"
            return openai_error(401, f"Incorrect API key provided: {masked}. You can find your "
                                     "API key at https://platform.openai.com/account/api-keys.",
                                code="invalid_api_key")
        return None

    async def _before(self, request: Request) -> JSONResponse | None:
        denied = self._auth(request)
        if denied is not None:
            return denied
        if self.hang:
            await self.released.wait()
        if self.failure_path is None or request.url.path.endswith(self.failure_path):
            if self.failures_left is not None:
                if self.failures_left <= 0:
                    return None
                self.failures_left -= 1
            return self.failure
        return None

    async def chat(self, request: Request) -> Response:
        stop = await self._before(request)
        if stop is not None:
            return stop
        try:
            body = await request.json()
        except ValueError:
            return openai_error(400, "We could not parse the JSON body of your request.")
        try:
            record = check_chat(body, request.headers.get("content-type", ""))
        except InvalidRequest as exc:
            return openai_error(400, exc.message, param=exc.param, code=exc.code)
        self.requests.append(record)
        content = self.replies.pop(0) if self.replies else "ok"
        finish = "stop"
        limit = body.get("max_tokens")
        if limit is not None and _words(content) > limit:
            content, finish = " ".join(content.split()[:limit]), "length"
        prompt_tokens = record["prompt_words"] + 85 * record["images"] + 250 * record["pdf_pages"]
        completion = _words(content)
        return JSONResponse({
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
            "created": 1_700_000_000, "model": f"{body['model']}-2024-08-06",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                                                 "refusal": None},
                         "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                      "total_tokens": prompt_tokens + completion},
            "system_fingerprint": "fp_fake",
        })

    async def transcribe(self, request: Request) -> Response:
        stop = await self._before(request)
        if stop is not None:
            return stop
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            return openai_error(400, "Expected a multipart/form-data request body.")
        form = await request.form()
        try:
            record = await check_transcription(form)
        except InvalidRequest as exc:
            return openai_error(400, exc.message, param=exc.param, code=exc.code)
        self.requests.append(record)
        text = self.replies.pop(0) if self.replies else ""
        if record["fields"]["model"] == "whisper-1":
            usage: dict[str, Any] = {"type": "duration", "seconds": 1}
        else:
            usage = {"type": "tokens", "input_tokens": 14, "output_tokens": _words(text),
                     "total_tokens": 14 + _words(text),
                     "input_token_details": {"text_tokens": 0, "audio_tokens": 14}}
        return JSONResponse({"text": text, "usage": usage})


def _check_part(part: Any, i: int, j: int, record: dict[str, Any]) -> None:
    param = f"messages.[{i}].content.[{j}]"
    if not isinstance(part, dict) or part.get("type") not in {"text", "image_url", "file"}:
        raise InvalidRequest(f"Invalid value: '{part!r}'. Supported values are: 'text', "
                             "'image_url', 'input_audio', 'refusal', 'audio', and 'file'.",
                             param=f"{param}.type", code="invalid_value")
    if part["type"] == "text":
        if not isinstance(part.get("text"), str):
            raise InvalidRequest("Missing required parameter: 'text'.", param=f"{param}.text")
        record["texts"].append(part["text"])
        record["prompt_words"] += _words(part["text"])
    elif part["type"] == "image_url":
        url = (part.get("image_url") or {}).get("url", "")
        match = IMAGE_DATA_URL.match(url) if isinstance(url, str) else None
        if match is None:
            raise InvalidRequest("Invalid image_url: expected a URL or a base64 data URL of "
                                 "png, jpeg, gif or webp.", param=param,
                                 code="invalid_image_url")
        try:
            record["image"] = base64.b64decode(match.group(2), validate=True)
        except binascii.Error as exc:
            raise InvalidRequest("Invalid base64 image_url.", param=param,
                                 code="invalid_image_url") from exc
        record["images"] += 1
    else:
        file = part.get("file") or {}
        match = PDF_DATA_URL.match(file.get("file_data", "") or "")
        if not isinstance(file.get("filename"), str) or match is None:
            raise InvalidRequest("Invalid file: 'file_data' must be a base64 data URL and "
                                 "'filename' is required.", param=f"{param}.file",
                                 code="invalid_value")
        data = base64.b64decode(match.group(1), validate=True)
        try:
            pages = len(pypdf.PdfReader(io.BytesIO(data)).pages)
        except Exception as exc:
            raise InvalidRequest("The file is not a valid PDF.", param=f"{param}.file",
                                 code="invalid_file") from exc
        record["pdf_pages"] += pages
        record["pdf"] = data


def check_chat(body: Any, content_type: str) -> dict[str, Any]:
    if not content_type.startswith("application/json") or not isinstance(body, dict):
        raise InvalidRequest("We could not parse the JSON body of your request.")
    for key in body:
        if key not in CHAT_KEYS:
            raise InvalidRequest(f"Unrecognized request argument supplied: {key}")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequest("you must provide a model parameter", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("Invalid 'messages': empty array. Expected an array with minimum "
                             "length 1.", param="messages", code="empty_array")
    record: dict[str, Any] = {"json": body, "texts": [], "images": 0, "pdf_pages": 0,
                              "prompt_words": 0}
    _check_messages(messages, record)
    _check_options(body, record)
    return record


def _check_messages(messages: list[Any], record: dict[str, Any]) -> None:
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in {"system", "developer", "user", "assistant"}:
            raise InvalidRequest(f"Invalid value: '{role}'. Supported values are: 'system', "
                                 "'assistant', 'user', 'tool', 'function' and 'developer'.",
                                 param=f"messages.[{i}].role", code="invalid_value")
        content = message.get("content")
        if isinstance(content, str):
            record["texts"].append(content)
            record["prompt_words"] += _words(content)
        elif isinstance(content, list) and role == "user":
            for j, part in enumerate(content):
                _check_part(part, i, j, record)
        else:
            raise InvalidRequest(f"Invalid type for 'messages.[{i}].content'.",
                                 param=f"messages.[{i}].content", code="invalid_type")


def _check_options(body: dict[str, Any], record: dict[str, Any]) -> None:
    limit = body.get("max_tokens")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InvalidRequest(f"Invalid 'max_tokens': integer below minimum value. Expected a "
                             f"value >= 1, but got {limit} instead.", param="max_tokens",
                             code="integer_below_min_value")
    fmt = body.get("response_format")
    if fmt is not None:
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if kind not in {"text", "json_object", "json_schema"}:
            raise InvalidRequest(f"Invalid value: '{kind}'. Supported values are: 'json_object',"
                                 " 'json_schema', and 'text'.", param="response_format.type",
                                 code="invalid_value")
        if kind == "json_object" and not any("json" in t.lower() for t in record["texts"]):
            raise InvalidRequest("'messages' must contain the word 'json' in some form, to use "
                                 "'response_format' of type 'json_object'.", param="messages")


async def check_transcription(form: Any) -> dict[str, Any]:
    for key in form:
        if key not in TRANSCRIPTION_KEYS:
            raise InvalidRequest(f"Unrecognized request argument supplied: {key}")
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise InvalidRequest("1 validation error for Request\nbody -> file\n  field required "
                             "(type=value_error.missing)")
    ext = (upload.filename or "").rsplit(".", 1)[-1].lower()
    if ext not in AUDIO_FORMATS:
        raise InvalidRequest(f"Invalid file format. Supported formats: {AUDIO_FORMATS}")
    data = await upload.read()
    if not data:
        raise InvalidRequest("Audio file is too short. Minimum audio length is 0.1 seconds.",
                             param="file", code="audio_too_short")
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    if not fields.get("model"):
        raise InvalidRequest("you must provide a model parameter", param="model")
    language = fields.get("language")
    if language is not None and not re.fullmatch(r"[a-z]{2}", language):
        raise InvalidRequest(f"Invalid language '{language}'. Language parameter must be "
                             "specified in ISO-639-1 format.", param="language",
                             code="invalid_language_format")
    if fields.get("response_format", "json") not in {"json", "text", "srt", "verbose_json",
                                                     "vtt"}:
        raise InvalidRequest("Invalid response_format.", param="response_format")
    return {"fields": fields, "filename": upload.filename, "file": data,
            "file_type": upload.content_type}


# -- WhatsApp Graph API -----------------------------------------------------------------

@dataclass
class FakeGraph:
    """``GET /{version}/{mediaId}`` and the media download URL it hands out."""

    token: str
    version: str = "v21.0"
    media: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/whatsapp_business/attachments/", self.download, methods=["GET"]),
            Route("/files/{name}", self.file, methods=["GET"]),
            Route("/{version}/{media_id}", self.metadata, methods=["GET"]),
        ])

    def _record(self, request: Request) -> None:
        self.requests.append({"path": request.url.path, "query": dict(request.query_params),
                              "authorization": request.headers.get("authorization")})

    def _denied(self, request: Request) -> JSONResponse | None:
        if request.headers.get("authorization") == f"Bearer {self.token}":
            return None
        return JSONResponse({"error": {"message": "Invalid OAuth access token - Cannot parse "
                                                  "access token", "type": "OAuthException",
                                       "code": 190, "fbtrace_id": "AxFakeTrace"}},
                            status_code=401)

    async def metadata(self, request: Request) -> Response:
        self._record(request)
        denied = self._denied(request)
        if denied is not None:
            return denied
        media_id = request.path_params["media_id"]
        if request.path_params["version"] != self.version or media_id not in self.media:
            return JSONResponse({"error": {
                "message": f"Unsupported get request. Object with ID '{media_id}' does not "
                           "exist, cannot be loaded due to missing permissions, or does not "
                           "support this operation. Please read the Graph API documentation "
                           "at https://developers.facebook.com/docs/graph-api",
                "type": "GraphMethodException", "code": 100, "error_subcode": 33,
                "fbtrace_id": "AxFakeTrace"}}, status_code=400)
        data, mime = self.media[media_id]
        return JSONResponse({
            "messaging_product": "whatsapp",
            "url": f"{self.url}/whatsapp_business/attachments/?mid={media_id}&ext=1700000000"
                   f"&hash=ATuFake",
            "mime_type": mime, "sha256": "0" * 64, "file_size": len(data), "id": media_id})

    async def download(self, request: Request) -> Response:
        self._record(request)
        denied = self._denied(request)
        if denied is not None:
            return denied
        media_id = request.query_params.get("mid", "")
        if media_id not in self.media:
            return Response(status_code=404)
        data, mime = self.media[media_id]
        return Response(data, media_type=mime)

    async def file(self, request: Request) -> Response:
        """Plain files for url mode; ``big`` streams without announcing its size."""
        self._record(request)
        name = request.path_params["name"]
        if name.startswith("big"):
            async def chunks() -> AsyncIterator[bytes]:
                for _ in range(30):
                    yield b"\0" * 65536

            return StreamingResponse(chunks(), media_type="application/octet-stream")
        if name not in self.media:
            return Response(b"not found", status_code=404, media_type="text/plain")
        data, mime = self.media[name]
        return Response(data, media_type=mime or None)


# -- real little files ---------------------------------------------------------------------

def wav_bytes(seconds: float = 0.2, rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * int(seconds * rate))
    return out.getvalue()


def png_bytes() -> bytes:
    """A valid 1x1 red PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\0\xff\0\0")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


def pdf_bytes(pages: int) -> bytes:
    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
