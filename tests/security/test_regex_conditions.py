"""matchesRegex runs on RE2: a contact's pattern or text cannot stall the API or a worker.

Python's backtracking ``re`` needs about 2**n steps for ``^(a+)+$`` against n 'a's and a
'!': 25 of them froze a process for seconds. The texts here are 60,000 characters long, so
with backtracking none of these tests would ever finish; with RE2 each answers correctly.
The texts stay under the 64 KiB default cap on a regex rule's text, so RE2 really runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chatflow.handlers.cli import main
from chatflow.runtime.conditions import DEFAULT_MAX_TEXT_BYTES, compile_pattern, pick_target
from chatflow.runtime.validation import parse_definition
from chatflow.schemas.definition import BlockTarget, OutputCondition
from tests.api.support import Api
from tests.core.tools import ret, script, to, tool
from tests.harness import Harness
from tests.registry.defs import definition
from tests.registry.defs import ret as reg_ret

ATTACK = "^(a+)+$"
HUGE = "a" * 60_000 + "!"  # 2**60,000 backtracking steps
DEFAULT = BlockTarget(type="block", blockId="default")


def regex_rule(cid: str, variable: str, pattern: str) -> dict[str, Any]:
    return {"id": cid, "rules": [{"variable": variable, "operator": "matchesRegex",
                                  "value": pattern}], "target": to(cid)}


def conditions(*raw: dict[str, Any]) -> list[OutputCondition]:
    return [OutputCondition.model_validate(c) for c in raw]


def test_the_catastrophic_pattern_against_a_huge_text_gives_the_right_answer() -> None:
    notes: list[str] = []
    conds = conditions(regex_rule("evil", "body", ATTACK))
    assert pick_target(conds, DEFAULT, {"body": HUGE}, {}, notes=notes)[1] is None
    assert pick_target(conds, DEFAULT, {"body": HUGE[:-1]}, {}, notes=notes)[1] == "evil"
    assert notes == []  # evaluated, not refused


def test_a_pattern_from_a_variable_that_re2_refuses_makes_the_rule_false_with_a_reason() -> None:
    notes: list[str] = []
    conds = conditions(regex_rule("backref", "body", "{{pattern}}"))
    target, matched = pick_target(conds, DEFAULT, {"body": "aa", "pattern": r"(a)\1"}, {},
                                  notes=notes)
    assert (target, matched) == (DEFAULT, None)
    (note,) = notes
    assert "RE2 cannot run this pattern" in note and "backreferences" in note


def test_a_text_over_the_cap_makes_the_rule_false_with_a_reason() -> None:
    notes: list[str] = []
    conds = conditions(regex_rule("any", "body", "a"))
    matched = pick_target(conds, DEFAULT, {"body": "a" * 2_000}, {}, max_text_bytes=1_000,
                          notes=notes)[1]
    assert matched is None
    assert notes and "longer than 1000 bytes" in notes[0]
    assert DEFAULT_MAX_TEXT_BYTES == 64 * 1024


def test_patterns_are_compiled_once_and_an_overlong_or_too_complex_one_is_refused() -> None:
    assert compile_pattern(r"^h\w+") is compile_pattern(r"^h\w+")
    assert "longer than" in compile_pattern("a" * 5_000)
    assert "too complex" in compile_pattern("(?:a?){400}a{400}")


def test_check_reports_a_backreference_or_lookahead_at_its_path() -> None:
    raw = tool("s", script("s", "return 1", "v", to("r"), conditions=[
        regex_rule("r", "v", "ok"),
        {"id": "two", "rules": [{"variable": "v", "operator": "equals", "value": "1"},
                                {"variable": "v", "operator": "matchesRegex", "value": "(?=x)"}],
         "target": to("r")}]), ret("r", "x"))
    raw["blocks"]["s"]["outputConditions"][0]["rules"][0]["value"] = r"(\w)\1"
    _definition, problems = parse_definition(raw)
    assert [p.split(":")[0] for p in problems] == [
        "blocks.s.outputConditions.0.rules.0.value", "blocks.s.outputConditions.1.rules.1.value"]
    assert all("RE2 cannot run this pattern" in p for p in problems)


async def test_a_worker_answers_the_attack_and_the_next_command(harness: Harness) -> None:
    block = script("s", "return 1", "v", to("no"), conditions=[regex_rule("yes", "body", ATTACK)])
    await harness.put_tool("pt-evil", tool("s", block, ret("yes", "matched"), ret("no", "safe")))
    await harness.put_tool("pt-hi", tool("r", ret("r", "hi {{name}}")))
    assert (await harness.run("pt-evil", variables={"body": HUGE})).result == "safe"
    assert (await harness.run("pt-evil", variables={"body": HUGE[:-1]})).result == "matched"
    assert (await harness.run("pt-hi", inputs={"name": "ana"})).result == "hi ana"


async def test_a_refused_variable_pattern_is_explained_in_the_blocks_debug_event(
        harness: Harness) -> None:
    block = script("s", "return 1", "v", to("no"),
                   conditions=[regex_rule("yes", "body", "{{pattern}}")])
    await harness.put_tool("pt-var", tool("s", block, ret("yes", "matched"), ret("no", "safe")))
    result = await harness.run("pt-var", debug=True, contact="c-re2",
                               variables={"body": "abab", "pattern": "(ab)\\1"})
    assert result.result == "safe"
    events = await harness.stream(harness.keys.debug("c-re2"))
    (payload,) = [e["payload"] for e in events if e["actionType"] == "executeTool:executeScript"]
    assert payload.get("matchedConditionId") is None
    assert "pattern" in payload["conditionReason"] and "RE2" in payload["conditionReason"]


async def test_the_api_test_run_answers_the_attack(api: Api) -> None:
    block = {"type": "executeScript", "id": "s", "source": "return 1", "outputVariable": "v",
             "defaultOutput": to("no"), "outputConditions": [regex_rule("yes", "body", ATTACK)]}
    yes, no = reg_ret("matched", "yes"), reg_ret("safe", "no")
    flow = definition(block, yes, no)
    run = await api.ok("POST", "/tools/test-flow", json={"definition": flow,
                                                         "variables": {"body": HUGE}})
    assert run["ok"] and run["result"] == "safe"
    me = await api.ok("GET", "/me")  # the same process still answers
    assert me


async def test_publishing_a_backreference_is_refused_naming_its_path(api: Api) -> None:
    block = {"type": "executeScript", "id": "s", "source": "return 1", "outputVariable": "v",
             "defaultOutput": to("r"),
             "outputConditions": [regex_rule("r", "v", r"(\d)\1")]}
    await api.ok("POST", "/tools", 201, json={"id": "t-re", "definition": definition(
        block, reg_ret("x"))})
    body = await api.fails("POST", "/tools/t-re/publish", 400)
    paths = [p["path"] for p in body["problems"]]
    assert "definition.blocks.s.outputConditions.0.rules.0.value" in paths


def test_publish_check_names_the_path_of_a_lookbehind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("CHATFLOW_REDIS_URL", raising=False)
    block = script("s", "return 1", "v", to("r"), conditions=[regex_rule("r", "v", "(?<=a)b")])
    path = tmp_path / "lookbehind.json"
    path.write_text(json.dumps({"id": "pt-lb", "definition": tool("s", block, ret("r", "x"))}))

    assert main(["publish", "--check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "definition.blocks.s.outputConditions.0.rules.0.value: RE2 cannot run this pattern" in err
