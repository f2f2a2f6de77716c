"""``pickToolTarget``: the first OutputCondition whose rules hold wins (SPEC).

``matchesRegex`` runs on RE2 (``google-re2``), which matches in time linear in the text:
a pattern and a text may both come from a contact, and Python's backtracking ``re`` takes
time exponential in the text on patterns like ``^(a+)+$``, on the event loop of the API or
a worker. RE2 refuses what it cannot run in linear time (backreferences, lookaround); such a
pattern is a publish problem when it is written in the definition, and makes the rule false,
with the reason noted for the block's debug event, when it comes from a variable.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import re2

from chatflow.schemas.definition import BlockTarget, ConditionRule, OutputCondition

from .interpolation import lookup, render, to_text

# Defaults of the bounds on a regex rule (the text's is Limits.regex_max_text_bytes, a
# setting). Patterns people write into flows are tens of characters and programs of tens of
# instructions; these leave room for far more while keeping one match to milliseconds on
# 64 KiB of text (RE2's cost grows with text length times program size once its DFA gives up).
MAX_PATTERN_CHARS = 1000
MAX_PROGRAM_SIZE = 500
DEFAULT_MAX_TEXT_BYTES = 64 * 1024
_CACHE_SIZE = 128  # compiled patterns kept; each holds at most _MAX_MEM of RE2's memory
_MAX_MEM = 1 << 20  # RE2's per-pattern budget (its default, 8 MiB, times the cache is too much)
_MAX_NOTES = 8  # reasons kept per navigation, each short: they go into a debug event


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a contact's bad pattern must not write to our stderr
    options.never_capture = True  # only "does it match" is asked: no submatch tracking
    options.max_mem = _MAX_MEM
    return options


_OPTIONS = _options()


def compile_pattern(pattern: str) -> Any:
    """The compiled pattern, or a ``str``: why RE2 refuses it."""
    if len(pattern) > MAX_PATTERN_CHARS:  # before the cache: it must not keep long keys
        return f"the pattern is longer than {MAX_PATTERN_CHARS} characters"
    return _compile(pattern)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compile(pattern: str) -> Any:
    # Bounded cache: conditions repeat the same few patterns from step to step.
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        return (f"RE2 cannot run this pattern ({detail}); backreferences and lookaround are "
                "not supported, rewrite it without them")
    if compiled.programsize > MAX_PROGRAM_SIZE:
        return (f"the pattern is too complex (RE2 program of {compiled.programsize} "
                f"instructions, at most {MAX_PROGRAM_SIZE}); simplify its repetitions")
    return compiled


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a matchesRegex rule, or None (publish-time check)."""
    compiled = compile_pattern(pattern)
    return compiled if isinstance(compiled, str) else None


def match_regex(text: str, pattern: str, max_text_bytes: int) -> tuple[bool, str | None]:
    """Whether ``pattern`` matches somewhere in ``text``, and when the rule is false for a
    reason other than "no match", that reason."""
    compiled = compile_pattern(pattern)
    if isinstance(compiled, str):
        return False, compiled
    # len() first: a text of more characters than bytes allowed is over without encoding it.
    if len(text) > max_text_bytes or len(text.encode()) > max_text_bytes:
        return False, f"the text is longer than {max_text_bytes} bytes (regex_max_text_bytes)"
    return compiled.search(text) is not None, None


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
    return match_regex(to_text(left), right, DEFAULT_MAX_TEXT_BYTES)[0]


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


def rule_holds(rule: ConditionRule, variables: Mapping[str, Any], context: Mapping[str, Any],
               *, max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
               notes: list[str] | None = None) -> bool:
    """Whether ``rule`` holds; a regex rule that is false for a reason (a refused pattern,
    a text over ``max_text_bytes``) appends that reason to ``notes``."""
    variable = rule.variable.strip()
    if variable.startswith("{{") and variable.endswith("}}"):
        variable = variable[2:-2].strip()
    left = lookup(variable, variables, context)
    right = render(rule.value or "", variables, context)
    if rule.operator != "matchesRegex":
        return OPERATORS[rule.operator](left, right)
    held, reason = match_regex(to_text(left), right, max_text_bytes)
    if reason is not None and notes is not None and len(notes) < _MAX_NOTES:
        notes.append(f"{variable} matchesRegex {right[:80]!r}: {reason}")
    return held


def pick_target(
    conditions: list[OutputCondition],
    default: BlockTarget,
    variables: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    notes: list[str] | None = None,
) -> tuple[BlockTarget, str | None]:
    """The target to follow and the id of the condition that matched (None: default).
    ``notes`` collects why regex rules were false other than by not matching."""
    for condition in conditions:
        results = (rule_holds(rule, variables, context, max_text_bytes=max_text_bytes,
                              notes=notes) for rule in condition.rules)
        held = any(results) if condition.logic == "or" else all(results)
        if held and condition.rules:
            return condition.target, condition.id
    return default, None
