"""The fakes' server-sent events: a scripted reply cut into each provider's stream events.

Every event is checked against the vendor SDK's own stream types before it is
sent, so the client is tested against the real wire format, not our idea of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic.types
import openai.types.chat
from google.genai import types as genai
from pydantic import TypeAdapter

from tests.sdk.fakes import Recorded

SSE = list[tuple[str | None, str]]
_ANTHROPIC_EVENT: TypeAdapter[Any] = TypeAdapter(anthropic.types.RawMessageStreamEvent)


def pieces(text: str, size: int = 4) -> list[str]:
    """Text in small pieces, as models stream it."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def openai_events(body: dict[str, Any]) -> SSE:
    choice = body["choices"][0]
    message = choice["message"]
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"],
            "model": body["model"]}  # fmt: skip

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": p}) for p in pieces(message.get("content") or "") if p]
    for index, call in enumerate(message.get("tool_calls") or ()):
        head = {"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}}  # fmt: skip
        chunks.append(chunk({"tool_calls": [head]}))
        for part in pieces(call["function"]["arguments"], 5):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    chunks.append({**base, "choices": [], "usage": body["usage"]})
    for item in chunks:
        openai.types.chat.ChatCompletionChunk.model_validate(item)
    return [(None, json.dumps(item)) for item in chunks] + [(None, "[DONE]")]


def anthropic_events(body: dict[str, Any]) -> SSE:
    start = {**body, "content": [], "stop_reason": None,
             "usage": {"input_tokens": body["usage"]["input_tokens"], "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}})
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": p}} for p in pieces(block["text"])]
        else:
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {**block, "input": {}}})
            events += [{"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": p}}
                       for p in pieces(json.dumps(block["input"]), 5)]
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta",
                   "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": body["usage"]["output_tokens"]}})
    events.append({"type": "message_stop"})  # fmt: skip
    for event in events:
        _ANTHROPIC_EVENT.validate_python(event)
    return [(event["type"], json.dumps(event)) for event in events]


def gemini_events(body: dict[str, Any]) -> SSE:
    candidates = body.get("candidates") or []
    if not candidates or "content" not in candidates[0]:
        return [(None, json.dumps(body))]
    candidate = candidates[0]
    chunks: list[dict[str, Any]] = []
    for part in candidate["content"].get("parts") or ():
        if "text" in part:
            texts = pieces(part["text"])
            extra = {k: v for k, v in part.items() if k != "text"}
            chunks += [[{"text": t}] for t in texts[:-1]] + [[{"text": texts[-1], **extra}]]
        else:
            chunks.append([part])
    chunks = chunks or [[]]
    events = []
    for index, parts in enumerate(chunks):
        piece: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [piece], "modelVersion": body.get("modelVersion")}
        if index == len(chunks) - 1:
            piece["finishReason"] = candidate.get("finishReason")
            chunk["usageMetadata"] = body.get("usageMetadata")
        genai.GenerateContentResponse.model_validate(chunk)
        events.append((None, json.dumps(chunk)))
    return events


def openai_wants(request: Recorded) -> bool:
    return bool(request.body.get("stream"))


def gemini_wants(request: Recorded) -> bool:
    return ":streamGenerateContent" in request.path


STREAMS: dict[str, tuple[Callable[[Recorded], bool], Callable[[dict[str, Any]], SSE]]] = {
    "openai": (openai_wants, openai_events),
    "anthropic": (openai_wants, anthropic_events),
    "gemini": (gemini_wants, gemini_events),
}
