"""Run-ahead builds its transitions incrementally (runtime/runahead.py): it decides exactly
what the full rebuild of before decided (tests/machine/reference_runahead.py, the oracle),
byte for byte, and plans each step once."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.limits import Limits
from chatflow.runtime.machine import Machine
from chatflow.runtime.outcome import BlockOutcome
from chatflow.runtime.runahead import RunAhead
from chatflow.runtime.state import ExecState, Transition
from chatflow.schemas.definition import ToolDefinition
from tests.core.tools import call, http, ret, script, to, tool
from tests.machine.driver import Driver, Outcomes, command
from tests.machine.reference_runahead import ReferenceRunAhead
from tests.machine.test_properties import CASES, outcome_tables, tools
from tests.machine.test_tables import writes

LIMITS = Limits(max_hops=12, tool_timeout_ms=20_000)


def outcomes(table: dict[str, int | str]) -> Outcomes:
    def outcome(_state: Any, block: Any) -> BlockOutcome:
        value = table.get(block.id, 1)
        if isinstance(value, str):
            return BlockOutcome(error=ToolFailure(value, f"{block.id} failed"))
        return BlockOutcome(writes={"v": value})

    return outcome


@CASES
@given(tools(), outcome_tables, st.integers(0, 6_000), st.booleans())
def test_incremental_run_ahead_commits_the_same_transitions_as_the_full_rebuild(
        definitions: dict[str, dict[str, Any]], table: dict[str, int | str], block_ms: int,
        run_ahead: bool) -> None:
    def drive(ahead: Any) -> list[bytes]:
        driver = Driver(definitions, outcomes(table), Machine(LIMITS), run_ahead=run_ahead,
                        block_ms=block_ms, ahead=ahead)
        run = driver.run(command("pt"))
        assert len(run.results) == 1
        return run.committed

    assert drive(RunAhead) == drive(ReferenceRunAhead)


def own(definitions: dict[str, dict[str, Any]], i: int) -> dict[str, dict[str, Any]]:
    """The tools of batch entry ``i`` under names of their own: ``pt<i>``, ``child<i>``."""
    renamed = {}
    for pt, raw in definitions.items():
        blocks = {bid: {**b, "publishedToolId": f"{b['publishedToolId']}{i}"}
                  if b["type"] == "callTool" else b for bid, b in raw["blocks"].items()}
        renamed[f"{pt}{i}"] = {**raw, "blocks": blocks}
    return renamed


@CASES
@given(st.lists(st.tuples(tools(), outcome_tables), min_size=1, max_size=4),
       st.integers(0, 6_000))
def test_a_batch_carried_at_once_is_carried_as_the_full_rebuild_carries_it(
        batch: list[tuple[dict[str, dict[str, Any]], dict[str, int | str]]],
        block_ms: int) -> None:
    """Several transitions in one carry: rounds run one inert block of each, concurrently."""
    clock = [1_000]
    machine = Machine(LIMITS)
    drivers = [Driver(own(definitions, i), outcomes(table), machine)
               for i, (definitions, table) in enumerate(batch)]

    def definition(def_hash: str) -> ToolDefinition | None:
        return drivers[int(def_hash[-1])].definition(def_hash)

    async def run_block(state: ExecState, block: Any) -> Transition:
        clock[0] += block_ms
        result = drivers[int(state.defHash[-1])]._result(state, block)
        return machine.after_run(state, block, result, clock[0])

    def started() -> list[Transition | None]:
        out: list[Transition | None] = []
        for i, driver in enumerate(drivers):
            published = driver.published(f"pt{i}")
            assert published is not None
            out.append(machine.start(command(f"pt{i}"), published, f"pt{i}", b"",
                                     exec_id=f"0-root{i}", partition=0, now=1_000, debug=False))
        return [*out, None]  # an entry with nothing to commit stays None

    def carry(kind: Any) -> list[bytes]:
        clock[0] = 1_000
        ahead = kind(machine, definition, run_block=run_block, clock=lambda: clock[0],
                     budget_ms=2**40)
        given_ = started()
        before = [msgspec.json.encode(t) for t in given_]
        carried = asyncio.run(ahead.carry(0, given_))
        assert [msgspec.json.encode(t) for t in given_] == before  # the input is not changed
        return [msgspec.json.encode(t) for t in carried]

    assert carry(RunAhead) == carry(ReferenceRunAhead)


class Counting(Machine):
    plans = 0

    def plan(self, *args: Any, **kwargs: Any) -> Any:
        self.plans += 1
        return super().plan(*args, **kwargs)


def test_run_ahead_plans_each_step_of_a_tool_once() -> None:
    """callTool → (child: script → return) → return, answered in one hop: four steps, four
    plans (the full rebuild planned six: every settle and every round planned again)."""
    tools_ = {"pt": tool("c", call("c", "child", "o", to("r"), inputs={"n": "c"}),
                         ret("r", "<{{o}}>")),
              "child": tool("s", script("s", "x", "v", to("r")), ret("r", "{{v}}!"))}
    counts = {}
    for kind in (RunAhead, ReferenceRunAhead):
        machine = Counting()
        run = Driver(tools_, writes(v="c"), machine, run_ahead=True, ahead=kind).run(command("pt"))
        assert (run.result.result, run.transitions) == ("<c!>", 1)
        counts[kind.__name__] = machine.plans
    assert counts == {"RunAhead": 4, "ReferenceRunAhead": 6}


def test_a_block_planned_before_the_deadline_is_not_run_once_the_deadline_passed() -> None:
    """A remembered plan holds only until the tree's deadline: planned when the hop began,
    the script is not run when the clock has passed the deadline by the time the round
    would run it; the step is left for the next hop, whose machine aborts the tree."""
    tools_ = {"pt": tool("s", script("s", "x", "v", to("r")), ret("r", "{{v}}"))}
    ticks = iter(range(1_000, 10_000, 60))  # every reading of the clock is 60 ms later
    machine = Machine(Limits(tool_timeout_ms=100))
    driver = Driver(tools_, writes(v="x"), machine)
    published = driver.published("pt")
    assert published is not None
    ran: list[str] = []

    async def run_block(state: ExecState, block: Any) -> Transition:
        ran.append(block.id)
        return machine.after_block(state, block, BlockOutcome(writes={"v": "x"}), 9_999)

    first = machine.start(command("pt"), published, "pt", b"", exec_id="0-root", partition=0,
                          now=1_000, debug=False)
    ahead = RunAhead(machine, driver.definition, run_block=run_block,
                     clock=lambda: next(ticks), budget_ms=2**40)
    (carried,) = asyncio.run(ahead.carry(0, [first]))
    assert ran == []
    assert carried is first  # nothing decided in this hop: the step waits for the next


def test_a_parent_written_in_an_earlier_hop_is_read_and_resumed_as_the_full_rebuild_does() -> None:
    """The child's httpCall ends the first hop; in the second, the child returns and its
    parent, which that hop did not write, is read (``load_states``) and resumed inline,
    guarded by its version: the same commits as the full rebuild's, byte for byte."""
    tools_ = {"pt": tool("c", call("c", "child", "o", to("r"), inputs={"n": "c"}),
                         ret("r", "<{{o}}>")),
              "child": tool("h", http("h", "http://x", to("r")), ret("r", "{{v}}!"))}
    runs = {kind.__name__: Driver(tools_, writes(v="c"), run_ahead=True, ahead=kind).run(
        command("pt")) for kind in (RunAhead, ReferenceRunAhead)}
    run = runs["RunAhead"]
    assert (run.result.result, run.transitions) == ("<c!>", 2)
    assert run.committed == runs["ReferenceRunAhead"].committed
    last = msgspec.json.decode(run.committed[-1], type=Transition)
    assert last.finishes_root and last.also_expect == [("0-root", 3)]  # the waiting parent


class RaisingResume(Machine):
    """A machine that builds a parent's resume into the carried transition, then raises."""

    def after_child(self, *args: Any, **kwargs: Any) -> Any:
        super().after_child(*args, **kwargs)
        raise RuntimeError("resume failed after building its decision")


def test_a_resume_that_raises_leaves_nothing_of_it_in_the_carried_transition() -> None:
    """The parent's resume step is left for its own hop, as the full rebuild leaves it: what
    the machine had built into the carried transition before it raised is taken out."""
    tools_ = {"pt": tool("c", call("c", "child", "o", to("r"), inputs={"n": "c"}),
                         ret("r", "<{{o}}>")),
              "child": tool("r", ret("r", "{{n}}!"))}
    carried = {}
    for kind in (RunAhead, ReferenceRunAhead):
        machine = RaisingResume()
        driver = Driver(tools_, writes(), machine)
        published = driver.published("pt")
        assert published is not None
        first = machine.start(command("pt"), published, "pt", b"", exec_id="0-root",
                              partition=0, now=1_000, debug=False)

        async def run_block(state: ExecState, block: Any, m: Machine = machine,
                            d: Driver = driver) -> Transition:
            return m.after_run(state, block, d._result(state, block), 1_000)

        ahead = kind(machine, driver.definition, run_block=run_block, clock=lambda: 1_000)
        (t,) = asyncio.run(ahead.carry(0, [first]))
        assert t is not None
        carried[kind.__name__] = t
    t = carried["RunAhead"]
    assert msgspec.json.encode(t) == msgspec.json.encode(carried["ReferenceRunAhead"])
    assert [(s.kind, s.exec_id) for s in t.steps] == [("resume", "0-root")]
    assert not t.finishes_root and [e.type for e in t.log][-1] == "finished"
