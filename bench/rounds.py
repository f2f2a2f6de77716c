"""The median of a figure over the rounds of one (scenario, workers), and its spread.

A CPU figure taken on a shared machine moves with whatever else runs: one round says
little. ``--rounds N`` runs each (scenario, W) N times, each round right after its own
baseline, and reports each figure's median (under the keys one round has) with its
min and max beside it (``min_max``), so a reader sees how far to trust it.
"""

from __future__ import annotations

import statistics
from typing import Any

Figure = dict[str, Any]


def median_of(rounds: list[Figure]) -> Figure:
    """One round's document with every number the median of the rounds' (``None``, a
    baseline's ``of_baseline``, is left out), plus ``rounds`` and ``min_max``."""
    out = _median(rounds)
    out["rounds"] = len(rounds)
    out["min_max"] = {k: v for k, v in _spread(rounds).items() if k not in _PARAMETERS}
    return out


_PARAMETERS = {"workers", "executions"}  # what the run was asked, not what it measured


def _columns(rounds: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each key's values across the rounds. A number a round left out is 0 there (a command
    one round never called is absent from its ``commands_by_name``: 0 calls, not unknown)."""
    keys = list(dict.fromkeys(k for r in rounds for k in r))
    columns = {k: [r[k] for r in rounds if k in r] for k in keys}
    for column in columns.values():
        if len(column) < len(rounds) and column and _numbers(column):
            column += [0] * (len(rounds) - len(column))
    return columns


def _numbers(values: list[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _median(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    if all(isinstance(v, dict) for v in present):
        return {k: _median(column) for k, column in _columns(present).items()}
    if _numbers(present) and any(v != present[0] for v in present):
        middle = statistics.median(present)  # of an even count: the mean of the middle two
        if all(isinstance(v, int) for v in present) and middle == int(middle):
            return int(middle)
        return round(middle, 4)
    return present[0]  # the same in every round: a name, a flag, a parameter


def _spread(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, dict) for v in present):
        spread = {k: _spread(column) for k, column in _columns(present).items()}
        return {k: s for k, s in spread.items() if s is not None}
    if present and _numbers(present):
        return [min(present), max(present)]
    return None


def summary_row(figure: Figure) -> str:
    """The figures a reader compares across versions, as median [min–max] of the rounds."""
    spread = figure["min_max"]

    def show(key: str, unit: str = "", fmt: str = ".0f") -> str:
        value = figure.get(key)
        if value is None:
            return f"{key} -"
        low, high = spread.get(key, [value, value])
        return f"{key} {value:{fmt}}{unit} [{low:{fmt}}–{high:{fmt}}]"

    return (f"{figure['scenario']:<10} W={figure['workers']}  median of {figure['rounds']} rounds: "
            + "  ".join([show("steps_per_s"), show("of_baseline", fmt=".2f"),
                         show("worker_cpu_per_execution_us", "µs"),
                         show("valkey_cpu_per_execution_us", "µs"),
                         show("worker_cpu_of_baseline", "x", ".2f"),
                         show("valkey_cpu_of_baseline", "x", ".2f"),
                         show("p50_ms", "ms", ".1f")]))
