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


# Definitions ``RunAhead`` remembers at most (see ``RunAhead._known``).
_KNOWN_MAX = 256


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
        # Definitions by digest, as ``definitions`` gave them: a digest names one text, so
        # what it gave once stays right, and a carry asks for the same few several times
        # per tree (each plan, each resume). Bounded: cleared when full.
        self._known: dict[str, ToolDefinition] = {}
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
        if len(transitions) == 1:
            only = transitions[0]
            return [None if only is None else await self._carry_one(partition, only)]
        now = self.clock()
        carried: list[_Carried | None] = []
        live: list[_Carried] = []
        for t in transitions:
            if t is None:
                carried.append(None)
                continue
            c = _Carried(t)
            self._advance(c, now, True)
            carried.append(c)
            live.append(c)
        limits = self.machine.limits
        until = self.clock() + self.budget_ms
        for _ in range(limits.max_hops * (limits.max_depth + 1) + 1):
            if self.load_states is not _known_only:
                for c in live:
                    if c.waiting:
                        # Only a parent this transition did not write can still be resumed
                        # (``_advance`` resumed those it wrote): they are read, one call for all.
                        await self._resume_loaded(partition, live)
                        break
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
                steps = c.t.steps
                # The step is most often the only one, so the last: no search for it then.
                c.fuse(len(steps) - 1 if steps[-1] is step else _index(steps, step), outcome)
                self._advance(c, now, True)
        return [None if c is None else c.transition() for c in carried]

    async def _carry_one(self, partition: int, t: Transition) -> Transition:
        """``carry`` of a batch of one (every command at intake, most step batches): the
        same rounds, with no list of work or of blocks per round."""
        c = _Carried(t)
        self._advance(c, self.clock(), True)
        limits = self.machine.limits
        until = self.clock() + self.budget_ms
        loads = self.load_states is not _known_only
        run_block, run_blocks = self.run_block, self.run_blocks
        for _ in range(limits.max_hops * (limits.max_depth + 1) + 1):
            if loads and c.waiting:
                await self._resume_loaded(partition, [c])
            now = self.clock()
            if now >= until or (run_block is None and run_blocks is None):
                break
            inert = c.inert
            if inert is None or now > inert[1].deadlineMs:
                break  # nothing inert to run, or the tree's deadline passed since it was planned
            step, state, block = inert
            if run_blocks is not None:
                (done,) = await run_blocks([(state, block)])
            else:
                assert run_block is not None  # one of the two is given (checked above)
                done = await run_block(state, block)
            now = self.clock()
            steps = c.t.steps
            c.fuse(len(steps) - 1 if steps[-1] is step else _index(steps, step), done)
            self._advance(c, now, True)
        return c.transition()

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
        self._advance(carried, now, False)
        return carried.transition()

    def _advance(self, c: _Carried, now: int, resume: bool) -> None:
        """Decide in ``c``, in one pass, every step that needs no I/O: a run step whose next
        block is a ``return`` or a guardrail that ends the tool, and (with ``resume``) a
        child's ``resume`` step whose waiting parent ``c`` itself wrote. Notes in
        ``c.inert`` the first run step whose next block is inert, for the next round.

        A decided step is replaced by the steps its decision made, at the end of the list,
        so the pass goes on from the index it decided instead of starting over. A decision
        on a state ``c`` wrote is built into ``c``'s own transition once it has one (no
        transition of its own, no fuse): the version check it would carry is implied by
        that write."""
        decided = 0
        limit = self.machine.limits.max_hops + self.machine.limits.max_depth + 2
        latest = c.latest
        known = self._known
        plan = self.machine.plan
        c.inert = None
        c.waiting = False
        i = 0
        while decided < limit:
            steps = c.t.steps  # another list once ``c`` owns a transition
            if i >= len(steps):
                return
            step = steps[i]
            state = latest.get(step.exec_id)
            if state is None:
                c.waiting = c.waiting or step.kind == "resume"  # a parent to read
                i += 1
            elif step.kind == "resume":
                if resume and self._resume_inline(c, i, step, state, now):
                    decided += 1
                else:
                    c.waiting = True
                    i += 1
            elif state.version != step.version or state.status != "running":
                i += 1  # not a step this transition's states can advance
            else:
                # Planning reads only the state, the definition and ``now``: a step planned
                # again in a later pass (its block not run yet) gets the same answer.
                definition = known.get(state.defHash) or self._definition(state.defHash)
                if definition is None:
                    i += 1  # its definition is unknown here: the step stays
                    continue
                t = c.t
                if c.owned:
                    written = len(t.writes)
                    planned = plan(state, definition, now, into=t)
                    if planned is t:
                        c.built(i, written)
                        decided += 1
                        continue
                else:
                    planned = plan(state, definition, now)
                if isinstance(planned, Transition):
                    c.fuse(i, planned)  # built apart: nothing was added to ``t``
                    decided += 1
                else:
                    if c.inert is None and planned.type in INERT_BLOCKS:
                        c.inert = (step, state, planned)
                    i += 1

    def _definition(self, digest: str) -> ToolDefinition | None:
        definition = self.definitions(digest)
        if definition is not None:  # one not known yet is not remembered: it may come later
            if len(self._known) >= _KNOWN_MAX:
                self._known.clear()
            self._known[digest] = definition
        return definition

    async def _resume_loaded(self, partition: int, live: list[_Carried]) -> None:
        """A finished child's ``resume`` step whose parent ``c`` did not write: the parents
        are loaded, one call for all, and continued in the same commit, up the tree while
        it can."""
        for _ in range(self.machine.limits.max_depth + 1):
            wanted = [(c, i, step) for c in live for i, step in enumerate(c.t.steps)
                      if step.kind == "resume"]
            if not wanted:
                return
            parents = await self._parents(
                partition, [(step.exec_id, c.latest.get(step.exec_id)) for c, _, step in wanted])
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
        definition = self._known.get(parent.defHash) or self._definition(parent.defHash)
        if definition is None:
            return False
        # A parent ``c`` wrote has its version check implied by that write: its decision is
        # built into ``c``; a parent read from the store keeps its check (``_Carried.fuse``).
        into = c.t if c.owned and c.latest.get(parent.execId) is parent else None
        mark = c.mark()
        try:
            resumed = self.machine.after_child(parent, definition, step.child, now, into=into)
        except Exception as exc:  # leave the resume step to run on its own
            c.rollback(mark)  # what the machine had added to ``c`` before it raised
            log.error("inline resume failed", exec_id=parent.execId, exc_info=exc)
            return False
        if resumed is into:
            c.built(index, mark[0])
        else:  # built apart, or a fatal failure's own transition: it replaces what was built
            c.rollback(mark)
            c.fuse(index, resumed)
        return True


def _index(steps: list[StepMsg], step: StepMsg) -> int:
    """Where ``step`` itself is in ``steps`` (steps are compared by identity: two may be equal)."""
    for i, s in enumerate(steps):
        if s is step:
            return i
    raise ValueError("step not in its transition")  # never: only ``_advance`` moves steps


class _Carried:
    """A transition being carried on, built in place.

    Until the first decision fused into it, ``t`` is the given transition itself; then ``t``
    is a transition of its own (the given one's lists copied once) and every decision after
    is added to it: the machine builds a decision on a state ``t`` wrote straight into
    ``t`` (``into``), and a decision built apart (a block's outcome, a parent read from the
    store) has its lists appended (``fuse``). Nothing is rebuilt per decision.

    ``t.writes`` may hold several versions of one execution while it is built;
    ``latest`` has the last of each, so the state a step advances is one lookup, and
    ``transition`` keeps only those, each where its last write is, as fuses always
    ordered them."""

    __slots__ = ("given", "inert", "latest", "owned", "t", "waiting")

    def __init__(self, t: Transition) -> None:
        self.given = t
        self.t = t
        self.owned = False
        self.latest: dict[str, ExecState] = {state.execId: state for state in t.writes}
        # The first run step whose next block is inert, its state and the block: the next
        # round runs it (``RunAhead._advance`` notes it).
        self.inert: tuple[StepMsg, ExecState, RunnableBlock] | None = None
        # A ``resume`` step is left whose parent ``_advance`` could not resume inline.
        self.waiting = False

    def mark(self) -> tuple[int, int, int, int, int, bool]:
        """Where ``t`` ends now: what ``built`` (its writes) and ``rollback`` need."""
        t = self.t
        return (len(t.writes), len(t.steps), len(t.emits), len(t.log), len(t.done),
                t.finishes_root)

    def rollback(self, mark: tuple[int, int, int, int, int, bool]) -> None:
        """Drop what a decision built into ``t`` after ``mark`` (the machine raised, or gave a
        transition of its own). Decisions built into ``t`` add no definition."""
        if not self.owned:
            return
        t = self.t
        writes, steps, emits, log_, done, finishes_root = mark
        del t.writes[writes:], t.steps[steps:], t.emits[emits:], t.log[log_:], t.done[done:]
        t.finishes_root = finishes_root

    def built(self, index: int, written: int) -> None:
        """Step ``index`` was decided into ``t``, whose writes before were ``written``."""
        t = self.t
        latest = self.latest
        for state in t.writes[written:]:
            latest[state.execId] = state
        del t.steps[index]  # its own steps were added at the end, as a fuse adds them

    def _own(self) -> Transition:
        if not self.owned:
            self.owned = True
            g = self.given
            self.t = Transition(g.expect, list(g.also_expect), list(g.writes), list(g.steps),
                                list(g.emits), list(g.log), dict(g.definitions),
                                g.finishes_root, list(g.done), list(g.delayed))
        return self.t

    def fuse(self, index: int, second: Transition) -> None:
        """Replace step ``index`` by what ``second``, a transition built apart, decided."""
        t = self.t if self.owned else self._own()
        latest = self.latest
        # A check on an execution this transition already writes is implied by the write
        # (the usual case, so that test comes first). No tuple of all the checks is built per
        # fuse: ``also_expect`` is nearly always empty.
        expected = second.expect
        if expected is not None and expected[0] not in latest and expected != t.expect:
            t.also_expect.append(expected)
        if second.also_expect:
            for expected in second.also_expect:
                if expected[0] not in latest and expected != t.expect:
                    t.also_expect.append(expected)
        for state in second.writes:
            latest[state.execId] = state
        t.writes.extend(second.writes)
        steps = t.steps
        del steps[index]
        steps.extend(second.steps)
        if second.emits:
            t.emits.extend(second.emits)
        t.log.extend(second.log)
        if second.definitions:
            t.definitions.update(second.definitions)
        if second.finishes_root:
            t.finishes_root = True
        if second.done:
            t.done.extend(second.done)
        if second.delayed:
            t.delayed.extend(second.delayed)

    def transition(self) -> Transition:
        """The transition as built: the given one itself when nothing was decided in it."""
        if not self.owned:
            return self.given
        t = self.t
        if len(self.latest) != len(t.writes):  # an execution written more than once
            t.writes = [s for s in t.writes if self.latest[s.execId] is s]
        return t
