"""Run-ahead: carry transitions on inside the hop that produced them.

The state machine (runtime/machine.py) decides one step. A stream hop costs a round
trip through Valkey, so whatever the next step needs no outside world for is decided in
the same commit instead, by :class:`RunAhead`, the one place that does it:

* **settle**: a next block that is a ``return``, or a guardrail that ends the tool
  (deadline, loop, a missing block), is decided at once;
* **inert blocks**: a next block in ``INERT_BLOCKS`` runs now (through the injected
  ``run_block``, the only I/O here) and its transition is folded in;
* **waiting parents**: a finished child's ``resume`` step continues its parent in the
  same commit, guarded by an extra expected version on the parent.

Each block still gets its own log entry and debug event; only the number of hops
changes. Intake, the step processor and the inline runner each call :meth:`RunAhead.carry`
once per hop; nothing else produces a transition that is ready to commit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

import structlog

from chatflow.schemas.definition import RunnableBlock, ToolDefinition

from .machine import Machine
from .state import ExecState, StepMsg, Transition

log = structlog.get_logger("chatflow.runahead")

# Blocks with no effect outside the runtime: a script in a V8 sandbox with no host access,
# and a callTool, whose only I/O reads the child's definition. Running one again after a
# crash changes nothing outside, so a handler may run it in whichever hop reaches it.
INERT_BLOCKS = frozenset({"executeScript", "callTool"})

Definitions = Callable[[str], ToolDefinition | None]
# Runs one block of ``state`` and returns the transition it made (never raises for the
# block's own failures: those are transitions too).
RunBlock = Callable[[ExecState, RunnableBlock], Awaitable[Transition]]
# The states of ``(execId, known)`` in ``partition``: ``known`` when given, else read.
# It also makes their definitions available to ``Definitions``.
# Runs a round's blocks (one per carried transition), all at once, in order: a batch can
# read what its blocks need in one round trip and skip a task per block.
RunBlocks = Callable[[list[tuple[ExecState, RunnableBlock]]], Awaitable[list[Transition]]]
LoadStates = Callable[[int, list[tuple[str, ExecState | None]]],
                      Awaitable[list[ExecState | None]]]


def _now_ms() -> int:
    return int(time.time() * 1000)


async def _known_only(_partition: int,
                      wanted: list[tuple[str, ExecState | None]]) -> list[ExecState | None]:
    return [known for _, known in wanted]


class RunAhead:
    """Carry transitions on within one hop while their next step needs no outside world.

    Without ``run_block`` it settles and resumes parents the transition itself wrote, and
    runs no block; without ``load_states`` only such parents resume inline."""

    def __init__(self, machine: Machine, definitions: Definitions, *,
                 run_block: RunBlock | None = None, load_states: LoadStates | None = None,
                 clock: Callable[[], int] = _now_ms, budget_ms: int = 3_000,
                 run_blocks: RunBlocks | None = None) -> None:
        """``run_blocks``, when given, runs each round's blocks instead of ``run_block``."""
        self.machine = machine
        self.definitions = definitions
        self.run_block = run_block
        self.run_blocks = run_blocks
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
        carried = [None if t is None else _Carried(t) for t in transitions]
        for c in carried:
            if c is not None:
                self._settle(c, now)
        limits = self.machine.limits
        until = self.clock() + self.budget_ms
        for _ in range(limits.max_hops * (limits.max_depth + 1) + 1):
            await self._resume_parents(partition, carried, self.clock())
            now = self.clock()
            if now >= until or (self.run_block is None and self.run_blocks is None):
                break  # a long chain of slow scripts: the rest goes on as step entries
            work: list[tuple[_Carried, int, ExecState, RunnableBlock]] = []
            for c in carried:
                found = None if c is None else self._next_inert(c, now)
                if c is not None and found is not None:
                    work.append((c, *found))
            if not work:
                break
            run_block = self.run_block
            if self.run_blocks is not None:
                done = await self.run_blocks([(state, block) for _, _, state, block in work])
            elif run_block is None:
                break
            elif len(work) == 1:  # the usual case: no task, no trip round the event loop
                _, _, state, block = work[0]
                done = [await run_block(state, block)]
            else:
                done = await asyncio.gather(*(run_block(state, block)
                                              for _, _, state, block in work))
            now = self.clock()
            for (c, si, _, _), outcome in zip(work, done, strict=True):
                c.fuse(si, outcome)
                self._settle(c, now)
        return [None if c is None else c.transition() for c in carried]

    def settle(self, t: Transition, now: int) -> Transition:
        """``t`` with every next block that needs no I/O (a return, or a guardrail that ends
        the tool) decided inside it. Pure: ``t`` is not changed."""
        carried = _Carried(t)
        self._settle(carried, now)
        return carried.transition()

    def _settle(self, c: _Carried, now: int) -> None:
        """Decide in ``c`` every run step whose next block needs no I/O, in one pass.

        A settled step's transition ends its execution, so it adds no run step and changes
        no other execution's state: a step planned to a block stays planned to it, and the
        pass goes on from the index it fused at instead of starting over."""
        fused, limit = 0, self.machine.limits.max_hops + 1
        steps = c.steps
        i = 0
        while i < len(steps) and fused < limit:
            planned = self._plan(c, steps[i], now)
            if isinstance(planned, Transition):
                c.fuse(i, planned)
                steps = c.steps  # the first fuse gives ``c`` lists of its own
                fused += 1
            else:
                i += 1

    def _plan(self, c: _Carried, step: StepMsg, now: int) -> RunnableBlock | Transition | None:
        """What the machine plans for ``step`` of ``c`` (None: not a run step ``c`` can
        advance). A block planned once is remembered: planning reads only the state, the
        definition and, for the deadline, ``now``, so until that deadline it is the same."""
        state = c.running(step)
        if state is None:
            return None
        key = (step.exec_id, step.version)
        block = c.planned.get(key)
        if block is not None and now <= state.deadlineMs:
            return block
        definition = self.definitions(state.defHash)
        if definition is None:
            return None
        planned = self.machine.plan(state, definition, now)
        if not isinstance(planned, Transition):
            c.planned[key] = planned
        return planned

    def _next_inert(self, c: _Carried, now: int) -> tuple[int, ExecState, RunnableBlock] | None:
        """The first run step of ``c`` whose next block is inert, with its state."""
        for i, step in enumerate(c.steps):
            planned = self._plan(c, step, now)
            if planned is not None and not isinstance(planned, Transition) \
                    and planned.type in INERT_BLOCKS:
                return i, c.writes[step.exec_id], planned
        return None

    async def _resume_parents(self, partition: int, carried: list[_Carried | None],
                              now: int) -> None:
        """A child that finished hands its parent a ``resume`` step; continue the parent in
        the same commit instead, up the tree while it can. A parent this very transition
        wrote (it spawned the child) is taken from it; others are loaded, one call for all."""
        for _ in range(self.machine.limits.max_depth + 1):
            wanted: list[tuple[_Carried, str, ExecState | None]] = []
            for c in carried:
                if c is None:
                    continue
                for step in c.steps:
                    if step.kind == "resume":
                        wanted.append((c, step.exec_id, c.writes.get(step.exec_id)))
            if not wanted:
                return
            parents = await self._parents(partition, [(e, w) for _, e, w in wanted])
            progressed = False
            for (c, _, _), parent in zip(wanted, parents, strict=True):
                definition = self.definitions(parent.defHash) if parent else None
                if parent is None or definition is None:
                    continue
                try:
                    resumed = self._resume_inline(c, parent, definition, now)
                except Exception as exc:  # leave the resume step to run on its own
                    log.error("inline resume failed", exec_id=parent.execId, exc_info=exc)
                    continue
                if resumed:
                    self._settle(c, now)
                    progressed = True
            if not progressed:
                return

    async def _parents(self, partition: int,
                       wanted: list[tuple[str, ExecState | None]]) -> list[ExecState | None]:
        parents = [known for _, known in wanted]
        if None not in parents:
            # The usual case: the child's own transition wrote its parent (it spawned it in
            # this hop), so there is nothing to read and no call to ``load_states`` to await.
            return parents
        return await self.load_states(partition, wanted)

    def _resume_inline(self, c: _Carried, parent: ExecState, definition: ToolDefinition,
                       now: int) -> bool:
        """Replace in ``c`` a child's ``resume`` step for ``parent`` by the parent's own
        transition, guarded by the parent's version; False when ``c`` has no such step."""
        for i, step in enumerate(c.steps):
            if (step.kind == "resume" and step.exec_id == parent.execId and step.child is not None
                    and parent.version == step.version and parent.status == "waiting"):
                resumed = self.machine.after_child(parent, definition, step.child, now)
                c.fuse(i, resumed)  # only once the machine decided: a raise leaves ``c`` as is
                return True
        return False


class _Carried:
    """A transition being carried on, built in place.

    Until its first fuse it reads the given transition's lists; the first fuse copies them
    once, and every fuse after appends to them (a fuse used to rebuild every list). The
    states it writes are a dict by execution, so the state a step advances is one lookup.
    ``planned`` remembers the block planned for each run step (see ``RunAhead._plan``)."""

    __slots__ = ("also_expect", "definitions", "done", "emits", "expect", "finishes_root",
                 "given", "log", "owned", "planned", "steps", "writes")

    def __init__(self, t: Transition) -> None:
        self.given = t
        self.owned = False
        self.expect = t.expect
        self.also_expect = t.also_expect
        # The last write of an execution wins and goes last, as a fuse has always ordered them.
        self.writes: dict[str, ExecState] = {}
        for state in t.writes:
            self.writes.pop(state.execId, None)
            self.writes[state.execId] = state
        self.steps = t.steps
        self.emits = t.emits
        self.log = t.log
        self.definitions = t.definitions
        self.finishes_root = t.finishes_root
        self.done = t.done
        self.planned: dict[tuple[str, int], RunnableBlock] = {}

    def running(self, step: StepMsg) -> ExecState | None:
        """The state a ``run`` step would advance, if this transition wrote it and it runs."""
        if step.kind != "run":
            return None
        state = self.writes.get(step.exec_id)
        if state is None or state.version != step.version or state.status != "running":
            return None
        return state

    def fuse(self, index: int, second: Transition) -> None:
        """Replace step ``index`` by what ``second`` decided for it."""
        if not self.owned:
            self.owned = True
            self.also_expect = list(self.also_expect)
            self.steps = list(self.steps)
            self.emits = list(self.emits)
            self.log = list(self.log)
            self.definitions = dict(self.definitions)
            self.done = list(self.done)
        writes = self.writes
        # A check on an execution this transition already writes is implied by the write.
        # (No tuple of all the checks built per fuse: ``also_expect`` is nearly always empty.)
        expected = second.expect
        if expected is not None and expected != self.expect and expected[0] not in writes:
            self.also_expect.append(expected)
        for expected in second.also_expect:
            if expected != self.expect and expected[0] not in writes:
                self.also_expect.append(expected)
        for state in second.writes:
            writes.pop(state.execId, None)
            writes[state.execId] = state  # a later version of the same execution: keep it, last
        steps = self.steps
        if index == len(steps) - 1:  # the usual case: the last step, replaced at the end
            steps.pop()
        else:
            del steps[index]
        steps.extend(second.steps)
        if second.emits:
            self.emits.extend(second.emits)
        self.log.extend(second.log)
        if second.definitions:
            self.definitions.update(second.definitions)
        if second.finishes_root:
            self.finishes_root = True
        if second.done:
            self.done.extend(second.done)

    def transition(self) -> Transition:
        """The transition as built: the given one itself when nothing was fused into it."""
        if not self.owned:
            return self.given
        return Transition(expect=self.expect, also_expect=self.also_expect,
                          writes=list(self.writes.values()), steps=self.steps, emits=self.emits,
                          log=self.log, definitions=self.definitions,
                          finishes_root=self.finishes_root, done=self.done)
