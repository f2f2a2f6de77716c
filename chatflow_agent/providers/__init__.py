"""Model providers over httpx: Gemini, OpenAI and Anthropic, chosen by model name."""

from .anthropic import AnthropicProvider
from .base import Provider
from .gemini import GeminiProvider
from .openai import OpenAIProvider
from .registry import provider_family, provider_for_model

__all__ = [
    "AnthropicProvider",
    "GeminiProvider",
    "OpenAIProvider",
    "Provider",
    "provider_family",
    "provider_for_model",
]
