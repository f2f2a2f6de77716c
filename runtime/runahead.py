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
        advanced, then in rounds, each round resuming waiting parents it had to load and
        running one inert block per transition, all of them concurrently. What is left (an
        httpCall, a callAI...) stays a step entry for the next hop. The rounds stop after
        ``budget_ms``, so the other entries of a batch are not held for long. The input is
        not changed."""
        now = self.clock()
        carried = [None if t is None else _Carried(t) for t in transitions]
        live = [c for c in carried if c is not None]
        for c in live:
            self._advance(c, now, resume=True)
        limits = self.machine.limits
        until = self.clock() + self.budget_ms
        for _ in range(limits.max_hops * (limits.max_depth + 1) + 1):
            if self.load_states is not _known_only:
                # Only a parent this transition did not write is still waiting here (one it
                # wrote was resumed by ``_advance``): those are read, one call for all.
                await self._resume_loaded(partition, live)
            now = self.clock()
            if now >= until or (self.run_block is None and self.run_blocks is None):
                break  # a long chain of slow scripts: the rest goes on as step entries
            # The inert block ``_advance`` found for each, unless the tree's deadline passed
            # since it was planned (planning then aborts: the step waits for the next hop).
            work = [(c, c.inert) for c in live
                    if c.inert is not None and now <= c.inert[1].deadlineMs]
            if not work:
                break
            done = await self._run([(state, block) for _, (_, state, block) in work])
            now = self.clock()
            for (c, (step, _, _)), outcome in zip(work, done, strict=True):
                c.fuse(_index(c.steps, step), outcome)
                self._advance(c, now, resume=True)
        return [None if c is None else c.transition() for c in carried]

    async def _run(self, blocks: list[tuple[ExecState, RunnableBlock]]) -> list[Transition]:
        """Run one round's inert blocks (one per carried transition): all at once, in order."""
        if self.run_blocks is not None:
            return await self.run_blocks(blocks)
        run_block = self.run_block
        assert run_block is not None  # carry checked that one of the two is given
        if len(blocks) == 1:  # the usual case: no task, no trip round the event loop
            return [await run_block(*blocks[0])]
        return list(await asyncio.gather(*(run_block(state, block) for state, block in blocks)))

    def settle(self, t: Transition, now: int) -> Transition:
        """``t`` with every next block that needs no I/O (a return, or a guardrail that ends
        the tool) decided inside it. Pure: ``t`` is not changed."""
        carried = _Carried(t)
        self._advance(carried, now, resume=False)
        return carried.transition()

    def _advance(self, c: _Carried, now: int, *, resume: bool) -> None:
        """Decide in ``c``, in one pass, every step that needs no I/O: a run step whose next
        block is a ``return`` or a guardrail that ends the tool, and (with ``resume``) a
        child's ``resume`` step whose waiting parent ``c`` itself wrote. Notes in
        ``c.inert`` the first run step whose next block is inert, for the next round.

        A fused step is replaced by the steps its transition made, at the end of the list,
        so the pass goes on from the index it fused at instead of starting over, and a step
        planned once stays planned (``_plan``)."""
        fused = 0
        limit = self.machine.limits.max_hops + self.machine.limits.max_depth + 2
        steps = c.steps
        c.inert = None
        i = 0
        while i < len(steps) and fused < limit:
            step = steps[i]
            if step.kind == "resume":
                parent = c.writes.get(step.exec_id) if resume else None
                if parent is not None and self._resume_inline(c, i, step, parent, now):
                    steps = c.steps  # the first fuse gives ``c`` lists of its own
                    fused += 1
                else:
                    i += 1
                continue
            planned = self._plan(c, step, now)
            if isinstance(planned, Transition):
                c.fuse(i, planned)
                steps = c.steps
                fused += 1
                continue
            if planned is not None and c.inert is None and planned.type in INERT_BLOCKS:
                c.inert = (step, c.writes[step.exec_id], planned)
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

    async def _resume_loaded(self, partition: int, live: list[_Carried]) -> None:
        """A finished child's ``resume`` step whose parent ``c`` did not write: the parents
        are loaded, one call for all, and continued in the same commit, up the tree while
        it can."""
        for _ in range(self.machine.limits.max_depth + 1):
            wanted = [(c, i, step) for c in live for i, step in enumerate(c.steps)
                      if step.kind == "resume"]
            if not wanted:
                return
            parents = await self._parents(
                partition, [(step.exec_id, c.writes.get(step.exec_id)) for c, _, step in wanted])
            now = self.clock()
            progressed = set()
            for (c, i, step), parent in zip(wanted, parents, strict=True):
                if parent is not None and id(c) not in progressed \
                        and self._resume_inline(c, i, step, parent, now):
                    progressed.add(id(c))  # its indexes moved: its other steps wait a turn
                    self._advance(c, now, resume=True)
            if not progressed:
                return

    async def _parents(self, partition: int,
                       wanted: list[tuple[str, ExecState | None]]) -> list[ExecState | None]:
        parents = [known for _, known in wanted]
        if None not in parents:
            return parents  # nothing to read: no call to ``load_states`` to await
        return await self.load_states(partition, wanted)

    def _resume_inline(self, c: _Carried, index: int, step: StepMsg, parent: ExecState,
                       now: int) -> bool:
        """Replace ``c``'s ``resume`` step ``index`` by the parent's own transition, guarded by
        the parent's version; False when the parent does not wait for it or cannot go on."""
        if (step.child is None or parent.execId != step.exec_id
                or parent.version != step.version or parent.status != "waiting"):
            return False
        definition = self.definitions(parent.defHash)
        if definition is None:
            return False
        try:
            resumed = self.machine.after_child(parent, definition, step.child, now)
        except Exception as exc:  # leave the resume step to run on its own
            log.error("inline resume failed", exec_id=parent.execId, exc_info=exc)
            return False
        c.fuse(index, resumed)  # only once the machine decided: a raise leaves ``c`` as is
        return True


def _index(steps: list[StepMsg], step: StepMsg) -> int:
    """Where ``step`` itself is in ``steps`` (steps are compared by identity: two may be equal)."""
    for i, s in enumerate(steps):
        if s is step:
            return i
    raise ValueError("step not in its transition")  # never: only ``_advance`` moves steps


class _Carried:
    """A transition being carried on, built in place.

    Until its first fuse it reads the given transition's lists; the first fuse copies them
    once, and every fuse after appends to them (a fuse used to rebuild every list). The
    states it writes are a dict by execution, so the state a step advances is one lookup.
    ``planned`` remembers the block planned for each run step (see ``RunAhead._plan``)."""

    __slots__ = ("also_expect", "definitions", "done", "emits", "expect", "finishes_root",
                 "given", "inert", "log", "owned", "planned", "steps", "writes")

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
        # The first run step whose next block is inert, its state and the block: the next
        # round runs it (``RunAhead._advance`` notes it).
        self.inert: tuple[StepMsg, ExecState, RunnableBlock] | None = None

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
