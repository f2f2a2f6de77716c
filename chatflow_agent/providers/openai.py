"""OpenAI's chat completions API."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.contracts import turn_tool_choice
from ..core.messages import AssistantMessage, Message, ToolCall, UserMessage
from ..core.usage import Usage
from ..settings import api_key, base_url
from .accumulate import OpenAIAccumulator
from .base import FinishReason, ModelReply, Provider

if TYPE_CHECKING:
    from ..core.contracts import AgentConfig

_REASONING_MODEL = re.compile(r"^(ft:)?o\d")
# The first reasoning models take neither "system" nor "developer" messages.
_NO_INSTRUCTION_ROLE = re.compile(r"^(ft:)?o1-(mini|preview)")
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


class OpenAIProvider(Provider):
    name = "openai"

    @classmethod
    def from_env(cls, **options: Any) -> OpenAIProvider:
        """Key and base URL from the environment; ``options`` as for Provider."""
        return cls(
            api_key=api_key("OpenAI", "OPENAI_API_KEY"),
            base_url=base_url("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            **options,
        )

    def endpoint(self, agent: AgentConfig) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"}

    def accumulator(self) -> OpenAIAccumulator:
        return OpenAIAccumulator()

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "stream": True, "stream_options": {"include_usage": True}}

    def request_body(self, agent: AgentConfig, messages: Sequence[Message]) -> dict[str, Any]:
        wire: list[dict[str, Any]] = []
        if agent.instructions:
            wire.append(_instructions(agent.model, agent.instructions))
        wire.extend(_message(m) for m in messages)
        body: dict[str, Any] = {"model": agent.model, "messages": wire}
        if agent.tools:
            body["tools"] = [t.to_openai_tool(strict=agent.strict_tools) for t in agent.tools]
            choice = turn_tool_choice(agent, messages)
            if choice in ("auto", "required", "none"):
                body["tool_choice"] = choice
            elif choice is not None:
                body["tool_choice"] = {"type": "function", "function": {"name": choice}}
        if agent.output_schema is not None:
            body["response_format"] = agent.output_schema.openai_response_format()
        if agent.temperature is not None:
            body["temperature"] = agent.temperature
        if agent.max_output_tokens is not None:
            body["max_completion_tokens"] = agent.max_output_tokens
        return body

    def parse_reply(self, data: Any) -> ModelReply:
        choice = data["choices"][0]
        message = choice["message"]
        calls = tuple(_tool_call(call) for call in message.get("tool_calls") or ())
        content = message.get("content") or message.get("refusal")
        finish = _FINISH.get(str(choice.get("finish_reason")), "other")
        if message.get("refusal"):
            finish = "content_filter"
        reply = AssistantMessage(content, calls, provider=self.name)
        return ModelReply(reply, finish, openai_usage(data.get("usage") or {}))


def openai_usage(usage: dict[str, Any]) -> Usage:
    total = usage.get("total_tokens")
    return Usage.of_request(
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        int(total) if total is not None else None,
    )


def _instructions(model: str, instructions: str) -> dict[str, Any]:
    if _NO_INSTRUCTION_ROLE.match(model):
        return {"role": "user", "content": instructions}
    # o-series models take instructions as "developer" messages.
    role = "developer" if _REASONING_MODEL.match(model) else "system"
    return {"role": role, "content": instructions}


def _tool_call(call: dict[str, Any]) -> ToolCall:
    function = call["function"]
    sent = function.get("arguments")
    raw = sent if isinstance(sent, str) else json.dumps(sent)
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        problem = f"The arguments were not a JSON object: {raw[:200]}"
        return ToolCall(
            call["id"], function["name"], {}, arguments_error=problem, raw_arguments=raw
        )
    return ToolCall(call["id"], function["name"], arguments)


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, AssistantMessage):
        wire: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            wire["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments_text(call)},
                }
                for call in message.tool_calls
            ]
        return wire
    # Chat completions has no error flag for tool output, so say it in the text.
    content = f"Error: {message.content}" if message.is_error else message.content
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}


def _arguments_text(call: ToolCall) -> str:
    # What the model sent, malformed or not: the model must see its own mistake.
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
