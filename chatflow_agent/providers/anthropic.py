"""Anthropic's messages API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.contracts import turn_tool_choice
from ..core.messages import AssistantMessage, Message, ToolCall, UserMessage
from ..core.output import FINAL_RESULT_TOOL
from ..core.usage import Usage
from ..settings import api_key, base_url
from .accumulate import AnthropicAccumulator
from .base import FinishReason, ModelReply, Provider

if TYPE_CHECKING:
    from ..core.contracts import AgentConfig

ANTHROPIC_VERSION = "2023-06-01"
# The messages API requires max_tokens; this is used when the agent sets none.
DEFAULT_MAX_TOKENS = 4096
_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


class AnthropicProvider(Provider):
    name = "anthropic"

    @classmethod
    def from_env(cls, **options: Any) -> AnthropicProvider:
        """Key and base URL from the environment; ``options`` as for Provider."""
        return cls(
            api_key=api_key("Anthropic", "ANTHROPIC_API_KEY"),
            base_url=base_url("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            **options,
        )

    def endpoint(self, agent: AgentConfig) -> str:
        root = self.base_url if self.base_url.endswith("/v1") else f"{self.base_url}/v1"
        return f"{root}/messages"

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key, "anthropic-version": ANTHROPIC_VERSION}

    def accumulator(self) -> AnthropicAccumulator:
        return AnthropicAccumulator()

    def request_body(self, agent: AgentConfig, messages: Sequence[Message]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": agent.model,
            "max_tokens": agent.max_output_tokens or DEFAULT_MAX_TOKENS,
            "messages": _messages(messages),
        }
        if agent.instructions:
            body["system"] = agent.instructions
        tools = [t.to_anthropic_tool() for t in agent.tools]
        if agent.output_schema is not None:
            # The final answer is a forced tool call; with other tools, any tool will do.
            tools.append(agent.output_schema.anthropic_tool())
            body["tool_choice"] = (
                {"type": "any"} if agent.tools else {"type": "tool", "name": FINAL_RESULT_TOOL}
            )
        choice = turn_tool_choice(agent, messages) if agent.tools else None
        if choice is not None:
            body["tool_choice"] = (
                {"type": {"required": "any"}.get(choice, choice)}
                if choice in ("auto", "required", "none")
                else {"type": "tool", "name": choice}
            )
        if tools:
            body["tools"] = tools
        if agent.temperature is not None:
            body["temperature"] = agent.temperature
        return body

    def parse_reply(self, data: Any) -> ModelReply:
        # An empty text block is refused in a request, so it is not kept for replay.
        blocks: list[dict[str, Any]] = [
            b for b in data["content"] if not (b.get("type") == "text" and not b.get("text"))
        ]
        texts = [b["text"] for b in blocks if b.get("type") == "text"]
        calls = tuple(
            ToolCall(b["id"], b["name"], b.get("input") or {})
            for b in blocks
            if b.get("type") == "tool_use"
        )
        message = AssistantMessage("".join(texts) or None, calls, provider=self.name, raw=blocks)
        finish = _FINISH.get(str(data.get("stop_reason")), "other")
        return ModelReply(message, finish, anthropic_usage(data.get("usage") or {}))


def anthropic_usage(usage: dict[str, Any]) -> Usage:
    """Cached prompt tokens are input tokens too; Anthropic reports them apart."""
    prompt = int(usage.get("input_tokens") or 0)
    prompt += int(usage.get("cache_creation_input_tokens") or 0)
    prompt += int(usage.get("cache_read_input_tokens") or 0)
    return Usage.of_request(prompt, int(usage.get("output_tokens") or 0))


def _messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            role, blocks = "user", [{"type": "text", "text": message.content}]
        elif isinstance(message, AssistantMessage):
            role, blocks = "assistant", _assistant_blocks(message)
        else:
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            if message.is_error:
                block["is_error"] = True
            role, blocks = "user", [block]
        # Roles must alternate: all results of one turn go in one user message.
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return wire


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    if message.provider == "anthropic" and isinstance(message.raw, list):
        return list(message.raw)
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
        for c in message.tool_calls
    )
    return blocks
