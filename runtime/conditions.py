"""``pickToolTarget``: the first OutputCondition whose rules hold wins (SPEC)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from chatflow.schemas.definition import BlockTarget, ConditionRule, OutputCondition

from .interpolation import lookup, render, to_text


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def _compare(op: Callable[[float, float], bool]) -> Callable[[Any, str], bool]:
    def check(left: Any, right: str) -> bool:
        a, b = _number(left), _number(right)
        return a is not None and b is not None and op(a, b)

    return check


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _contains(left: Any, right: str) -> bool:
    if isinstance(left, list):
        return any(to_text(item) == right for item in left)
    return right in to_text(left)


def _regex(left: Any, right: str) -> bool:
    try:
        return re.search(right, to_text(left)) is not None
    except re.error:
        return False


OPERATORS: dict[str, Callable[[Any, str], bool]] = {
    "equals": lambda left, right: to_text(left) == right,
    "notEquals": lambda left, right: to_text(left) != right,
    "contains": _contains,
    "notContains": lambda left, right: not _contains(left, right),
    "startsWith": lambda left, right: to_text(left).startswith(right),
    "endsWith": lambda left, right: to_text(left).endswith(right),
    "greaterThan": _compare(lambda a, b: a > b),
    "greaterThanOrEqual": _compare(lambda a, b: a >= b),
    "lessThan": _compare(lambda a, b: a < b),
    "lessThanOrEqual": _compare(lambda a, b: a <= b),
    "isEmpty": lambda left, _right: _is_empty(left),
    "isNotEmpty": lambda left, _right: not _is_empty(left),
    "matchesRegex": _regex,
}


def rule_holds(rule: ConditionRule, variables: Mapping[str, Any], context: Mapping[str, Any]) -> bool:
    variable = rule.variable.strip()
    if variable.startswith("{{") and variable.endswith("}}"):
        variable = variable[2:-2].strip()
    left = lookup(variable, variables, context)
    right = render(rule.value or "", variables, context)
    return OPERATORS[rule.operator](left, right)


def pick_target(
    conditions: list[OutputCondition],
    default: BlockTarget,
    variables: Mapping[str, Any],
    context: Mapping[str, Any],
) -> tuple[BlockTarget, str | None]:
    """The target to follow and the id of the condition that matched (None: default)."""
    for condition in conditions:
        results = (rule_holds(rule, variables, context) for rule in condition.rules)
        held = any(results) if condition.logic == "or" else all(results)
        if held and condition.rules:
            return condition.target, condition.id
    return default, None
