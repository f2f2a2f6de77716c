"""Helpers shared by the executors."""

from __future__ import annotations

import re
from typing import Any

from ..interpolation import lookup, render
from ..state import ExecState

_SINGLE = re.compile(r"^\{\{\s*([^{}]+?)\s*\}\}$")


def value_of(template: str, state: ExecState, max_chars: int) -> Any:
    """A mapping's value: the raw variable when the template is one token, else text."""
    match = _SINGLE.match(template)
    if match:
        return lookup(match.group(1), state.variables, state.context)
    return render(template, state.variables, state.context, max_chars=max_chars)


def text_of(template: str, state: ExecState, max_chars: int) -> str:
    return render(template, state.variables, state.context, max_chars=max_chars)


def remaining_ms(state: ExecState, now_ms: int) -> int:
    return max(1, state.deadlineMs - now_ms)
