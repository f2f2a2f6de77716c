"""A saved test case's mocked answers, given through an :class:`Outbound` that sends nothing.

Only test runs use it (``handlers.registry.mocking``): a mocked block runs its own executor,
the same code as a real run, with this Outbound in place of the real one. So its answer is
decoded, written to the block's variables, checked by its conditions and shown in its debug
event exactly as an upstream's answer would be; only the network is left out. Which answer
is given is set per block, in a context variable, by whoever runs the block.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Collection
from contextvars import ContextVar, Token
from typing import Any

from ..egress import EgressPolicy
from ..errors import ErrorCode, ToolFailure
from ..outbound import MAX_REDIRECTS, Outbound, Reply

Answer = Callable[[str, str], Reply]  # (method, url) -> the reply; raises ToolFailure
MEDIA_URL = "https://media.mock.invalid/download"  # where a mocked Graph API points
_ANSWER: ContextVar[Answer | None] = ContextVar("chatflow_mock_answer", default=None)


def answering(answer: Answer) -> Token[Answer | None]:
    """Until :func:`done`, the MockOutbound gives ``answer`` (one block's run)."""
    return _ANSWER.set(answer)


def done(token: Token[Answer | None]) -> None:
    _ANSWER.reset(token)


class MockOutbound(Outbound):
    """An Outbound whose every request is answered by the current mock; nothing is sent."""

    def __init__(self) -> None:
        super().__init__(EgressPolicy())  # its session is never made: exchange never sends

    async def exchange(self, method: str, url: str, *, headers: dict[str, str],
                       content: str | bytes | None, timeout_s: float,
                       max_bytes: int | None = None, max_redirects: int = MAX_REDIRECTS,
                       secret_headers: Collection[str] = (), traced: bool = True) -> Reply:
        answer = _ANSWER.get()
        if answer is None:  # a block ran here without its mock: refuse, never send
            raise ErrorCode.MOCK_INVALID.failure(block=f"{method} {url}",
                                                 cause="nenhum mock para este bloco")
        reply = answer(method, url)
        cap = self.max_body_bytes if max_bytes is None else max_bytes
        if len(reply.body) > cap:
            raise ErrorCode.HTTP_RESPONSE_TOO_LARGE.failure(what=f"{method} {url}", max_bytes=cap)
        return reply


def answer_for(block_type: str, mode: str | None, mock: dict[str, Any]) -> Answer:
    """The replies ``mock`` gives a block of ``block_type`` (fetchMedia: its ``mode``)."""
    if "error" in mock:
        failure = ToolFailure(str(mock["error"].get("code")), str(mock["error"].get("message")))

        def fail(_method: str, _url: str) -> Reply:
            raise failure
        return fail
    if block_type == "callAI":
        return _ai(mock)
    if block_type == "fetchMedia":
        return _media(mock, whatsapp=mode == "whatsapp")
    return _http(mock)


def _fixed(reply: Reply) -> Answer:
    return lambda _method, _url: reply


def _http(mock: dict[str, Any]) -> Answer:
    headers = {str(k): str(v) for k, v in (mock.get("headers") or {}).items()}
    stated = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    body = mock.get("body")
    if body is None:
        data, kind = b"", ""
    elif isinstance(body, str):
        data, kind = body.encode(), "text/plain; charset=utf-8"
    else:
        data, kind = json.dumps(body, ensure_ascii=False).encode(), "application/json"
    return _fixed(Reply(int(mock["status"]), data, stated or kind, headers))


def _ai(mock: dict[str, Any]) -> Answer:
    result = mock.get("result")
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    chat = json.dumps({"object": "chat.completion", "usage": usage, "choices": [
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": text}}]}).encode()
    transcript = json.dumps({"text": text}).encode()

    def answer(_method: str, url: str) -> Reply:
        body = transcript if url.split("?", 1)[0].endswith("/audio/transcriptions") else chat
        return Reply(200, body, "application/json", {})
    return answer


def _media(mock: dict[str, Any], *, whatsapp: bool) -> Answer:
    mime = str(mock.get("mimeType") or "application/octet-stream")
    try:
        data = base64.b64decode("".join(str(mock.get("base64") or "").split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ErrorCode.MOCK_INVALID.failure(block="fetchMedia", cause="base64 inválido") from exc
    meta = json.dumps({"url": MEDIA_URL, "mime_type": mime, "file_size": len(data)}).encode()

    def answer(_method: str, url: str) -> Reply:
        if whatsapp and url != MEDIA_URL:  # the Graph API's lookup of the mediaId
            return Reply(200, meta, "application/json", {})
        return Reply(200, data, mime, {"Content-Type": mime})
    return answer
