"""The run-ahead of before issue 18, kept as the oracle of tests/machine/test_incremental.py.

It rebuilt the whole transition on every fuse and planned every step again on every settle
and every round; runtime/runahead.py now builds the same transitions incrementally. Frozen
on purpose: the two must decide the same, so this copy changes only if the contract does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import structlog

from chatflow.runtime.machine import Machine
from chatflow.runtime.runahead import INERT_BLOCKS, Definitions, LoadStates, RunBlock
from chatflow.runtime.state import ExecState, StepMsg, Transition
from chatflow.schemas.definition import RunnableBlock, ToolDefinition

log = structlog.get_logger("tests.reference_runahead")


def _now_ms() -> int:
    return int(time.time() * 1000)


async def _known_only(_partition: int,
                      wanted: list[tuple[str, ExecState | None]]) -> list[ExecState | None]:
    return [known for _, known in wanted]


class ReferenceRunAhead:
    """Carry transitions on within one hop while their next step needs no outside world.

    Without ``run_block`` it settles and resumes parents the transition itself wrote, and
    runs no block; without ``load_states`` only such parents resume inline."""

    def __init__(self, machine: Machine, definitions: Definitions, *,
                 run_block: RunBlock | None = None, load_states: LoadStates | None = None,
                 clock: Callable[[], int] = _now_ms, budget_ms: int = 3_000) -> None:
        self.machine = machine
        self.definitions = definitions
        self.run_block = run_block
        self.load_states = load_states or _known_only
        self.clock = clock
        self.budget_ms = budget_ms

    async def carry(self, partition: int,
                    transitions: Sequence[Transition | None]) -> list[Transition | None]:
        """``transitions`` (one per step of a batch; None for nothing to commit) carried on:
        settled, then in rounds, each round resuming waiting parents and running one inert
        block per transition, all of them concurrently. What is left (an httpCall, a
        callAI...) stays a step entry for the next hop. The rounds stop after ``budget_ms``,
        so the other entries of a batch are not held for long. The input is not changed."""
        now = self.clock()
        carried = [t and self.settle(t, now) for t in transitions]
        limits = self.machine.limits
        until = self.clock() + self.budget_ms
        for _ in range(limits.max_hops * (limits.max_depth + 1) + 1):
            await self._resume_parents(partition, carried, self.clock())
            now = self.clock()
            if now >= until or self.run_block is None:
                break  # a long chain of slow scripts: the rest goes on as step entries
            work: list[tuple[int, int, ExecState, RunnableBlock]] = []
            for ti, t in enumerate(carried):
                found = t and self._next_inert(t, now)
                if found:
                    work.append((ti, *found))
            if not work:
                break
            run_block = self.run_block
            done = await asyncio.gather(*(run_block(state, block) for _, _, state, block in work))
            now = self.clock()
            for (ti, si, _, _), outcome in zip(work, done, strict=True):
                t = carried[ti]
                assert t is not None
                carried[ti] = self.settle(_fuse(t, si, outcome), now)
        return carried

    def settle(self, t: Transition, now: int) -> Transition:
        """``t`` with every next block that needs no I/O (a return, or a guardrail that ends
        the tool) decided inside it. Pure: ``t`` is not changed."""
        for _ in range(self.machine.limits.max_hops + 1):
            for i, step in enumerate(t.steps):
                state = _running(t, step)
                if state is None:
                    continue
                definition = self.definitions(state.defHash)
                planned = self.machine.plan(state, definition, now) if definition else None
                if isinstance(planned, Transition):
                    t = _fuse(t, i, planned)
                    break
            else:
                return t
        return t

    def _next_inert(self, t: Transition, now: int) -> tuple[int, ExecState, RunnableBlock] | None:
        """The first run step of ``t`` whose next block is inert, with its state."""
        for i, step in enumerate(t.steps):
            state = _running(t, step)
            definition = self.definitions(state.defHash) if state is not None else None
            if state is None or definition is None:
                continue
            planned = self.machine.plan(state, definition, now)
            if not isinstance(planned, Transition) and planned.type in INERT_BLOCKS:
                return i, state, planned
        return None

    async def _resume_parents(self, partition: int, carried: list[Transition | None],
                              now: int) -> None:
        """A child that finished hands its parent a ``resume`` step; continue the parent in
        the same commit instead, up the tree while it can. A parent this very transition
        wrote (it spawned the child) is taken from it; others are loaded, one call for all."""
        for _ in range(self.machine.limits.max_depth + 1):
            wanted: list[tuple[int, str, ExecState | None]] = []
            for i, t in enumerate(carried):
                if t is None:
                    continue
                for step in t.steps:
                    if step.kind == "resume":
                        wanted.append((i, step.exec_id, _written(t, step.exec_id)))
            if not wanted:
                return
            parents = await self.load_states(partition, [(e, w) for _, e, w in wanted])
            progressed = False
            for (i, _, _), parent in zip(wanted, parents, strict=True):
                t = carried[i]
                definition = self.definitions(parent.defHash) if parent else None
                if t is None or parent is None or definition is None:
                    continue
                try:
                    resumed = self._resume_inline(t, parent, definition, now)
                except Exception as exc:  # leave the resume step to run on its own
                    log.error("inline resume failed", exec_id=parent.execId, exc_info=exc)
                    continue
                if resumed is not t:
                    carried[i] = self.settle(resumed, now)
                    progressed = True
            if not progressed:
                return

    def _resume_inline(self, t: Transition, parent: ExecState, definition: ToolDefinition,
                       now: int) -> Transition:
        """``t`` with a child's ``resume`` step for ``parent`` replaced by the parent's own
        transition, guarded by the parent's version; ``t`` itself when it has none."""
        for i, step in enumerate(t.steps):
            if (step.kind == "resume" and step.exec_id == parent.execId and step.child is not None
                    and parent.version == step.version and parent.status == "waiting"):
                return _fuse(t, i, self.machine.after_child(parent, definition, step.child, now))
        return t


def _written(t: Transition, exec_id: str) -> ExecState | None:
    return next((w for w in reversed(t.writes) if w.execId == exec_id), None)


def _running(t: Transition, step: StepMsg) -> ExecState | None:
    """The state a ``run`` step of ``t`` would advance, if ``t`` wrote it and it still runs."""
    if step.kind != "run":
        return None
    state = _written(t, step.exec_id)
    if state is None or state.version != step.version or state.status != "running":
        return None
    return state


def _fuse(first: Transition, index: int, second: Transition) -> Transition:
    """``first`` with its step ``index`` replaced by what ``second`` decided for it."""
    writes: dict[str, ExecState] = {}
    for state in [*first.writes, *second.writes]:
        writes.pop(state.execId, None)
        writes[state.execId] = state  # a later version of the same execution: keep it, last
    written = {w.execId for w in first.writes}
    extra = [e for e in [second.expect, *second.also_expect] if e is not None and e != first.expect
             and e[0] not in written]
    return Transition(
        expect=first.expect,
        also_expect=[*first.also_expect, *extra],
        writes=list(writes.values()),
        steps=[*first.steps[:index], *first.steps[index + 1:], *second.steps],
        emits=[*first.emits, *second.emits],
        log=[*first.log, *second.log],
        definitions={**first.definitions, **second.definitions},
        finishes_root=first.finishes_root or second.finishes_root,
        done=[*first.done, *second.done],
    )
