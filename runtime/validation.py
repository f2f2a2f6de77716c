"""Static checks of a ToolDefinition, each problem reported with its JSON path.

``publish`` runs these; the registry adds the checks that need the registry
(callTool targets, credentials, cycles across tools).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from chatflow.schemas.definition import (
    SLUG_PATTERN,
    BlockTarget,
    OutputCondition,
    ReturnBlock,
    ToolDefinition,
    UnknownBlock,
    format_validation_error,
)

from .conditions import regex_problem


def parse_definition(data: Any) -> tuple[ToolDefinition | None, list[str]]:
    try:
        definition = ToolDefinition.model_validate(data)
    except ValidationError as exc:
        return None, format_validation_error(exc)
    return definition, check_definition(definition)


def check_definition(d: ToolDefinition) -> list[str]:
    problems: list[str] = []
    if not d.onboardingBlockId:
        problems.append("onboardingBlockId: missing (a tool without it is not published)")
    elif d.onboardingBlockId not in d.blocks:
        problems.append(f"onboardingBlockId: no block {d.onboardingBlockId!r}")
    for key, block in d.blocks.items():
        if block.id and block.id != key:
            problems.append(f"blocks.{key}.id: {block.id!r} differs from its key {key!r}")
        if isinstance(block, UnknownBlock):
            problems.append(f"blocks.{key}.type: unknown block type {block.type!r}")
            continue
        if isinstance(block, ReturnBlock):
            continue
        targets: list[tuple[str, BlockTarget]] = [(f"blocks.{key}.defaultOutput",
                                                   block.defaultOutput)]
        targets += [(f"blocks.{key}.outputConditions.{i}.target", c.target)
                    for i, c in enumerate(block.outputConditions)]
        for path, target in targets:
            if target.type == "block" and target.blockId not in d.blocks:
                problems.append(f"{path}.blockId: no block {target.blockId!r}")
        problems += _regex_problems(f"blocks.{key}", block.outputConditions)
    if d.enabledForAI and not re.match(SLUG_PATTERN, d.slug or ""):
        problems.append(f"slug: {d.slug!r} must match {SLUG_PATTERN} when enabledForAI")
    return problems


def _regex_problems(path: str, conditions: list[OutputCondition]) -> list[str]:
    """matchesRegex patterns RE2 cannot run. A pattern with a ``{{variable}}`` is known only
    when the rule runs: there a refused one makes the rule false, with the reason."""
    problems: list[str] = []
    for i, condition in enumerate(conditions):
        for j, rule in enumerate(condition.rules):
            pattern = rule.value or ""
            if rule.operator != "matchesRegex" or "{{" in pattern:
                continue
            problem = regex_problem(pattern)
            if problem is not None:
                problems.append(f"{path}.outputConditions.{i}.rules.{j}.value: {problem}")
    return problems
