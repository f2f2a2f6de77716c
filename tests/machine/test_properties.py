"""Properties of the pure state machine over generated tools (Hypothesis, no Redis):
one answer per tree, a version only grows, and replaying the event log decides the same."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.limits import Limits
from chatflow.runtime.machine import Machine
from chatflow.runtime.outcome import BlockOutcome
from chatflow.runtime.replay import replay
from chatflow.schemas.definition import ToolDefinition
from tests.core.tools import call, http, ret, script, to, tool, when
from tests.machine.driver import Driver, Run, command

BLOCKS = 4
MACHINE = Machine(Limits(max_hops=12, tool_timeout_ms=20_000))  # the run's and the replay's


@st.composite
def tools(draw: st.DrawFn) -> dict[str, dict[str, Any]]:
    """A tool of a few blocks wired at random (loops included), maybe calling a child."""
    ids = [f"b{i}" for i in range(BLOCKS)]
    targets = st.sampled_from([*ids, "r"])
    blocks = [ret("r", "v={{v}} e={{e}}")]
    for block_id in ids:
        nxt, other = to(draw(targets)), to(draw(targets))
        on_error = draw(st.sampled_from(["blocking", "continue"]))
        kind = draw(st.sampled_from(["script", "http", "call"]))
        conditions = [when(f"{block_id}-c", "v", "greaterThan", "50", other)]
        if kind == "script":
            blocks.append(script(block_id, "x", "v", nxt, conditions=conditions,
                                 on_error=on_error, error_variable="e"))
        elif kind == "http":
            blocks.append(http(block_id, "http://x", nxt, on_error=on_error, errorVariable="e",
                               conditions=conditions))
        else:
            blocks.append(call(block_id, "child", "v", nxt, on_error=on_error, error_variable="e"))
    child = tool("s", script("s", "x", "v", to("r")), ret("r", "{{v}}"))
    return {"pt": tool(draw(st.sampled_from(ids)), *blocks), "child": child}


outcome_tables = st.dictionaries(
    st.sampled_from(["b0", "b1", "b2", "b3", "s"]),
    st.one_of(st.integers(0, 100), st.sampled_from(["http_status", "script_error"])),
)


def drive(definitions: dict[str, dict[str, Any]], table: dict[str, int | str], tick_ms: int) -> Run:
    def outcome(_state: Any, block: Any) -> BlockOutcome:
        value = table.get(block.id, 1)
        if isinstance(value, str):
            return BlockOutcome(error=ToolFailure(value, f"{block.id} failed"))
        return BlockOutcome(writes={"v": value})

    return Driver(definitions, outcome, MACHINE, tick_ms=tick_ms).run(command("pt"))


CASES = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@CASES
@given(tools(), outcome_tables, st.integers(1, 4_000))
def test_every_tree_answers_exactly_once(definitions: dict[str, dict[str, Any]],
                                         table: dict[str, int | str], tick_ms: int) -> None:
    run = drive(definitions, table, tick_ms)
    assert len(run.results) == 1
    result = run.result
    assert result.ok == (result.error is None)


@CASES
@given(tools(), outcome_tables, st.integers(1, 4_000))
def test_a_version_only_grows(definitions: dict[str, dict[str, Any]],
                              table: dict[str, int | str], tick_ms: int) -> None:
    run = drive(definitions, table, tick_ms)
    for exec_id, versions in run.versions.items():
        assert versions == sorted(set(versions)), exec_id


@CASES
@given(tools(), outcome_tables, st.integers(1, 4_000))
def test_replaying_the_event_log_decides_the_same(definitions: dict[str, dict[str, Any]],
                                                   table: dict[str, int | str], tick_ms: int) -> None:
    run = drive(definitions, table, tick_ms)
    parsed = {pt: ToolDefinition.model_validate(raw) for pt, raw in definitions.items()}
    report = replay(run.log, parsed, MACHINE)
    assert report.ok, report.first
    assert report.executions == len({e.execId for e in run.log})
