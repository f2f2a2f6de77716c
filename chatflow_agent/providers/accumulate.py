"""Streamed replies folded into each provider's non-streamed reply shape.

Each accumulator takes the decoded server-sent events of one model call and
builds the JSON the non-streaming endpoint would have answered, which the
provider's ``parse_reply`` then reads: a streamed turn is stored exactly as a
non-streamed one would be.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from ..errors import ProviderResponseError


class Accumulator(ABC):
    @abstractmethod
    def feed(self, event: str, data: Any) -> str:
        """Take one event; return the text it adds to the answer ("" if none)."""

    @abstractmethod
    def result(self) -> dict[str, Any]: ...


class OpenAIAccumulator(Accumulator):
    """``chat.completion.chunk`` deltas: content pieces and indexed tool-call pieces."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None

    def feed(self, event: str, data: Any) -> str:
        if data.get("usage"):
            self.usage = data["usage"]
        text = ""
        for choice in data.get("choices") or ():
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            self.refusal.append(delta.get("refusal") or "")
            for piece in delta.get("tool_calls") or ():
                call = self.calls.setdefault(
                    piece["index"], {"id": "", "type": "function",
                                     "function": {"name": "", "arguments": ""}},
                )  # fmt: skip
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish
        self.content.append(text)
        return text

    def result(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) or None,
            "refusal": "".join(self.refusal) or None,
        }
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        choice = {"index": 0, "message": message, "finish_reason": self.finish}
        return {"choices": [choice], "usage": self.usage or {}}


class AnthropicAccumulator(Accumulator):
    """``message_start``, content blocks with their deltas, ``message_delta``."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, list[str]] = {}
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] = {}

    def feed(self, event: str, data: Any) -> str:
        kind = data.get("type", event)
        if kind == "error":
            error = data.get("error") or {}
            raise ProviderResponseError(f"anthropic stream failed: {error.get('message', error)}")
        if kind == "message_start":
            self.usage.update(data["message"].get("usage") or {})
        elif kind == "content_block_start":
            self.blocks[data["index"]] = dict(data["content_block"])
        elif kind == "content_block_delta":
            return self._delta(data["index"], data["delta"])
        elif kind == "message_delta":
            self.stop_reason = data["delta"].get("stop_reason") or self.stop_reason
            self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        return ""

    def _delta(self, index: int, delta: dict[str, Any]) -> str:
        block = self.blocks[index]
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
            return str(delta["text"])
        if kind == "input_json_delta":
            self.partial_json.setdefault(index, []).append(delta["partial_json"])
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta["signature"]
        return ""

    def result(self) -> dict[str, Any]:
        content = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block.get("type") == "tool_use":
                text = "".join(self.partial_json.get(index, ()))
                block["input"] = json.loads(text) if text.strip() else {}
            content.append(block)
        return {"content": content, "stop_reason": self.stop_reason, "usage": self.usage}


class GeminiAccumulator(Accumulator):
    """``GenerateContentResponse`` chunks; consecutive text pieces become one part."""

    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []
        self.finish: str | None = None
        self.usage: dict[str, Any] = {}
        self.prompt_feedback: Any = None
        self.seen_candidate = False

    def feed(self, event: str, data: Any) -> str:
        self.usage = data.get("usageMetadata") or self.usage
        self.prompt_feedback = data.get("promptFeedback") or self.prompt_feedback
        text = ""
        for candidate in (data.get("candidates") or ())[:1]:
            self.seen_candidate = True
            self.finish = candidate.get("finishReason") or self.finish
            for part in (candidate.get("content") or {}).get("parts") or ():
                text += self._add(part)
        return text

    def _add(self, part: dict[str, Any]) -> str:
        last = self.parts[-1] if self.parts else None
        is_text = "text" in part and "functionCall" not in part
        if (
            is_text and last is not None and "text" in last
            and bool(last.get("thought")) == bool(part.get("thought"))
            and "thoughtSignature" not in last
        ):  # fmt: skip
            last["text"] += part["text"]
            if "thoughtSignature" in part:
                last["thoughtSignature"] = part["thoughtSignature"]
        else:
            self.parts.append(dict(part))
        return str(part["text"]) if is_text and not part.get("thought") else ""

    def result(self) -> dict[str, Any]:
        data: dict[str, Any] = {"usageMetadata": self.usage}
        if self.prompt_feedback is not None:
            data["promptFeedback"] = self.prompt_feedback
        if self.seen_candidate:
            candidate: dict[str, Any] = {"finishReason": self.finish or "STOP"}
            if self.parts:
                candidate["content"] = {"role": "model", "parts": self.parts}
            data["candidates"] = [candidate]
        return data
