"""Checking payloads against the official SDKs' own type models (test-only dependencies).

openai and anthropic describe their request bodies and tool params as TypedDicts;
google-genai describes Gemini's as pydantic models. Validating against them
checks our output against the vendors' own idea of the wire format, offline.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import anthropic.types
import anthropic.types.message_create_params
import openai.types.chat
import openai.types.chat.completion_create_params
from google.genai import Client
from google.genai import _transformers as genai_transformers
from google.genai import types as genai
from pydantic import ConfigDict, create_model

# A client in Gemini Developer API mode (not Vertex AI): google-genai's schema processing
# refuses there what the Developer API refuses. Building it opens no connection.
_DEVELOPER_API = Client(api_key="developer-api-mode")._api_client
assert not _DEVELOPER_API.vertexai
# The fields of the Developer API's Schema object (ai.google.dev/api/caching#Schema); it
# answers 400 to any other key, additionalProperties and $ref included.
GEMINI_SCHEMA_KEYS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
})  # fmt: skip


def _forbidding(name: str, typed_dict: Any) -> Any:
    # Wrapping in a model with extra="forbid" makes the nested TypedDicts reject unknown keys.
    return create_model(name, __config__=ConfigDict(extra="forbid"), body=(typed_dict, ...))


_OPENAI_REQUEST = _forbidding(
    "OpenAIRequest", openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming
)
_OPENAI_STREAM_REQUEST = _forbidding(
    "OpenAIStreamRequest", openai.types.chat.completion_create_params.CompletionCreateParamsStreaming
)
_OPENAI_TOOL = _forbidding("OpenAITool", openai.types.chat.ChatCompletionFunctionToolParam)
_ANTHROPIC_REQUEST = _forbidding(
    "AnthropicRequest", anthropic.types.message_create_params.MessageCreateParamsNonStreaming
)
_ANTHROPIC_STREAM_REQUEST = _forbidding(
    "AnthropicStreamRequest", anthropic.types.message_create_params.MessageCreateParamsStreaming
)
_ANTHROPIC_TOOL = _forbidding("AnthropicTool", anthropic.types.ToolParam)


def _drain(value: Any) -> Any:
    """Consume pydantic's lazy Iterable validators so nested items get checked too."""
    if isinstance(value, Mapping):
        return {key: _drain(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, Iterator | list | tuple):
        return [_drain(item) for item in value]
    return value


def check_openai_request(body: dict[str, Any]) -> None:
    model = _OPENAI_STREAM_REQUEST if body.get("stream") else _OPENAI_REQUEST
    _drain(model.model_validate({"body": body}).body)
    for index, message in enumerate(body["messages"]):
        if message["role"] == "assistant":
            assert message.get("content") or message.get("tool_calls"), (
                f"messages[{index}]: an assistant message needs content or tool_calls"
            )
    if str(body["model"]).startswith(("o1-mini", "o1-preview")):
        roles = {m["role"] for m in body["messages"]}
        assert not roles & {"system", "developer"}, f"{body['model']} refuses roles {roles}"


def check_openai_tool(tool: dict[str, Any]) -> None:
    _drain(_OPENAI_TOOL.model_validate({"body": tool}).body)


def check_anthropic_request(body: dict[str, Any]) -> None:
    model = _ANTHROPIC_STREAM_REQUEST if body.get("stream") else _ANTHROPIC_REQUEST
    _drain(model.model_validate({"body": body}).body)
    for index, message in enumerate(body["messages"]):
        content = message["content"]
        assert content, f"messages[{index}]: Anthropic refuses empty content"
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "text":
                assert block["text"], f"messages[{index}]: text content blocks must be non-empty"


def reject_non_finite(constant: str) -> float:
    """``json.loads(parse_constant=...)``: every provider refuses NaN and Infinity."""
    raise ValueError(f"{constant} is not valid JSON")


def check_anthropic_tool(tool: dict[str, Any]) -> None:
    _drain(_ANTHROPIC_TOOL.model_validate({"body": tool}).body)


def check_gemini_schema(schema: dict[str, Any], path: str = "parameters") -> None:
    """A schema the Gemini Developer API takes: its keys only, and google-genai's own check."""
    genai_transformers.process_schema(copy.deepcopy(schema), _DEVELOPER_API)
    _check_gemini_keys(schema, path)


def _check_gemini_keys(schema: Any, path: str) -> None:
    assert isinstance(schema, dict), f"{path}: a schema must be an object"
    unknown = set(schema) - GEMINI_SCHEMA_KEYS
    assert not unknown, f"{path}: the Gemini Developer API refuses {sorted(unknown)}"
    for name, sub in (schema.get("properties") or {}).items():
        _check_gemini_keys(sub, f"{path}.properties.{name}")
    if "items" in schema:
        _check_gemini_keys(schema["items"], f"{path}.items")
    for index, sub in enumerate(schema.get("anyOf") or ()):
        _check_gemini_keys(sub, f"{path}.anyOf[{index}]")


def check_gemini_declaration(declaration: dict[str, Any]) -> genai.FunctionDeclaration:
    checked = genai.FunctionDeclaration.model_validate(declaration)
    if "parameters" in declaration:
        check_gemini_schema(declaration["parameters"])
    return checked


def check_gemini_request(body: dict[str, Any]) -> None:
    for index, content in enumerate(body["contents"]):
        genai.Content.model_validate(content)
        assert content.get("parts"), f"contents[{index}]: Gemini refuses a content without parts"
    for tool in body.get("tools", ()):
        genai.Tool.model_validate(tool)
        for declaration in tool.get("functionDeclarations", ()):
            check_gemini_declaration(declaration)
    if "systemInstruction" in body:
        genai.Content.model_validate(body["systemInstruction"])
    if "generationConfig" in body:
        config = body["generationConfig"]
        genai.GenerationConfig.model_validate(config)
        if "responseSchema" in config:
            check_gemini_schema(config["responseSchema"], "generationConfig.responseSchema")
            assert config.get("responseMimeType") == "application/json"
    if "toolConfig" in body:
        genai.ToolConfig.model_validate(body["toolConfig"])
    json_reply = (body.get("generationConfig") or {}).get("responseMimeType") == "application/json"
    assert not (json_reply and body.get("tools")), (
        "Gemini refuses a JSON response type together with function calling"
    )
    unknown = set(body) - {"contents", "tools", "toolConfig", "systemInstruction", "generationConfig"}
    assert not unknown, f"unexpected Gemini request fields: {unknown}"
