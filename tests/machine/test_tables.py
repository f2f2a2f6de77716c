"""The pure state machine, table by table: navigation, guardrails, the error table, the
deadline and run-ahead. No Redis: tests/machine/driver.py plays the worker."""

from __future__ import annotations

from typing import Any

import pytest

from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.limits import Limits
from chatflow.runtime.machine import Machine
from chatflow.runtime.outcome import BlockOutcome
from tests.core.tools import call, http, ret, script, to, tool, when
from tests.machine.driver import Driver, command


def writes(**values: Any) -> Any:
    return lambda _state, _block: BlockOutcome(writes=values)


def failing(code: str, message: str, fatal: bool = False) -> Any:
    return lambda _state, _block: BlockOutcome(error=ToolFailure(code, message, fatal=fatal))


# -- navigation -------------------------------------------------------------------------

NAVIGATION = [
    ("a return answers with its rendered value",
     tool("r", ret("r", "hi {{name}}")), {"name": "Ana"}, writes(), "hi Ana"),
    ("the default output leads on",
     tool("s", script("s", "x", "v", to("r")), ret("r", "v={{v}}")), {}, writes(v=7), "v=7"),
    ("the first matching condition wins",
     tool("s", script("s", "x", "v", to("no"), conditions=[
         when("big", "v", "greaterThan", "5", to("yes"))]),
         ret("yes", "big"), ret("no", "small")), {}, writes(v=9), "big"),
    ("no matching condition takes the default",
     tool("s", script("s", "x", "v", to("no"), conditions=[
         when("big", "v", "greaterThan", "5", to("yes"))]),
         ret("yes", "big"), ret("no", "small")), {}, writes(v=1), "small"),
    ("a child's return is its caller's output variable",
     tool("c", call("c", "child", "got", to("r"), inputs={"n": "{{name}}"}), ret("r", "<{{got}}>")),
     {"name": "Bo"}, writes(), "<child of Bo>"),
]


@pytest.mark.parametrize(("why", "definition", "variables", "outcomes", "expected"), NAVIGATION,
                         ids=[row[0] for row in NAVIGATION])
def test_each_navigation_case_answers_as_its_row_says(
        why: str, definition: dict[str, Any], variables: dict[str, Any], outcomes: Any,
        expected: str) -> None:
    tools = {"pt": definition, "child": tool("r", ret("r", "child of {{n}}"))}
    run = Driver(tools, outcomes).run(command("pt", variables=variables))
    assert (run.result.ok, run.result.result) == (True, expected)


# -- guardrails ---------------------------------------------------------------------------

def chain(depth: int) -> dict[str, dict[str, Any]]:
    """pt0 calls pt1 ... calls pt{depth}, which returns."""
    tools = {f"pt{i}": tool("c", call("c", f"pt{i + 1}", "v", to("r")), ret("r", "{{v}}"))
             for i in range(depth)}
    tools[f"pt{depth}"] = tool("r", ret("r", "deep"))
    return tools


GUARDRAILS = [
    ("six tools deep (depths 0 to 5) run", chain(5), Limits(), True, "deep"),
    ("a seventh fails with the depth message", chain(6), Limits(), False, "tool_depth_exceeded"),
    ("a tool calling itself is a cycle",
     {"pt0": tool("c", call("c", "pt0", "v", to("r")), ret("r", "{{v}}"))}, Limits(), False,
     "tool_cycle"),
    ("a loop of blocks stops at max_hops",
     {"pt0": tool("a", script("a", "x", "v", to("b")), script("b", "x", "v", to("a")))},
     Limits(max_hops=20), False, "tool_loop"),
    ("too many invocations in one tree", chain(3), Limits(max_invocations=2), False,
     "tool_invocations_exceeded"),
    ("a callTool to an unpublished tool fails the block",
     {"pt0": tool("c", call("c", "nowhere", "v", to("r")), ret("r", "{{v}}"))}, Limits(), False,
     "tool_not_published"),
]


@pytest.mark.parametrize(("why", "tools", "limits", "ok", "expected"), GUARDRAILS,
                         ids=[row[0] for row in GUARDRAILS])
def test_each_guardrail_ends_the_tree_as_its_row_says(
        why: str, tools: dict[str, dict[str, Any]], limits: Limits, ok: bool, expected: str) -> None:
    run = Driver(tools, writes(v=1), Machine(limits)).run(command("pt0"))
    assert run.result.ok is ok
    assert (run.result.result if ok else run.result.error and run.result.error.code) == expected


# -- the error table ------------------------------------------------------------------------

ERRORS = [
    ("blocking fails the tool with the block's error", "blocking", False, False, "http_status"),
    ("continue writes the error variable and goes on", "continue", False, True, "e=boom"),
    ("a fatal error ignores continue", "continue", True, False, "http_status"),
]


@pytest.mark.parametrize(("why", "on_error", "fatal", "ok", "expected"), ERRORS,
                         ids=[row[0] for row in ERRORS])
def test_each_error_case_follows_on_error_as_its_row_says(
        why: str, on_error: str, fatal: bool, ok: bool, expected: str) -> None:
    tools = {"pt": tool("h", http("h", "http://x", to("r"), on_error=on_error, errorVariable="err"),
                        ret("r", "e={{err}}"))}
    run = Driver(tools, failing("http_status", "boom", fatal)).run(command("pt"))
    assert run.result.ok is ok
    assert (run.result.result if ok else run.result.error and run.result.error.code) == expected


def test_a_child_s_failure_follows_the_caller_s_on_error() -> None:
    tools = {"pt": tool("c", call("c", "child", "v", to("r"), on_error="continue",
                                  error_variable="e"), ret("r", "caught: {{e}}")),
             "child": tool("h", http("h", "http://x", to("r"))) | {"blocks": {
                 "h": http("h", "http://x", to("r")), "r": ret("r", "never")}}}
    run = Driver(tools, failing("http_timeout", "sem resposta")).run(command("pt"))
    assert (run.result.ok, run.result.result) == (True, "caught: sem resposta")


# -- the deadline ---------------------------------------------------------------------------

def test_a_step_after_the_deadline_aborts_the_tree_with_the_seed_message() -> None:
    tools = {"pt": tool("a", script("a", "x", "v", to("b")), script("b", "x", "v", to("r")),
                        ret("r", "late"))}
    driver = Driver(tools, writes(v=1), Machine(Limits(tool_timeout_ms=5_000)), tick_ms=3_000)
    run = driver.run(command("pt"))
    assert run.result.error is not None
    assert (run.result.error.code, run.result.error.message) == (
        "tool_timeout", "tool timeout (>5s): publishedToolId=pt")
    assert run.log[-1].type == "aborted"


def test_the_deadline_of_a_child_is_its_root_s() -> None:
    tools = {"pt": tool("c", call("c", "child", "v", to("r")), ret("r", "{{v}}")),
             "child": tool("a", script("a", "x", "v", to("b")), script("b", "x", "v", to("r")),
                           ret("r", "late"))}
    driver = Driver(tools, writes(v=1), Machine(Limits(tool_timeout_ms=5_000)), tick_ms=2_000)
    run = driver.run(command("pt"))
    assert run.result.error is not None and run.result.error.code == "tool_timeout"
    (aborted,) = [e for e in run.log if e.type == "aborted"]
    assert aborted.execId.startswith("0-root.")  # the child's step found the tree overdue


# -- run-ahead ------------------------------------------------------------------------------

def test_a_return_after_a_block_is_decided_in_the_same_transition() -> None:
    tools = {"pt": tool("s", script("s", "x", "v", to("r")), ret("r", "{{v}}"))}
    run = Driver(tools, writes(v="done")).run(command("pt"))
    # start (+ settle: the first block needs I/O, so it stays a step), then one transition
    # for the script block whose return is settled inside it: two commits, not three.
    assert run.transitions == 2
    assert [e.type for e in run.log] == ["started", "block", "block", "finished"]


def test_settle_answers_a_guardrail_without_another_hop() -> None:
    machine = Machine(Limits(max_hops=1))
    tools = {"pt": tool("a", script("a", "x", "v", to("b")), script("b", "x", "v", to("r")),
                        ret("r", "x"))}
    run = Driver(tools, writes(v=1), machine).run(command("pt"))
    assert run.result.error is not None and run.result.error.code == "tool_loop"
    assert run.transitions == 2  # the loop guard fired while settling block a's transition
