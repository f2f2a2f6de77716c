"""Each provider's wire format, read and written from the model's side.

The test models sit where the vendor's server would: they read the request body the
real provider encoder built, and answer with a body (or server-sent events) the
real decoder parses. So a test run goes through the same encoding and decoding a
real call does; only the network is gone.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from ..core.output import FINAL_RESULT_TOOL


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as the provider declared it; ``parameters`` in that provider's schema dialect."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class AgentInfo:
    """What a request tells the model besides the messages, read back from the wire."""

    family: str
    model: str
    instructions: str | None
    tools: tuple[ToolDefinition, ...]
    # "auto", "required", "none", a tool's name, or None (left to the provider).
    tool_choice: str | None
    # The final answer's schema: as a tool to call (final_result), or as a JSON text.
    output_tool: ToolDefinition | None = None
    output_schema: dict[str, Any] | None = None
    stream: bool = False


@dataclass(frozen=True)
class Call:
    """A tool call the test model makes; ``id`` is made up when left out."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class ModelTurn:
    """One reply of a test model: text, tool calls, or both."""

    text: str | None = None
    calls: tuple[Call, ...] = ()


Usage = tuple[int, int]  # (input tokens, output tokens)
Pieces = AsyncIterator["str | Call"]


def _call_id(family: str, call: Call) -> str:
    if call.id:
        return call.id
    prefix = {"openai": "call_", "anthropic": "toolu_"}.get(family, "gemini_")
    return f"{prefix}{uuid.uuid4().hex[:16]}"


# ----------------------------------------------------------------- requests


def read_request(family: str, model: str, url: str, body: dict[str, Any]) -> tuple[AgentInfo, list[Message]]:
    """The conversation and settings a provider's request body carries."""
    return _READERS[family](model, url, body)


def _split_output(
    family: str, tools: list[ToolDefinition]
) -> tuple[tuple[ToolDefinition, ...], ToolDefinition | None]:
    output = next((t for t in tools if t.name == FINAL_RESULT_TOOL), None)
    return tuple(t for t in tools if t is not output), output


def _read_openai(model: str, url: str, body: dict[str, Any]) -> tuple[AgentInfo, list[Message]]:
    instructions: list[str] = []
    messages: list[Message] = []
    names: dict[str, str] = {}
    for wire in body["messages"]:
        role = wire["role"]
        if role in ("system", "developer"):
            instructions.append(str(wire["content"]))
        elif role == "user":
            messages.append(UserMessage(str(wire["content"])))
        elif role == "assistant":
            calls = tuple(
                ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                for c in wire.get("tool_calls") or ()
            )
            names.update((c.id, c.name) for c in calls)
            messages.append(AssistantMessage(wire.get("content"), calls))
        else:
            content = str(wire["content"])
            error = content.startswith("Error: ")
            messages.append(
                ToolResult(
                    wire["tool_call_id"],
                    names.get(wire["tool_call_id"], ""),
                    content.removeprefix("Error: "),
                    is_error=error,
                )
            )
    tools = [
        ToolDefinition(
            t["function"]["name"], t["function"].get("description", ""), t["function"].get("parameters", {})
        )
        for t in body.get("tools", ())
    ]
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        choice = choice["function"]["name"]
    output_schema = None
    if (body.get("response_format") or {}).get("type") == "json_schema":
        output_schema = body["response_format"]["json_schema"]["schema"]
    info = AgentInfo(
        "openai",
        model,
        "\n".join(instructions) or None,
        tuple(tools),
        choice,
        None,
        output_schema,
        bool(body.get("stream")),
    )
    return info, messages


def _read_anthropic(model: str, url: str, body: dict[str, Any]) -> tuple[AgentInfo, list[Message]]:
    messages: list[Message] = []
    names: dict[str, str] = {}
    for wire in body["messages"]:
        blocks = wire["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if wire["role"] == "assistant":
            text = "".join(b["text"] for b in blocks if b["type"] == "text") or None
            calls = tuple(ToolCall(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use")
            names.update((c.id, c.name) for c in calls)
            messages.append(AssistantMessage(text, calls))
            continue
        for block in blocks:
            if block["type"] == "text":
                messages.append(UserMessage(block["text"]))
            elif block["type"] == "tool_result":
                content = block.get("content", "")
                if isinstance(content, list):
                    content = "".join(part.get("text", "") for part in content)
                messages.append(
                    ToolResult(
                        block["tool_use_id"],
                        names.get(block["tool_use_id"], ""),
                        str(content),
                        is_error=bool(block.get("is_error")),
                    )
                )
    declared = [
        ToolDefinition(t["name"], t.get("description", ""), t["input_schema"]) for t in body.get("tools", ())
    ]
    tools, output = _split_output("anthropic", declared)
    choice = body.get("tool_choice")
    neutral = None
    if isinstance(choice, dict):
        neutral = (
            choice["name"]
            if choice["type"] == "tool"
            else {"any": "required"}.get(choice["type"], choice["type"])
        )
    info = AgentInfo(
        "anthropic", model, body.get("system"), tools, neutral, output, None, bool(body.get("stream"))
    )
    return info, messages


def _read_gemini(model: str, url: str, body: dict[str, Any]) -> tuple[AgentInfo, list[Message]]:
    messages: list[Message] = []
    for content in body["contents"]:
        parts = content["parts"]
        if content["role"] == "model":
            text = "".join(p["text"] for p in parts if "text" in p) or None
            calls = tuple(
                ToolCall(
                    p["functionCall"].get("id") or p["functionCall"]["name"],
                    p["functionCall"]["name"],
                    p["functionCall"].get("args") or {},
                )
                for p in parts
                if "functionCall" in p
            )
            messages.append(AssistantMessage(text, calls))
            continue
        for part in parts:
            if "text" in part:
                messages.append(UserMessage(part["text"]))
            elif "functionResponse" in part:
                messages.append(_gemini_result(part["functionResponse"]))
    system = body.get("systemInstruction")
    instructions = "".join(p.get("text", "") for p in system["parts"]) if system else None
    declarations = [d for t in body.get("tools", ()) for d in t.get("functionDeclarations", ())]
    declared = [
        ToolDefinition(d["name"], d.get("description", ""), d.get("parameters", {})) for d in declarations
    ]
    tools, output = _split_output("gemini", declared)
    calling = (body.get("toolConfig") or {}).get("functionCallingConfig")
    choice = None
    if calling:
        allowed = calling.get("allowedFunctionNames") or []
        mode = str(calling.get("mode", "AUTO"))
        choice = allowed[0] if len(allowed) == 1 else {"ANY": "required"}.get(mode, mode.lower())
    config = body.get("generationConfig") or {}
    info = AgentInfo(
        "gemini",
        model,
        instructions,
        tools,
        choice,
        output,
        config.get("responseSchema"),
        ":streamGenerateContent" in url,
    )
    return info, messages


def _gemini_result(response: dict[str, Any]) -> ToolResult:
    payload = response.get("response") or {}
    name = str(response["name"])
    if set(payload) == {"error"}:
        return ToolResult(response.get("id") or name, name, str(payload["error"]), is_error=True)
    value = payload["result"] if set(payload) == {"result"} else payload
    text = value if isinstance(value, str) else json.dumps(value)
    return ToolResult(response.get("id") or name, name, text, data=value)


_READERS: dict[str, Callable[[str, str, dict[str, Any]], tuple[AgentInfo, list[Message]]]] = {
    "openai": _read_openai,
    "anthropic": _read_anthropic,
    "gemini": _read_gemini,
}


# ------------------------------------------------------------------ replies


def reply_body(family: str, model: str, turn: ModelTurn, usage: Usage) -> dict[str, Any]:
    """A whole (not streamed) reply body in the provider's format."""
    calls = [(c, _call_id(family, c)) for c in turn.calls]
    prompt, output = usage
    if family == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c, i in calls
            ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output},
        }
    if family == "anthropic":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
        blocks += [{"type": "tool_use", "id": i, "name": c.name, "input": c.arguments} for c, i in calls]
        return {
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_sequence": None,
            "stop_reason": "tool_use" if calls else "end_turn",
            "usage": {"input_tokens": prompt, "output_tokens": output},
        }
    parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
    parts += [{"functionCall": {"id": i, "name": c.name, "args": c.arguments}} for c, i in calls]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        },
        "modelVersion": model,
    }


async def reply_events(
    family: str, model: str, pieces: Pieces, prompt_tokens: int, count: Callable[[str | Call], int]
) -> AsyncIterator[bytes]:
    """The reply as server-sent events, each text piece sent as soon as it comes.

    ``count`` gives the output tokens of each piece; the total goes out with the
    last event, as the providers send usage.
    """
    writer = _STREAMS[family](model, prompt_tokens)
    for event in writer.start():
        yield event
    output = 0
    calls: list[Call] = []
    async for piece in pieces:
        output += count(piece)
        if isinstance(piece, Call):
            calls.append(piece)
        elif piece:
            for event in writer.text(piece):
                yield event
    for event in writer.finish([(c, _call_id(family, c)) for c in calls], output):
        yield event


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class _OpenAIStream:
    def __init__(self, model: str, prompt: int) -> None:
        self.base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
        }
        self.prompt = prompt

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**self.base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    def start(self) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def text(self, piece: str) -> list[bytes]:
        return [self._chunk({"content": piece})]

    def finish(self, calls: list[tuple[Call, str]], output: int) -> list[bytes]:
        events = [
            self._chunk(
                {
                    "tool_calls": [
                        {
                            "index": n,
                            "id": i,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                        }
                    ]
                }
            )
            for n, (c, i) in enumerate(calls)
        ]
        events.append(self._chunk({}, "tool_calls" if calls else "stop"))
        usage = {
            "prompt_tokens": self.prompt,
            "completion_tokens": output,
            "total_tokens": self.prompt + output,
        }
        events.append(_sse({**self.base, "choices": [], "usage": usage}))
        return [*events, b"data: [DONE]\n\n"]


class _AnthropicStream:
    def __init__(self, model: str, prompt: int) -> None:
        self.model, self.prompt = model, prompt
        self.index = -1
        self.in_text = False

    def start(self) -> list[bytes]:
        message: dict[str, Any] = {
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.prompt, "output_tokens": 1},
        }
        return [_sse({"type": "message_start", "message": message}, "message_start")]

    def text(self, piece: str) -> list[bytes]:
        events = []
        if not self.in_text:
            self.index, self.in_text = self.index + 1, True
            start = {
                "type": "content_block_start",
                "index": self.index,
                "content_block": {"type": "text", "text": ""},
            }
            events.append(_sse(start, "content_block_start"))
        delta = {
            "type": "content_block_delta",
            "index": self.index,
            "delta": {"type": "text_delta", "text": piece},
        }
        return [*events, _sse(delta, "content_block_delta")]

    def _stop(self) -> bytes:
        return _sse({"type": "content_block_stop", "index": self.index}, "content_block_stop")

    def finish(self, calls: list[tuple[Call, str]], output: int) -> list[bytes]:
        events = [self._stop()] if self.in_text else []
        for call, call_id in calls:
            self.index += 1
            block = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
            events.append(
                _sse(
                    {"type": "content_block_start", "index": self.index, "content_block": block},
                    "content_block_start",
                )
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}
            events.append(
                _sse(
                    {"type": "content_block_delta", "index": self.index, "delta": delta},
                    "content_block_delta",
                )
            )
            events.append(self._stop())
        stop = {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": output},
        }
        return [*events, _sse(stop, "message_delta"), _sse({"type": "message_stop"}, "message_stop")]


class _GeminiStream:
    def __init__(self, model: str, prompt: int) -> None:
        self.model, self.prompt = model, prompt

    def _chunk(self, parts: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": self.model}
        if extra is not None:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = extra
        return _sse(chunk)

    def start(self) -> list[bytes]:
        return []

    def text(self, piece: str) -> list[bytes]:
        return [self._chunk([{"text": piece}])]

    def finish(self, calls: list[tuple[Call, str]], output: int) -> list[bytes]:
        parts = [{"functionCall": {"id": i, "name": c.name, "args": c.arguments}} for c, i in calls]
        usage = {
            "promptTokenCount": self.prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": self.prompt + output,
        }
        return [self._chunk(parts, usage)]


_STREAMS: dict[str, Callable[[str, int], Any]] = {
    "openai": _OpenAIStream,
    "anthropic": _AnthropicStream,
    "gemini": _GeminiStream,
}
