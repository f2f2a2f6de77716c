from __future__ import annotations

import pytest

from chatflow.runtime.conditions import pick_target
from chatflow.schemas.definition import BlockTarget, OutputCondition

VARS = {"status": 200, "body": "hello world", "tags": ["a", "b"], "empty": "", "n": "10"}


def cond(cid: str, op: str, variable: str, value: str | None = None, logic: str = "and",
         extra: list[dict[str, str]] | None = None) -> OutputCondition:
    rules = [{"variable": variable, "operator": op, **({"value": value} if value is not None else {})}]
    return OutputCondition.model_validate({"id": cid, "logic": logic, "rules": rules + (extra or []),
                                           "target": {"type": "block", "blockId": cid}})


DEFAULT = BlockTarget(type="block", blockId="default")


@pytest.mark.parametrize(("op", "variable", "value", "holds"), [
    ("equals", "status", "200", True), ("notEquals", "status", "200", False),
    ("contains", "body", "lo wo", True), ("contains", "tags", "b", True),
    ("notContains", "body", "xyz", True), ("startsWith", "body", "hell", True),
    ("endsWith", "body", "world", True), ("greaterThan", "n", "9", True),
    ("greaterThan", "n", "abc", False), ("greaterThanOrEqual", "n", "10", True),
    ("lessThan", "status", "100", False), ("lessThanOrEqual", "status", "200", True),
    ("isEmpty", "empty", None, True), ("isEmpty", "missing", None, True),
    ("isNotEmpty", "tags", None, True), ("matchesRegex", "body", r"^h\w+ w", True),
    ("matchesRegex", "body", "([", False),
])
def test_each_operator(op: str, variable: str, value: str | None, holds: bool) -> None:
    target, matched = pick_target([cond("hit", op, variable, value)], DEFAULT, VARS, {})
    assert (matched == "hit") is holds
    assert target.blockId == ("hit" if holds else "default")


def test_first_matching_condition_wins() -> None:
    conds = [cond("a", "equals", "status", "500"), cond("b", "equals", "status", "200"),
             cond("c", "isNotEmpty", "body")]
    assert pick_target(conds, DEFAULT, VARS, {})[1] == "b"


def test_or_logic_needs_one_rule_and_and_logic_needs_all() -> None:
    extra = [{"variable": "status", "operator": "equals", "value": "404"}]
    assert pick_target([cond("or", "equals", "status", "200", "or", extra)], DEFAULT, VARS, {})[1] == "or"
    assert pick_target([cond("and", "equals", "status", "200", "and", extra)], DEFAULT, VARS, {})[1] is None


def test_rule_value_is_interpolated() -> None:
    variables = {**VARS, "expected": "200"}
    assert pick_target([cond("x", "equals", "status", "{{expected}}")], DEFAULT, variables, {})[1] == "x"
