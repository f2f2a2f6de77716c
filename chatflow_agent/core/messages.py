"""The conversation history: user messages, assistant turns and tool results."""

from __future__ import annotations

import base64
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
    # The arguments text exactly as the model sent it, when it was not a JSON object,
    # so the history shows the model its own mistake rather than a tidied "{}".
    raw_arguments: str | None = None


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
        """The result of a call that returned ``value``, in a form every provider takes.

        Bytes become ``{"mime_type", "base64"}``; NaN and infinities become null
        (providers refuse them in JSON). A value that still cannot be written as
        JSON gives an error result, so the run goes on.
        """
        try:
            data = to_jsonable_python(
                _encode_bytes(value), bytes_mode="base64", inf_nan_mode="null"
            )
            text = json.dumps(data, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            problem = f"tool {name!r} returned a value that cannot be sent as JSON: {exc}"
            return cls(tool_call_id, name, problem, is_error=True)
        content = value if isinstance(value, str) else text
        return cls(tool_call_id, name, content, data=data)


def _encode_bytes(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return {"mime_type": sniff_mime_type(raw), "base64": base64.b64encode(raw).decode()}
    if isinstance(value, dict):
        return {key: _encode_bytes(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encode_bytes(item) for item in value]
    return value


_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
)


def sniff_mime_type(raw: bytes) -> str:
    """A MIME hint for bytes a tool returned: a few well-known signatures, then UTF-8 text."""
    for magic, mime in _MAGIC:
        if raw.startswith(magic):
            return mime
    if raw.startswith(b"RIFF") and raw[8:12] == b"WEBP":
        return "image/webp"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain; charset=utf-8"


Message: TypeAlias = Annotated[UserMessage | AssistantMessage | ToolResult, Discriminator("role")]
HISTORY = TypeAdapter(list[Message])
MESSAGE = TypeAdapter(Message)
