"""Provider limits on tool names, checked when a tool is defined rather than per request."""

from __future__ import annotations

import re

from ..errors import ToolSchemaError

# A tool is defined once and may be sent to any provider, so its name must pass all three.
NAME_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Anthropic", re.compile(r"^[a-zA-Z0-9_-]{1,64}$")),
    ("OpenAI", re.compile(r"^[a-zA-Z0-9_-]{1,64}$")),
    ("Gemini", re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")),
)
# OpenAI rejects a request that declares more functions than this.
MAX_TOOLS_PER_REQUEST = 128


def check_tool_name(name: str, *, owner: str) -> None:
    """Raise ToolSchemaError naming the first provider whose name rule ``name`` breaks."""
    for provider, rule in NAME_RULES:
        if not rule.fullmatch(name):
            raise ToolSchemaError(
                f"tool function {owner!r}: name {name!r} breaks {provider}'s rule {rule.pattern}",
                function=owner,
            )
