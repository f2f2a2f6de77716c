"""Checking payloads against the official SDKs' own type models (test-only dependencies).

openai and anthropic describe their request bodies and tool params as TypedDicts;
google-genai describes Gemini's as pydantic models. Validating against them
checks our output against the vendors' own idea of the wire format, offline.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import anthropic.types
import anthropic.types.message_create_params
import openai.types.chat
import openai.types.chat.completion_create_params
from google.genai import types as genai
from pydantic import ConfigDict, create_model


def _forbidding(name: str, typed_dict: Any) -> Any:
    # Wrapping in a model with extra="forbid" makes the nested TypedDicts reject unknown keys.
    return create_model(name, __config__=ConfigDict(extra="forbid"), body=(typed_dict, ...))


_OPENAI_REQUEST = _forbidding(
    "OpenAIRequest", openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming
)
_OPENAI_TOOL = _forbidding("OpenAITool", openai.types.chat.ChatCompletionFunctionToolParam)
_ANTHROPIC_REQUEST = _forbidding(
    "AnthropicRequest", anthropic.types.message_create_params.MessageCreateParamsNonStreaming
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
    _drain(_OPENAI_REQUEST.model_validate({"body": body}).body)


def check_openai_tool(tool: dict[str, Any]) -> None:
    _drain(_OPENAI_TOOL.model_validate({"body": tool}).body)


def check_anthropic_request(body: dict[str, Any]) -> None:
    _drain(_ANTHROPIC_REQUEST.model_validate({"body": body}).body)


def check_anthropic_tool(tool: dict[str, Any]) -> None:
    _drain(_ANTHROPIC_TOOL.model_validate({"body": tool}).body)


def check_gemini_declaration(declaration: dict[str, Any]) -> genai.FunctionDeclaration:
    return genai.FunctionDeclaration.model_validate(declaration)


def check_gemini_request(body: dict[str, Any]) -> None:
    for content in body["contents"]:
        genai.Content.model_validate(content)
    for tool in body.get("tools", ()):
        genai.Tool.model_validate(tool)
    if "systemInstruction" in body:
        genai.Content.model_validate(body["systemInstruction"])
    if "generationConfig" in body:
        genai.GenerationConfig.model_validate(body["generationConfig"])
    unknown = set(body) - {"contents", "tools", "systemInstruction", "generationConfig"}
    assert not unknown, f"unexpected Gemini request fields: {unknown}"
