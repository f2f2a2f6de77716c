"""The OpenAI and Anthropic tool entries, built the same way for every kind of tool.

``Tool`` (a Python function), ``RuntimeToolSpec`` (a custom tool of the runtime) and
``NativeToolProxy`` (a native tool served by a worker) each know their own JSON
Schema parameters; what wraps them for a provider is this one mixin.
"""

from __future__ import annotations

from typing import Any


class ProviderDeclarations:
    """``to_openai_tool`` and ``to_anthropic_tool`` from ``name``, ``description`` and
    ``to_openai_parameters``, which the class provides."""

    __slots__ = ()
    name: str
    description: str

    def to_openai_parameters(self, *, strict: bool = False) -> dict[str, Any]:
        raise NotImplementedError

    def to_openai_tool(self, *, strict: bool = False) -> dict[str, Any]:
        """The entry of a chat-completions ``tools`` list."""
        function: dict[str, Any] = {"name": self.name, "description": self.description,
                                    "parameters": self.to_openai_parameters(strict=strict)}
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    def to_anthropic_tool(self) -> dict[str, Any]:
        """The entry of an Anthropic messages ``tools`` list."""
        return {"name": self.name, "description": self.description,
                "input_schema": self.to_openai_parameters()}
