"""Gemini's generateContent REST API."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.contracts import turn_tool_choice
from ..core.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from ..core.usage import Usage
from ..settings import api_key, base_url
from .accumulate import GeminiAccumulator
from .base import FinishReason, ModelReply, Provider

if TYPE_CHECKING:
    from ..core.contracts import AgentConfig

_VERSIONED = re.compile(r"/v1(alpha|beta)?\d*$")
_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}


class GeminiProvider(Provider):
    name = "gemini"
    gemini_dialect = True

    @classmethod
    def from_env(cls, **options: Any) -> GeminiProvider:
        """Key and base URL from the environment; ``options`` as for Provider."""
        return cls(
            api_key=api_key("Gemini", "GEMINI_API_KEY", "GOOGLE_API_KEY"),
            base_url=base_url("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
            **options,
        )

    def endpoint(self, agent: AgentConfig) -> str:
        root = self.base_url if _VERSIONED.search(self.base_url) else f"{self.base_url}/v1beta"
        model = agent.model.removeprefix("models/")
        return f"{root}/models/{model}:generateContent"

    def stream_endpoint(self, agent: AgentConfig) -> str:
        return self.endpoint(agent).replace(":generateContent", ":streamGenerateContent?alt=sse")

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return body  # the endpoint, not the body, asks Gemini to stream

    def accumulator(self) -> GeminiAccumulator:
        return GeminiAccumulator()

    def headers(self) -> dict[str, str]:
        # The key goes in a header, never the query string, so URLs are safe to log.
        return {"x-goog-api-key": self._api_key}

    def request_body(self, agent: AgentConfig, messages: Sequence[Message]) -> dict[str, Any]:
        body: dict[str, Any] = {"contents": _contents(messages)}
        if agent.instructions:
            body["systemInstruction"] = {"parts": [{"text": agent.instructions}]}
        output = agent.output_schema
        if agent.tools:
            declarations = [t.to_gemini_declaration() for t in agent.tools]
            if output is not None:
                # Gemini refuses a JSON response schema together with function calling:
                # with tools, the answer is a final_result call, and some call is required.
                declarations.append(output.gemini_function())
                body["toolConfig"] = {"functionCallingConfig": {"mode": "ANY"}}
            body["tools"] = [{"functionDeclarations": declarations}]
            choice = turn_tool_choice(agent, messages)
            if choice is not None:
                mode = {"auto": "AUTO", "required": "ANY", "none": "NONE"}.get(choice, "ANY")
                calling: dict[str, Any] = {"mode": mode}
                if mode == "ANY" and choice != "required":
                    calling["allowedFunctionNames"] = [choice]
                body["toolConfig"] = {"functionCallingConfig": calling}
        config: dict[str, Any] = {}
        if agent.temperature is not None:
            config["temperature"] = agent.temperature
        if agent.max_output_tokens is not None:
            config["maxOutputTokens"] = agent.max_output_tokens
        if output is not None and not agent.tools:
            config["responseMimeType"] = "application/json"
            config["responseSchema"] = output.gemini
        if config:
            body["generationConfig"] = config
        return body

    def parse_reply(self, data: Any) -> ModelReply:
        usage = gemini_usage(data.get("usageMetadata") or {})
        candidates = data.get("candidates") or []
        if not candidates:
            # The prompt itself was blocked: report it, there is no turn to keep.
            empty = AssistantMessage(None, provider=self.name, raw=[])
            return ModelReply(empty, "content_filter", usage)
        candidate = candidates[0]
        parts: list[dict[str, Any]] = (candidate.get("content") or {}).get("parts") or []
        texts = [p["text"] for p in parts if "text" in p and not p.get("thought")]
        calls = tuple(
            ToolCall(
                id=p["functionCall"].get("id") or f"gemini_{uuid.uuid4().hex[:12]}",
                name=p["functionCall"]["name"],
                arguments=p["functionCall"].get("args") or {},
            )
            for p in parts
            if "functionCall" in p
        )
        message = AssistantMessage("".join(texts) or None, calls, provider=self.name, raw=parts)
        finish = _FINISH.get(str(candidate.get("finishReason") or "STOP"), "other")
        if calls and finish == "stop":
            finish = "tool_calls"
        return ModelReply(message, finish, usage)


def gemini_usage(metadata: dict[str, Any]) -> Usage:
    """``usageMetadata``: thinking tokens are output the model was billed for."""
    prompt = int(metadata.get("promptTokenCount") or 0)
    prompt += int(metadata.get("toolUsePromptTokenCount") or 0)
    output = int(metadata.get("candidatesTokenCount") or 0)
    output += int(metadata.get("thoughtsTokenCount") or 0)
    total = metadata.get("totalTokenCount")
    return Usage.of_request(prompt, output, int(total) if total is not None else None)


def _contents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    gemini_ids: set[str] = set()
    parts: list[dict[str, Any]]
    for message in messages:
        if isinstance(message, UserMessage):
            role, parts = "user", [{"text": message.content}]
        elif isinstance(message, AssistantMessage):
            role, parts = "model", _model_parts(message)
            gemini_ids.update(str(p["functionCall"]["id"]) for p in parts if _has_call_id(p))
        else:
            role, parts = "user", [_function_response(message, gemini_ids)]
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return contents


def _has_call_id(part: dict[str, Any]) -> bool:
    return isinstance(part.get("functionCall"), dict) and bool(part["functionCall"].get("id"))


def _model_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    if message.provider == "gemini" and isinstance(message.raw, list):
        # Gemini 2.5 signs its function calls (thoughtSignature); echo parts verbatim.
        return list(message.raw)
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"text": message.content})
    parts.extend(
        {"functionCall": {"name": c.name, "args": c.arguments}} for c in message.tool_calls
    )
    return parts


def _function_response(result: ToolResult, gemini_ids: set[str]) -> dict[str, Any]:
    if result.is_error:
        response: dict[str, Any] = {"error": result.content}
    elif isinstance(result.data, dict):
        response = result.data
    else:
        response = {"result": result.data if result.data is not None else result.content}
    payload: dict[str, Any] = {"name": result.name, "response": response}
    if result.tool_call_id in gemini_ids:
        payload["id"] = result.tool_call_id
    return {"functionResponse": payload}
