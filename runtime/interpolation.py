"""``{{name.path.0.field}}`` rendering, exactly as SPEC says.

One pass, left to right: a value that itself contains ``{{...}}`` is not
rendered again, so a variable can never expand into more templates (no
interpolation bombs). The rendered text is capped by ``max_chars``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_TOKEN = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
CONTEXT_ROOTS = frozenset({"router", "flow", "contact"})
_MISSING = object()


class RenderTooLarge(ValueError):
    """Raised when a rendered template would exceed the configured size cap."""


def lookup(path: str, variables: Mapping[str, Any], context: Mapping[str, Any]) -> Any:
    """The raw value at ``path`` (``None`` when missing)."""
    value = _resolve(path, variables, context)
    return None if value is _MISSING else value


def _resolve(path: str, variables: Mapping[str, Any], context: Mapping[str, Any]) -> Any:
    parts = path.split(".")
    head = parts[0]
    if head in CONTEXT_ROOTS and head in context:
        current: Any = context[head]
    elif head in variables:
        current = variables[head]
    else:
        return _MISSING
    for part in parts[1:]:
        current = _child(current, part)
        if current is _MISSING:
            return _MISSING
    return current


def _child(value: Any, part: str) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        # A JSON body stored as text is still readable by path.
        try:
            value = json.loads(value)
        except ValueError:
            return _MISSING
    if isinstance(value, Mapping):
        return value.get(part, _MISSING)
    if isinstance(value, list) and part.lstrip("-").isdigit():
        index = int(part)
        return value[index] if -len(value) <= index < len(value) else _MISSING
    return _MISSING


def to_text(value: Any) -> str:
    """How a value reads inside a string: JS-like scalars, compact JSON for the rest."""
    if value is None or value is _MISSING:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def render(
    template: str,
    variables: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    max_chars: int = 1_000_000,
) -> str:
    if "{{" not in template:
        return template
    out: list[str] = []
    size = 0
    pos = 0
    for match in _TOKEN.finditer(template):
        piece = template[pos : match.start()] + to_text(_resolve(match.group(1), variables, context))
        size += len(piece)
        if size > max_chars:
            raise RenderTooLarge(f"rendered text exceeds {max_chars} characters")
        out.append(piece)
        pos = match.end()
    out.append(template[pos:])
    return "".join(out)
