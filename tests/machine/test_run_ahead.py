"""Run-ahead as one component (runtime/runahead.py) over a machine that never changes its
inputs: the same answers and the same event log as a step at a time, in fewer hops."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.limits import Limits
from chatflow.runtime.machine import Machine
from chatflow.runtime.outcome import BlockOutcome
from chatflow.runtime.runahead import RunAhead
from chatflow.runtime.state import ExecState, LogEntry, Transition
from tests.core.tools import call, http, ret, script, to, tool
from tests.machine.driver import Driver, Run, command
from tests.machine.test_properties import CASES, outcome_tables, tools
from tests.machine.test_tables import writes

LIMITS = Limits(max_hops=12, tool_timeout_ms=20_000)
WATCHED = ("plan", "after_run", "after_block", "spawn", "after_child", "load_failure", "abort", "fail")


class Untouching(Machine):
    """A Machine that fails the test when one of its calls changes a state it was given."""

    calls = 0


def _watch(name: str) -> Callable[..., Any]:
    method = getattr(Machine, name)

    def watched(self: Untouching, *args: Any, **kwargs: Any) -> Any:
        given_states = [a for a in [*args, *kwargs.values()] if isinstance(a, ExecState)]
        before = [msgspec.json.encode(s) for s in given_states]
        result = method(self, *args, **kwargs)
        after = [msgspec.json.encode(s) for s in given_states]
        assert after == before, f"Machine.{name} changed the state it was given"
        self.calls += 1
        return result

    return watched


for _name in WATCHED:
    setattr(Untouching, _name, _watch(_name))


def drive(definitions: dict[str, dict[str, Any]], table: dict[str, int | str], *,
          run_ahead: bool, machine: Machine | None = None) -> Run:
    def outcome(_state: Any, block: Any) -> BlockOutcome:
        value = table.get(block.id, 1)
        if isinstance(value, str):
            return BlockOutcome(error=ToolFailure(value, f"{block.id} failed"))
        return BlockOutcome(writes={"v": value})

    return Driver(definitions, outcome, machine or Machine(LIMITS),
                  run_ahead=run_ahead).run(command("pt"))


def decisions(log: list[LogEntry]) -> list[LogEntry]:
    """The log without its clock: when a block ran depends on the hops, what it decided not."""
    return [msgspec.structs.replace(e, at=0, durationMs=None) for e in log]


@CASES
@given(tools(), outcome_tables, st.booleans())
def test_the_machine_never_changes_a_state_it_is_given(
        definitions: dict[str, dict[str, Any]], table: dict[str, int | str],
        run_ahead: bool) -> None:
    machine = Untouching(LIMITS)
    run = drive(definitions, table, run_ahead=run_ahead, machine=machine)
    assert len(run.results) == 1
    assert machine.calls > 0


@CASES
@given(tools(), outcome_tables)
def test_running_ahead_decides_what_a_step_at_a_time_decides_in_no_more_hops(
        definitions: dict[str, dict[str, Any]], table: dict[str, int | str]) -> None:
    stepped = drive(definitions, table, run_ahead=False)
    ahead = drive(definitions, table, run_ahead=True)
    assert [(r.ok, r.result, r.error) for r in ahead.results] == [
        (r.ok, r.result, r.error) for r in stepped.results]
    assert decisions(ahead.log) == decisions(stepped.log)
    assert ahead.transitions <= stepped.transitions
    assert ahead.states.keys() == stepped.states.keys()
    for exec_id, state in ahead.states.items():
        assert state.variables == stepped.states[exec_id].variables, exec_id


def test_a_tool_of_scripts_calltools_and_returns_answers_in_the_hop_of_its_command() -> None:
    tools_ = {"pt": tool("c", call("c", "child", "o", to("r"), inputs={"n": "c"}),
                         ret("r", "<{{o}}>")),
              "child": tool("s", script("s", "x", "v", to("r")), ret("r", "{{v}}!"))}
    run = Driver(tools_, writes(v="c"), run_ahead=True).run(command("pt"))
    assert (run.result.ok, run.result.result) == (True, "<c!>")
    assert run.transitions == 1  # the child ran, returned and resumed its parent inline
    assert [e.type for e in run.log] == ["started", "spawned", "started", "block", "block",
                                         "finished", "block", "block", "finished"]


def test_an_http_block_takes_its_own_hop_and_the_inert_blocks_after_it_ride_along() -> None:
    tools_ = {"pt": tool("a", script("a", "x", "a", to("h")), http("h", "http://x", to("b")),
                         script("b", "x", "b", to("r")), ret("r", "{{a}}-{{b}}"))}
    run = Driver(tools_, writes(a=1, b=2), run_ahead=True).run(command("pt"))
    assert (run.result.ok, run.result.result) == (True, "1-2")
    assert run.transitions == 2  # the command's hop (script a), then the httpCall's


def started(tools_: dict[str, dict[str, Any]]) -> tuple[Driver, Transition]:
    """The intake's transition for a command to run ``pt``, before run-ahead."""
    driver = Driver(tools_)
    published = driver.published("pt")
    assert published is not None
    return driver, Machine().start(command("pt"), published, "pt", b"", exec_id="0-root",
                                   partition=0, now=1_000, debug=False)


def test_carrying_a_transition_on_leaves_the_given_transition_as_it_was() -> None:
    driver, first = started({"pt": tool("s", script("s", "x", "v", to("r")), ret("r", "{{v}}"))})
    before = msgspec.json.encode(first)

    async def run_block(state: ExecState, block: Any) -> Transition:
        return Machine().after_block(state, block, BlockOutcome(writes={"v": "done"}), 1_001)

    ahead = RunAhead(Machine(), driver.definition, run_block=run_block, clock=lambda: 1_001)
    (carried,) = asyncio.run(ahead.carry(0, [first]))
    assert msgspec.json.encode(first) == before
    assert carried is not None and carried.finishes_root
    assert [e.type for e in carried.log] == ["started", "block", "block", "finished"]


def test_settling_answers_a_return_without_running_a_block() -> None:
    driver, first = started({"pt": tool("r", ret("r", "hi"))})
    settled = RunAhead(Machine(), driver.definition).settle(first, 1_000)
    assert settled.finishes_root and not settled.steps
    assert first.steps and not first.finishes_root  # the given transition is as it was


def test_run_ahead_stops_at_its_budget_and_leaves_the_next_block_as_a_step() -> None:
    driver, first = started({"pt": tool("a", script("a", "x", "v", to("b")),
                                        script("b", "x", "v", to("c")),
                                        script("c", "x", "v", to("r")), ret("r", "{{v}}"))})
    clock = [1_000]

    async def slow_block(state: ExecState, block: Any) -> Transition:
        clock[0] += 60  # each script takes 60 ms
        return Machine().after_block(state, block, BlockOutcome(writes={"v": block.id}), clock[0])

    ahead = RunAhead(Machine(), driver.definition, run_block=slow_block,
                     clock=lambda: clock[0], budget_ms=100)
    (carried,) = asyncio.run(ahead.carry(0, [first]))
    assert carried is not None and not carried.finishes_root
    assert [e.blockId for e in carried.log if e.type == "block"] == ["a", "b"]
    (step,) = carried.steps  # script c waits for the next hop
    (state,) = carried.writes
    assert (step.exec_id, step.version, state.block) == ("0-root", state.version, "c")
