"""Helpers shared by the executors."""

from __future__ import annotations

import functools
import re
from typing import Any

# The parts resolver itself, not ``lookup``: a mapping's path is split once (``_single_path``).
from ..interpolation import _MISSING, _resolve_parts, render
from ..state import ExecState

_SINGLE = re.compile(r"^\{\{\s*([^{}]+?)\s*\}\}$")
# Mapping templates come from definitions and repeat on every execution: whether each is one
# token, and that token's path, is found once. Only short ones are kept (as interpolation's).
_SINGLE_MAX_CHARS = 512


def _path_of(template: str) -> tuple[str, ...] | None:
    match = _SINGLE.match(template)
    return tuple(match.group(1).split(".")) if match else None


_single_path = functools.lru_cache(maxsize=2048)(_path_of)


def value_of(template: str, state: ExecState, max_chars: int) -> Any:
    """A mapping's value: the raw variable when the template is one token, else text."""
    parts = _single_path(template) if len(template) <= _SINGLE_MAX_CHARS else _path_of(template)
    if parts is not None:
        value = _resolve_parts(parts, state.variables, state.context)
        return None if value is _MISSING else value
    return render(template, state.variables, state.context, max_chars=max_chars)


def text_of(template: str, state: ExecState, max_chars: int) -> str:
    return render(template, state.variables, state.context, max_chars=max_chars)


def remaining_ms(state: ExecState, now_ms: int) -> int:
    return max(1, state.deadlineMs - now_ms)
