"""The conversation history: user messages, assistant turns and tool results."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Discriminator, TypeAdapter
from pydantic_core import to_jsonable_python


@dataclass(frozen=True)
class UserMessage:
    content: str
    role: Literal["user"] = field(default="user", repr=False)


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run one tool."""

    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the provider sent arguments that were not a JSON object.
    arguments_error: str | None = None


@dataclass(frozen=True)
class AssistantMessage:
    """One model turn: text, tool calls, or both.

    ``raw`` keeps the provider's own content (Gemini parts, Anthropic blocks) so
    the same provider gets it back verbatim, opaque signatures and all.
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    provider: str | None = None
    raw: Any = field(default=None, repr=False)
    role: Literal["assistant"] = field(default="assistant", repr=False)


@dataclass(frozen=True)
class ToolResult:
    """What a tool call gave back, as the model will read it.

    ``data`` is the JSON-able return value, for providers that take structured
    results (Gemini's ``functionResponse``); ``content`` is its text form.
    """

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    data: Any = field(default=None, repr=False, compare=False)
    role: Literal["tool"] = field(default="tool", repr=False)

    @classmethod
    def from_value(cls, tool_call_id: str, name: str, value: Any) -> ToolResult:
        data = to_jsonable_python(value, fallback=repr)
        content = value if isinstance(value, str) else json.dumps(data, ensure_ascii=False)
        return cls(tool_call_id, name, content, data=data)


Message: TypeAlias = Annotated[UserMessage | AssistantMessage | ToolResult, Discriminator("role")]
HISTORY = TypeAdapter(list[Message])
MESSAGE = TypeAdapter(Message)
