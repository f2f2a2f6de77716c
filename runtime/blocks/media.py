"""fetchMedia: download WhatsApp media (by mediaId) or any URL into a base64 variable.

``mode: "whatsapp"`` resolves the mediaId through the Graph API, as Meta documents it:
``GET {graph_base_url}/{graph_version}/{mediaId}`` answers ``{"url", "mime_type", "file_size",
...}``, then ``GET url`` returns the bytes; both requests carry the bearer token. The token is
the block's ``authHeader`` (interpolated) when it renders non-empty, else the command's router
context field ``router.accessToken`` (the WhatsApp Cloud API access token of the number the
contact talks to). ``mode: "url"`` is one GET of the URL, with ``authHeader`` when given.

``mediaIdVariable`` and ``urlVariable`` name a variable (paths and ``router.x`` work); a
field holding ``{{...}}`` is rendered instead, and a ``urlVariable`` that is itself an
``http(s)://`` URL is used as it is.

``authHeader`` is the value of the ``Authorization`` header: a bare token is sent as
``Bearer <token>``; a value that already names its scheme (``Bearer x``, ``Basic x``) is sent
as it is. Redirects are not followed (like httpCall).

The MIME type written to ``mimeTypeVariable`` is the one the source states (the Graph
``mime_type``, else the download's ``Content-Type``), without parameters; when the source
states none, or only ``application/octet-stream``, it is sniffed from the bytes with
``filetype``: a small, dependency-free, widely used library whose signature table covers
what WhatsApp sends (ogg/opus, mp3, m4a/mp4, amr, jpeg, png, webp, pdf). Keeping magic
numbers by hand would mean maintaining that table ourselves.

The body is read through ``Outbound.send`` (runtime/outbound.py), which stops reading past the size cap
(``media_max_bytes``, 25 MB by default) and this block reports ``media_too_large``. A Graph
``file_size`` above the cap fails before the download. The whole block is bounded by the
tool's remaining deadline; each network phase also by ``http_timeout_ms``.

The bearer token never reaches a debug event, the trace or an error message: messages are
scrubbed of it, and debug detail carries only the URL, status, MIME type and size.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import filetype

from chatflow.schemas.definition import FetchMediaBlock

from ..errors import ErrorCode, ToolFailure
from ..interpolation import lookup, to_text
from ..limits import Limits
from ..outbound import Outbound
from ..outcome import BlockOutcome
from ..state import ExecState
from .common import remaining_ms, text_of

DEFAULT_MAX_BYTES = 25 * 1024 * 1024
GRAPH_BASE_URL = "https://graph.facebook.com"
GRAPH_VERSION = "v21.0"
ROUTER_TOKEN_FIELD = "accessToken"
GENERIC_MIME = "application/octet-stream"
_META_MAX_BYTES = 64 * 1024
_MASK = "***"
# Outbound's failures as fetchMedia names them; any other is media_unreachable.
_RELAYED: dict[str, ErrorCode] = {
            ErrorCode.HTTP_TIMEOUT: ErrorCode.MEDIA_TIMEOUT,
            ErrorCode.HTTP_INVALID_URL: ErrorCode.MEDIA_INVALID_URL,
            ErrorCode.EGRESS_DENIED: ErrorCode.EGRESS_DENIED,
            ErrorCode.EXECUTION_CANCELLED: ErrorCode.EXECUTION_CANCELLED}


@dataclass(frozen=True, slots=True)
class MediaConfig:
    graph_base_url: str = GRAPH_BASE_URL
    graph_version: str = GRAPH_VERSION
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout_ms: int = 10_000


def variable_value(name: str, state: ExecState, max_chars: int) -> Any:
    """What a ``...Variable`` field names: a variable (``audio``, ``msg.media.id``,
    ``router.x``), or, when the field holds ``{{...}}``, the rendered template."""
    if "{{" in name:
        return text_of(name, state, max_chars)
    return lookup(name.strip(), state.variables, state.context)


def authorization(value: str) -> str:
    """The Authorization header for ``value``: a bare token becomes a bearer token."""
    value = value.strip()
    return value if " " in value else f"Bearer {value}"


def scrub(text: str, *secrets: str) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, _MASK)
    return text


def media_type(content_type: str | None) -> str:
    """``audio/ogg; codecs=opus`` → ``audio/ogg``; empty when there is none."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def sniff_mime(data: bytes) -> str:
    guessed: str | None = filetype.guess_mime(data[:8192])
    return guessed or GENERIC_MIME


def best_mime(stated: str | None, data: bytes) -> str:
    mime = media_type(stated)
    return mime if mime and mime != GENERIC_MIME else sniff_mime(data)


def error_message_of(body: bytes) -> str:
    """The message of an API error body: Graph and OpenAI share ``{"error": {"message"}}``."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:200].decode("utf-8", errors="replace").strip()
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return body[:200].decode("utf-8", errors="replace").strip()


def size_text(n: int) -> str:
    """``25 MB (26214400 bytes)``; below 1 MB just ``1000 bytes``."""
    mb = 1024 * 1024
    return f"{n / mb:g} MB ({n} bytes)" if n >= mb else f"{n} bytes"


class MediaFetcher:
    """The fetchMedia executor; ``run`` is what the BlockRunner calls."""

    def __init__(self, client: Outbound, config: MediaConfig, limits: Limits) -> None:
        self.client = client
        self.config = config
        self.limits = limits

    async def run(self, state: ExecState, block: FetchMediaBlock, now_ms: int) -> BlockOutcome:
        started = time.perf_counter()
        debug: dict[str, Any] = {"method": "GET"}
        budget_ms = remaining_ms(state, now_ms)
        token = ""
        try:
            token = self._token(state, block)
            async with asyncio.timeout(budget_ms / 1000):
                data, mime = await self._fetch(state, block, token, budget_ms, debug)
        except TimeoutError:
            failure = ErrorCode.MEDIA_TIMEOUT.failure("prazo da tool", seconds=budget_ms / 1000)
        except ToolFailure as exc:
            failure = exc.reworded(scrub(exc.message, token, _bare(token)))
        else:
            debug.pop(_RETRY_AFTER, None)
            debug["result"] = {"mimeType": mime, "bytes": len(data)}
            writes = {block.base64Variable: base64.b64encode(data).decode("ascii"),
                      block.mimeTypeVariable: mime}
            return BlockOutcome(writes=writes, debug=debug, duration_ms=_ms(started))
        writes = {block.base64Variable: "", block.mimeTypeVariable: ""}
        retry_after = debug.pop(_RETRY_AFTER, None)
        return BlockOutcome(writes=writes, error=failure, debug=debug, duration_ms=_ms(started),
                            retry_after=retry_after)

    def _token(self, state: ExecState, block: FetchMediaBlock) -> str:
        """The Authorization header value, or "" for an anonymous url-mode GET."""
        cap = self.limits.max_rendered_chars
        explicit = text_of(block.authHeader, state, cap).strip() if block.authHeader else ""
        if explicit:
            return authorization(explicit)
        if block.mode == "url":
            return ""
        router = state.context.get("router") or {}
        token = to_text(router.get(ROUTER_TOKEN_FIELD)) if isinstance(router, dict) else ""
        if not token.strip():
            raise ErrorCode.MEDIA_TOKEN_MISSING.failure(field=ROUTER_TOKEN_FIELD)
        return authorization(token)

    async def _fetch(self, state: ExecState, block: FetchMediaBlock, token: str, budget_ms: int,
                     debug: dict[str, Any]) -> tuple[bytes, str]:
        cap = self.limits.max_rendered_chars
        timeout_s = min(self.config.timeout_ms, budget_ms) / 1000
        headers = {"Authorization": token} if token else {}
        stated: str | None = None
        if block.mode == "whatsapp":
            media_id = to_text(variable_value(block.mediaIdVariable, state, cap)).strip()
            if not media_id:
                raise ErrorCode.MEDIA_ID_MISSING.failure(name=block.mediaIdVariable)
            url, stated = await self._resolve(media_id, headers, timeout_s, debug)
            # Graph API and its CDN: a third party, which gets no trace context.
            data, content_type = await self._download(url, headers, timeout_s, debug, False)
            return data, best_mime(stated or content_type, data)
        else:
            url = block.urlVariable.strip()
            if not url.startswith(("http://", "https://")):
                url = to_text(variable_value(block.urlVariable, state, cap)).strip()
            if not url:
                raise ErrorCode.MEDIA_URL_MISSING.failure(name=block.urlVariable)
            debug["url"] = url
        data, content_type = await self._download(url, headers, timeout_s, debug)
        return data, best_mime(stated or content_type, data)

    async def _resolve(self, media_id: str, headers: dict[str, str], timeout_s: float,
                       debug: dict[str, Any]) -> tuple[str, str | None]:
        base = self.config.graph_base_url.rstrip("/")
        meta_url = f"{base}/{self.config.graph_version.strip('/')}/{quote(media_id, safe='')}"
        debug["url"] = meta_url
        status, body, _ = await self._get(meta_url, headers, timeout_s, _META_MAX_BYTES, debug,
                                          False)
        debug["status"] = status
        if status >= 400:
            raise ErrorCode.MEDIA_HTTP_STATUS.failure(request=f"Graph API GET {meta_url}",
                                                      status=status, cause=error_message_of(body))
        try:
            meta = json.loads(body)
            url = meta["url"]
            if not isinstance(url, str) or not url:
                raise ValueError("url")
        except (ValueError, KeyError, TypeError) as exc:
            raise ErrorCode.MEDIA_BAD_RESPONSE.failure(url=meta_url, media_id=media_id) from exc
        size = meta.get("file_size")
        if isinstance(size, int) and size > self.config.max_bytes:
            raise self._too_large(f"mediaId={media_id} tem {size} bytes")
        mime = meta.get("mime_type")
        return url, mime if isinstance(mime, str) else None

    async def _download(self, url: str, headers: dict[str, str], timeout_s: float,
                        debug: dict[str, Any], traced: bool = True) -> tuple[bytes, str]:
        status, data, content_type = await self._get(url, headers, timeout_s,
                                                     self.config.max_bytes, debug, traced)
        debug["status"] = status
        if status >= 400:
            raise ErrorCode.MEDIA_HTTP_STATUS.failure(request=f"GET {_no_query(url)}",
                                                      status=status, cause=error_message_of(data))
        return data, content_type

    async def _get(self, url: str, headers: dict[str, str], timeout_s: float,
                   max_bytes: int, debug: dict[str, Any],
                   traced: bool = True) -> tuple[int, bytes, str]:
        try:
            reply = await self.client.exchange("GET", url, headers=headers, content=None,
                                               timeout_s=timeout_s, max_bytes=max_bytes,
                                               traced=traced)
            if reply.status >= 400 and "retry-after" in reply.headers:
                debug[_RETRY_AFTER] = reply.headers["retry-after"]  # for a retry policy
            return reply.status, reply.body, reply.content_type
        except ToolFailure as exc:
            if exc.code == ErrorCode.HTTP_RESPONSE_TOO_LARGE:
                raise self._too_large(f"GET {_no_query(url)}") from exc
            code = _RELAYED.get(exc.code, ErrorCode.MEDIA_UNREACHABLE)
            raise code.with_message(f"fetchMedia: {exc.message}") from exc

    def _too_large(self, what: str) -> ToolFailure:
        cap = self.config.max_bytes
        return ErrorCode.MEDIA_TOO_LARGE.failure(cap=size_text(cap), what=what)


_RETRY_AFTER = "_retryAfter"  # a failed response's Retry-After, until run() takes it out


def _bare(header: str) -> str:
    """The token inside ``Bearer <token>``, to scrub it wherever it shows up alone."""
    return header.split(" ", 1)[1] if " " in header else header


def _no_query(url: str) -> str:
    """A URL for messages: the query of a signed media URL is left out."""
    return url.split("?", 1)[0]


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
