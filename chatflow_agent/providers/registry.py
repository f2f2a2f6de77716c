"""Choosing a provider from a model name."""

from __future__ import annotations

import re

from ..errors import ProviderConfigError
from .base import Provider

_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # A version (optional: "gemini-pro") and a known variant, so "gemini-9-nope" is refused
    # like "gpt4o" rather than sent to the API to fail there.
    (
        "gemini",
        re.compile(r"^(models/)?gemini-(\d+(\.\d+)?-)?(pro|flash|ultra|nano|exp|embedding|live)\b"),
    ),
    # Fine-tuned models are named "ft:<base model>:<org>:<suffix>:<id>".
    ("openai", re.compile(r"^(ft:)?(gpt-|chatgpt-|o\d)")),
    ("anthropic", re.compile(r"^claude-")),
)


def provider_family(model: str) -> str:
    for family, pattern in _FAMILIES:
        if pattern.match(model):
            return family
    raise ProviderConfigError(
        f"no provider for model {model!r}: expected a gemini-*, gpt-*, chatgpt-*, o*, ft:gpt-* or "
        "claude-* name, "
        "or pass provider= to the Agent"
    )


def provider_for_model(model: str) -> Provider:
    """A provider for ``model``, configured from the environment."""
    family = provider_family(model)
    if family == "gemini":
        from .gemini import GeminiProvider

        return GeminiProvider.from_env()
    if family == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider.from_env()
    from .anthropic import AnthropicProvider

    return AnthropicProvider.from_env()
