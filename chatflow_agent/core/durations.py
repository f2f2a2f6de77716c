"""Checking a number of seconds given as a timeout."""

from __future__ import annotations

import math
from typing import Any


def check_seconds(value: Any, name: str) -> float:
    """``value`` as a positive finite float; ValueError naming ``name`` otherwise.

    ``True`` is an int to Python and ``nan`` compares false with everything, so
    neither would fail ``value <= 0``: with ``nan`` every call timed out at once.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return float(value)
