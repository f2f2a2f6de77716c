"""OpenAI's chat completions API."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.messages import AssistantMessage, Message, ToolCall, UserMessage
from .base import Provider
from .config import api_key, base_url

if TYPE_CHECKING:
    from ..core.contracts import AgentConfig

_REASONING_MODEL = re.compile(r"^o\d")


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

    def request_body(self, agent: AgentConfig, messages: Sequence[Message]) -> dict[str, Any]:
        wire: list[dict[str, Any]] = []
        if agent.instructions:
            # o-series models take instructions as "developer" messages.
            role = "developer" if _REASONING_MODEL.match(agent.model) else "system"
            wire.append({"role": role, "content": agent.instructions})
        wire.extend(_message(m) for m in messages)
        body: dict[str, Any] = {"model": agent.model, "messages": wire}
        if agent.tools:
            body["tools"] = [t.to_openai_tool(strict=agent.strict_tools) for t in agent.tools]
        if agent.temperature is not None:
            body["temperature"] = agent.temperature
        if agent.max_output_tokens is not None:
            body["max_completion_tokens"] = agent.max_output_tokens
        return body

    def parse_reply(self, data: Any) -> AssistantMessage:
        message = data["choices"][0]["message"]
        calls = tuple(_tool_call(call) for call in message.get("tool_calls") or ())
        content = message.get("content") or message.get("refusal")
        return AssistantMessage(content, calls, provider=self.name)


def _tool_call(call: dict[str, Any]) -> ToolCall:
    function = call["function"]
    raw = function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        problem = f"The arguments were not a JSON object: {raw[:200]}"
        return ToolCall(call["id"], function["name"], {}, arguments_error=problem)
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
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ]
        return wire
    # Chat completions has no error flag for tool output, so say it in the text.
    content = f"Error: {message.content}" if message.is_error else message.content
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
